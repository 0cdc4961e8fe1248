"""One training run per model_dir: a lock file naming its holder's host and pid, with stale-lock recovery."""

import contextlib
import json
import os
import socket
from typing import Optional, Tuple

from absl import logging

from common import files

LOCK_FILE = "train.lock"


class LockedError(RuntimeError):
  """Another live run holds the model_dir."""


def _alive(pid: int) -> bool:
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:  # it exists, owned by someone else
    return True
  return True


def _holder(path: str) -> Tuple[Optional[dict], str]:
  """`(holder, problem)`: the lock's `{host, pid}`, or None and why it cannot be read (being
  written, or damaged: then it counts as held by an unknown run)."""
  try:
    return files.read_json(path, {"host": str, "pid": int},
                           fix="it is the model_dir's training lock; if no run trains there, "
                           "delete it."), ""
  except (OSError, files.DamagedFileError) as e:
    return None, str(e)


def _gone(holder) -> bool:
  """Whether a lock's holder was a process of this host that no longer runs."""
  return bool(holder) and holder["host"] == socket.gethostname() and not _alive(holder["pid"])


def training(model_dir: str) -> bool:
  """Whether a training run holds `model_dir`'s lock (one left by a run of this host that is
  gone does not count; cloud model_dirs have no lock)."""
  path = os.path.join(model_dir, LOCK_FILE)
  return os.path.exists(path) and not _gone(_holder(path)[0])


def acquire(model_dir: str) -> Optional[str]:
  """Creates `model_dir/train.lock` (atomically, O_EXCL) naming this host and pid.

  A lock left by a process of this host that no longer runs is taken over
  with a warning.

  Raises:
    LockedError: a live run (or a run on another host) holds it, naming it and
      what to do.
  """
  if "://" in model_dir:
    logging.warning("%s is not a local directory: no lock guards it against a second run "
                    "(an exclusive create is local only).", model_dir)
    return None
  os.makedirs(model_dir, exist_ok=True)
  path = os.path.join(model_dir, LOCK_FILE)
  me = dict(host=socket.gethostname(), pid=os.getpid())
  for _ in range(2):
    try:
      fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
      holder, problem = _holder(path)
      if _gone(holder):
        logging.warning("Taking over %s: its run (pid %s) is gone.", path, holder["pid"])
        os.remove(path)
        continue
      if holder is None:
        raise LockedError(problem) from None
      raise LockedError(f"{model_dir} is being trained by pid {holder['pid']} on "
                        f"{holder['host']} ({path}): wait for it to finish, or use another "
                        "--model_dir. If that run is gone (e.g. its machine died), delete "
                        f"{path}.") from None
    with os.fdopen(fd, "w") as f:
      json.dump(me, f)
    return path
  raise LockedError(f"Could not take the lock {path}: another run is starting there.")


def release(path: str):
  """Removes the lock if it is still this process's."""
  holder = _holder(path)[0] if path else None
  if holder and holder["pid"] == os.getpid() and holder["host"] == socket.gethostname():
    os.remove(path)


@contextlib.contextmanager
def held(model_dir: str):
  """`with held(model_dir):` trains with the lock held, released however it ends."""
  path = acquire(model_dir)
  try:
    yield path
  finally:
    release(path)
