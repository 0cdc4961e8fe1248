"""Starts N local trainer.main workers with TF_CONFIG on loopback ports (MultiWorkerMirroredStrategy).

Run: python -m trainer.program.launch_local --workers=2 -- --flagfile=flags/cpu.flags --model_dir=runs/mw

For trying multi-worker training on one machine and for tests. Each worker's
output lines are prefixed with "[worker i]"; SIGTERM/SIGINT are forwarded to
every worker (a preemption drill); the exit code is the first non-zero worker
exit code, or 0. The workers follow their launcher: if it dies by any signal
(SIGKILL, SIGHUP when its terminal closes), each gets SIGTERM, saves with the
others and exits (Linux: prctl's parent-death signal), so none keeps training
unseen and a rerun needs no cleanup.
"""

import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from typing import List, Sequence

WORKER_MODULE = "trainer.main"
PR_SET_PDEATHSIG = 1  # linux/prctl.h
_LIBC = ctypes.CDLL(None, use_errno=True)  # loaded here: a child must not load libraries


def _follow_parent(launcher: int):
  """In a worker before it runs (preexec_fn): SIGTERM when the launcher `launcher` dies;
  if it already did, at once. Does nothing where prctl does not exist (not Linux)."""
  if hasattr(_LIBC, "prctl"):
    _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != launcher:
      os.kill(os.getpid(), signal.SIGTERM)


def free_ports(count: int) -> List[int]:
  """`count` distinct TCP ports on 127.0.0.1 that were free a moment ago."""
  sockets = []
  try:
    for _ in range(count):
      s = socket.socket()
      s.bind(("127.0.0.1", 0))
      sockets.append(s)
    return [s.getsockname()[1] for s in sockets]
  finally:
    for s in sockets:
      s.close()


def tf_config(ports: Sequence[int], index: int) -> str:
  """TF_CONFIG for worker `index` of a loopback cluster (worker 0 is the chief)."""
  return json.dumps({"cluster": {"worker": [f"127.0.0.1:{p}" for p in ports]},
                     "task": {"type": "worker", "index": index}})


def _relay(stream, prefix: str, out):
  for line in iter(stream.readline, ""):
    out.write(f"{prefix} {line}")
    out.flush()


def launch(workers: int, trainer_args: Sequence[str], *, module: str = WORKER_MODULE,
           env=None) -> int:
  """Runs the cluster until every worker exits; returns the exit code."""
  if workers < 1:
    raise ValueError(f"--workers must be >= 1, got {workers}.")
  ports = free_ports(workers)
  processes, launcher = [], os.getpid()
  for index in range(workers):  # all started before any relay thread (preexec_fn and threads)
    worker_env = dict(env or os.environ, TF_CONFIG=tf_config(ports, index))
    command = [sys.executable, "-m", module, *trainer_args]
    if module == WORKER_MODULE:
      command.append("--strategy=multi_worker_mirrored")
    processes.append(subprocess.Popen(command, env=worker_env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True,
                                      preexec_fn=lambda: _follow_parent(launcher)))
  relays = [threading.Thread(target=_relay, args=(process.stdout, f"[worker {index}]",
                                                  sys.stdout), daemon=True)
            for index, process in enumerate(processes)]
  for relay in relays:
    relay.start()

  def forward(signum, _):
    for process in processes:
      if process.poll() is None:
        process.send_signal(signum)

  previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
  try:
    codes = [process.wait() for process in processes]
  finally:
    for s, handler in previous.items():
      signal.signal(s, handler)
    for process in processes:
      if process.poll() is None:
        process.kill()
    for relay in relays:
      relay.join(timeout=5)
  return next((code for code in codes if code), 0)


def main(argv: Sequence[str]) -> int:
  args = list(argv)
  if "--" not in args:
    sys.exit("usage: python -m trainer.program.launch_local --workers=N -- <trainer.main flags>")
  split = args.index("--")
  own, trainer_args = args[:split], args[split + 1:]
  workers = 2
  for arg in own:
    if arg.startswith("--workers="):
      workers = int(arg.split("=", 1)[1])
    else:
      sys.exit(f"trainer.program.launch_local: unknown argument {arg!r}; usage: "
               "--workers=N -- <trainer.main flags>")
  return launch(workers, trainer_args)


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
