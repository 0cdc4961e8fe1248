"""One training run per model_dir: a lock file naming its holder's host and pid, with stale-lock recovery."""

import contextlib
import json
import os
import socket
from typing import Optional

from absl import logging

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


def _holder(path: str):
  try:
    with open(path) as f:
      return json.load(f)
  except (OSError, ValueError):
    return None  # being written, or damaged: treated as held by an unknown run


def _gone(holder) -> bool:
  """Whether a lock's holder was a process of this host that no longer runs."""
  return bool(holder) and holder.get("host") == socket.gethostname() and not _alive(
      int(holder["pid"]))


def training(model_dir: str) -> bool:
  """Whether a training run holds `model_dir`'s lock (one left by a run of this host that is
  gone does not count; cloud model_dirs have no lock)."""
  path = os.path.join(model_dir, LOCK_FILE)
  return os.path.exists(path) and not _gone(_holder(path))


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
      holder = _holder(path)
      if _gone(holder):
        logging.warning("Taking over %s: its run (pid %s) is gone.", path, holder["pid"])
        os.remove(path)
        continue
      who = (f"pid {holder['pid']} on {holder['host']}" if holder else "another run")
      raise LockedError(f"{model_dir} is being trained by {who} ({path}): wait for it to "
                        "finish, or use another --model_dir. If that run is gone (e.g. its "
                        f"machine died), delete {path}.") from None
    with os.fdopen(fd, "w") as f:
      json.dump(me, f)
    return path
  raise LockedError(f"Could not take the lock {path}: another run is starting there.")


def release(path: str):
  """Removes the lock if it is still this process's."""
  holder = _holder(path) if path else None
  if holder and holder.get("pid") == os.getpid() and holder.get("host") == socket.gethostname():
    os.remove(path)


@contextlib.contextmanager
def held(model_dir: str):
  """`with held(model_dir):` trains with the lock held, released however it ends."""
  path = acquire(model_dir)
  try:
    yield path
  finally:
    release(path)
