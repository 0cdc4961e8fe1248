"""Starts N local trainer.main workers with TF_CONFIG on loopback ports (MultiWorkerMirroredStrategy).

Run: python -m trainer.program.launch_local --workers=2 -- --flagfile=flags/cpu.flags --model_dir=runs/mw

For trying multi-worker training on one machine and for tests. Each worker's
output lines are prefixed with "[worker i]"; SIGTERM/SIGINT are forwarded to
every worker (a preemption drill); the exit code is the first non-zero worker
exit code, or 0.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from typing import List, Sequence

WORKER_MODULE = "trainer.main"


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
  processes, relays = [], []
  for index in range(workers):
    worker_env = dict(env or os.environ, TF_CONFIG=tf_config(ports, index))
    command = [sys.executable, "-m", module, *trainer_args]
    if module == WORKER_MODULE:
      command.append("--strategy=multi_worker_mirrored")
    process = subprocess.Popen(command, env=worker_env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    processes.append(process)
    relay = threading.Thread(target=_relay, args=(process.stdout, f"[worker {index}]",
                                                  sys.stdout), daemon=True)
    relay.start()
    relays.append(relay)

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
