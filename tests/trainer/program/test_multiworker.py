"""Multi-worker tests: real worker processes on loopback ports (trainer.program.launch_local), cleaned up."""

import os
import re
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest
import tensorflow as tf

from tests import helpers
from trainer.program import launch_local

REPO = helpers.REPO


def launcher(*trainer_flags):
  return [sys.executable, "-m", "trainer.program.launch_local", "--workers=2", "--", *trainer_flags]


def run_cluster(*trainer_flags, timeout=600):
  return subprocess.run(launcher(*trainer_flags), cwd=REPO, capture_output=True, text=True,
                        timeout=timeout, env=helpers.env())


@pytest.mark.slow
class MultiWorkerTest(tf.test.TestCase):

  @pytest.mark.end_to_end
  def test_two_workers_equal_one_process_with_two_replicas(self):
    out = tempfile.mkdtemp()
    code = launch_local.launch(2, [f"{out}/workers"], module="tests.trainer.program.multiworker_job",
                               env=helpers.env())
    self.assertEqual(code, 0)
    single = subprocess.run([sys.executable, "-m", "tests.trainer.program.multiworker_job",
                             f"{out}/single", "--mirrored"], cwd=REPO, capture_output=True,
                            text=True, timeout=300)
    self.assertEqual(single.returncode, 0, single.stderr[-2000:])
    worker0, worker1, mirrored = (np.load(f"{out}/{name}.npz") for name in
                                  ("workers-0", "workers-1", "single-0"))
    for key in mirrored:
      self.assertAllEqual(worker0[key], worker1[key])
      self.assertAllClose(worker0[key], mirrored[key], rtol=1e-5, atol=1e-7)

  @pytest.mark.end_to_end
  def test_only_the_chief_writes_and_sigterm_on_one_worker_stops_all_consistently(self):
    root = tempfile.mkdtemp()
    flags = helpers.TINY + ["--cpu_replicas=1", f"--synthetic_dir={root}/synthetic",
                              f"--model_dir={root}/run",
                              "--checkpoint_every=100000", "--eval_every=0", "--eval_split="]
    process = subprocess.Popen(launcher(*flags, "--train_steps=100000"), cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env=helpers.env())
    output = []
    try:
      deadline, started = time.time() + 300, set()
      for line in process.stdout:
        output.append(line)
        match = re.match(r"\[worker (\d)\] .*\] train: \d+/\d+ steps", line)
        if match:
          started.add(match.group(1))
        if len(started) == 2 or time.time() > deadline:
          break
      os.kill(helpers.worker_processes(process.pid)[1], signal.SIGTERM)  # worker 1 only
      rest, _ = process.communicate(timeout=180)
      output.append(rest)
    finally:
      process.kill()
    text = "".join(output)
    self.assertEqual(process.returncode, 0, text[-3000:])
    self.assertIn("[worker 1] trainer.main: SIGTERM", text)
    self.assertIn("[worker 0] trainer.main: stopped with the other workers", text)
    checkpoints = os.path.join(root, "run", "checkpoints")
    step = int(tf.train.latest_checkpoint(checkpoints).rsplit("-", 1)[1])
    self.assertGreater(step, 0)
    self.assertEqual(sorted(os.listdir(os.path.join(root, "run"))),
                     ["checkpoints", "config.json", "run_config.json", "train"])  # the chief's

    resumed = run_cluster(*flags, f"--train_steps={step + 5}")
    self.assertEqual(resumed.returncode, 0, resumed.stdout[-3000:])
    for worker in (0, 1):
      self.assertIn(f"[worker {worker}] trainer.main: completed", resumed.stdout)
      self.assertRegex(resumed.stdout,
                       rf"\[worker {worker}\] .*train: {step + 5}/{step + 5} steps")
    self.assertEqual(tf.train.latest_checkpoint(checkpoints),
                     os.path.join(checkpoints, f"ckpt-{step + 5}"))


if __name__ == "__main__":
  tf.test.main()
