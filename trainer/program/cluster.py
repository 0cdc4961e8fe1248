"""Multi-worker clusters that form within a bound, name who is missing, and end in one line when a peer is lost."""

import contextlib
import dataclasses
import json
import os
import re
import shlex
import socket
import sys
import time
import traceback
from typing import Callable, List, Optional

from absl import logging
import tensorflow as tf

from common import files
from input import service

# Errors TensorFlow raises when a collective or the coordination service loses a peer.
PEER_ERRORS = (tf.errors.UnavailableError, tf.errors.DeadlineExceededError,
               tf.errors.AbortedError, tf.errors.CancelledError, tf.errors.InternalError)


class PeerLost(RuntimeError):
  """A worker of the cluster went away, the network parted, or the cluster never formed."""


@dataclasses.dataclass(frozen=True)
class Task:
  type: str
  index: int
  address: str

  def __str__(self):
    return f"{self.type} {self.index} ({self.address})"


def _parsed(tf_config: Optional[str]) -> dict:
  """`tf_config`, or the environment's TF_CONFIG, as a dict."""
  return json.loads(tf_config if tf_config is not None else os.environ.get("TF_CONFIG", "{}"))


def tasks(tf_config: Optional[str] = None) -> List[Task]:
  """Every task TF_CONFIG names, chief first."""
  cluster = _parsed(tf_config).get("cluster", {})
  return [Task(kind, index, address) for kind in sorted(cluster, key=lambda k: k != "chief")
          for index, address in enumerate(cluster[kind])]


def this_task(tf_config: Optional[str] = None) -> Optional[Task]:
  task = _parsed(tf_config).get("task", {})
  return next((t for t in tasks(tf_config) if (t.type, t.index) ==
               (task.get("type"), task.get("index"))), None)


def peers(tf_config: Optional[str] = None) -> List[Task]:
  """The tasks of TF_CONFIG other than this one."""
  me = this_task(tf_config)
  return [t for t in tasks(tf_config) if t != me]


def unreachable(candidates: List[Task], timeout_seconds: float = 2.0) -> List[str]:
  """`"task (why)"` for each of `candidates` that accepts no TCP connection now."""
  return [f"{task} ({why})" for task in candidates
          if (why := service.reachable(task.address, timeout_seconds))]


def wait_for_peers(timeout_seconds: float, *, every_seconds: float = 15.0,
                   poll_seconds: float = 0.5, log: Callable[[str], None] = logging.warning,
                   tf_config: Optional[str] = None):
  """Returns once every other task of TF_CONFIG accepts TCP connections at its address, while
  this task accepts them at its own port; raises PeerLost naming the missing ones after
  `timeout_seconds`, and logs them every `every_seconds` meanwhile.

  MultiWorkerMirroredStrategy's constructor would wait for them silently (up to
  an hour) holding the interpreter, so that no signal handler or log line runs:
  this wait happens first, in Python. Each task listens on its TF_CONFIG port
  until it has seen the others, then frees it for TensorFlow's server.
  `tf_config` defaults to the environment's TF_CONFIG.
  """
  me, others = this_task(tf_config), peers(tf_config)
  if me is None or not others:
    return
  port = int(me.address.rpartition(":")[2])
  listener = socket.socket()
  listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
  try:
    listener.bind(("", port))
  except OSError as e:
    listener.close()
    raise PeerLost(f"{me} cannot listen on port {port} ({e.strerror or e}): another program "
                   "holds it; stop it or give this task another port in TF_CONFIG.") from None
  listener.listen(64)
  listener.setblocking(False)
  start = time.monotonic()
  next_log = start + every_seconds
  try:
    while True:
      missing = unreachable(others, timeout_seconds=1.0)
      if not missing:
        return
      now = time.monotonic()
      if now - start > timeout_seconds:
        raise PeerLost(
            f"the cluster did not form within --cluster_timeout={timeout_seconds:g} s: no "
            f"answer from {', '.join(missing)}. Start every task of TF_CONFIG (the same "
            "command, each with its own task index), check their addresses and firewalls, "
            "then rerun.")
      if now >= next_log:
        log(f"Waiting for the cluster ({now - start:.0f} s of --cluster_timeout="
            f"{timeout_seconds:g}): no answer yet from {', '.join(missing)}.")
        next_log = now + every_seconds
      _drain(listener)
      time.sleep(poll_seconds)
  finally:
    _drain(listener)
    listener.close()


def _drain(listener: socket.socket):
  """Accepts and closes the peers' probe connections waiting on `listener`."""
  while True:
    try:
      connection, _ = listener.accept()
    except (BlockingIOError, InterruptedError):
      return
    connection.close()


def lost_peer_message(error: Exception, *, step: int, latest_checkpoint: Optional[str]) -> str:
  """One line for a collective that failed because a peer went away: which peer (named in
  the error, or not answering now), the step reached, the checkpoint and how to resume."""
  others = peers()
  named = {(kind, int(index)) for kind, index in re.findall(r"/job:(\w+)/replica:\d+/task:(\d+)",
                                                            str(error))}
  lost = [str(p) for p in others if (p.type, p.index) in named] or unreachable(others)
  who = ", ".join(lost) if lost else "a peer (every peer answers again now)"
  first = next((line for line in str(error).splitlines() if line.strip() and not line.startswith(
      (" ", "\t", "Graph execution error", "Detected at node"))), type(error).__name__)
  checkpoint = latest_checkpoint or "none yet (the rerun starts afresh)"
  command = shlex.join(["python", "-m", "trainer.main", *sys.argv[1:]])
  return (f"lost {who} at step {step} ({type(error).__name__}: {first[:120]}); the last "
          f"checkpoint is {checkpoint}. Resume: rerun on every worker, with its TF_CONFIG: "
          f"{command}")


@contextlib.contextmanager
def lost_peers_in_one_line(step: Callable[[], int], checkpoint_dir: str, errors_dir: str):
  """`with lost_peers_in_one_line(...):` turns a collective failed by a lost peer into
  PeerLost (`lost_peer_message`); TensorFlow's traceback goes to the debug log and to
  `errors_dir/<task>.txt`, which the line names."""
  try:
    yield
  except PEER_ERRORS as e:
    me = this_task()
    details = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    logging.debug("The collective failed:\n%s", details)
    path = files.write_text(os.path.join(errors_dir, f"{me.type}-{me.index}.txt" if me else
                                         "task.txt"), details)
    try:
      reached = step()
    except Exception:  # pylint: disable=broad-except
      reached = "?"
    line = lost_peer_message(e, step=reached,
                             latest_checkpoint=tf.train.latest_checkpoint(checkpoint_dir))
    raise PeerLost(f"{line} Details: {path}") from None
