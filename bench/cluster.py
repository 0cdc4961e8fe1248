"""Two MultiWorkerMirroredStrategy workers training the default model: on loopback, and as two hosts (network namespaces), taking turns.

Run (as root, for the namespaces): python -m bench.cluster [--steps=60] [--rounds=2]

Each round runs the same 2-worker job on loopback (trainer.program.launch_local)
and across two network namespaces joined by a bridge (tests/namespaces.py),
with the default model and flags (`python -m trainer.main`'s), one CPU replica
per worker, no eval and no checkpoint until the end. steps/s is the median of
the progress lines after the first (which compiles). Delay and loss on the
link need `tc netem`; where the kernel lacks it the table says so.
"""

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

from absl import app
from absl import flags

from bench import timing
from tests import namespaces

FLAGS = flags.FLAGS
flags.DEFINE_integer("steps", 60, "Training steps per run.")
flags.DEFINE_integer("rounds", 2, "Rounds of (loopback, namespaces), taking turns.")

DELAY_MS = 20
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def trainer_flags(root: str, run: str, steps: int):
  return ["--cpu_replicas=1", "--eval_every=0", "--eval_split=", "--steps_per_loop=10",
          "--log_every=10", f"--checkpoint_every={steps}", f"--train_steps={steps}",
          f"--synthetic_dir={root}/synthetic", f"--model_dir={root}/{run}"]


def steps_per_second(output: str) -> float:
  rates = [float(r) for r in re.findall(r"([\d.]+) steps/s over the last", output)]
  if len(rates) < 2:
    raise RuntimeError(f"too few progress lines to time:\n{output[-3000:]}")
  return statistics.median(rates[1:])


def loopback(root: str, run: str, steps: int) -> float:
  result = subprocess.run([sys.executable, "-m", "trainer.program.launch_local", "--workers=2",
                           "--", *trainer_flags(root, run, steps)], cwd=REPO,
                          capture_output=True, text=True, env=_env())
  if result.returncode:
    raise RuntimeError(result.stdout[-3000:])
  return steps_per_second("\n".join(l for l in result.stdout.splitlines()
                                    if l.startswith("[worker 0]")))


def across_namespaces(network: namespaces.Network, root: str, run: str, steps: int) -> float:
  workers = [f"{network.address(h)}:2222" for h in (0, 1)]
  processes = []
  for index in (0, 1):
    env = _env(TF_CONFIG=json.dumps({"cluster": {"worker": workers},
                                     "task": {"type": "worker", "index": index}}))
    processes.append(subprocess.Popen(
        network.command(index, [sys.executable, "-m", "trainer.main", "--strategy="
                                "multi_worker_mirrored", *trainer_flags(root, run, steps)]),
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
  outputs = [p.communicate()[0] for p in processes]
  if any(p.returncode for p in processes):
    raise RuntimeError(outputs[0][-3000:])
  return steps_per_second(outputs[0])


def _env(**overrides):
  return {**os.environ, "PYTHONPATH": REPO, "TF_CPP_MIN_LOG_LEVEL": "2", **overrides}


def main(_):
  unavailable = namespaces.unavailable()
  if unavailable:
    sys.exit(f"bench.cluster: {unavailable}")
  root = tempfile.mkdtemp(prefix="bench-cluster-")
  network = namespaces.Network(2).up()
  netem = namespaces.netem_unavailable()
  links = ["loopback", "two namespaces (veth + bridge)"] + (
      [] if netem else [f"two namespaces, {DELAY_MS} ms each way (tc netem)"])
  rates = {link: [] for link in links}
  try:
    loopback(root, "warm", 30)  # makes the synthetic corpus once (> the default warm-up)
    for r in range(FLAGS.rounds):
      rates[links[0]].append(loopback(root, f"loopback{r}", FLAGS.steps))
      rates[links[1]].append(across_namespaces(network, root, f"namespaces{r}", FLAGS.steps))
      if not netem:
        for host in (0, 1):
          network.delay(host, DELAY_MS)
        rates[links[2]].append(across_namespaces(network, root, f"delayed{r}", FLAGS.steps))
        for host in (0, 1):
          network.delay(host, 0)
  finally:
    network.down()
  print(f"# {timing.machine()}")
  print(f"# 2 workers x 1 CPU replica, default model and flags, {FLAGS.steps} steps, "
        f"{FLAGS.rounds} rounds taking turns")
  print("| link | steps/s per round | median |")
  print("|---|---|---|")
  for link, values in rates.items():
    print(f"| {link} | {', '.join(f'{v:.2f}' for v in values)} | "
          f"{statistics.median(values):.2f} |")
  if netem:
    print(f"| with added delay | not measured: {netem} | |")


if __name__ == "__main__":
  app.run(main)
