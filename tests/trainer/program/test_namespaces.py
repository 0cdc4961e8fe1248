"""Beyond one host, with faults: workers and the tf.data service in separate network namespaces (tests/namespaces.py)."""

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import pytest
import tensorflow as tf

from tests import helpers
from tests import namespaces

REPO = helpers.REPO
STEPS = 400  # long enough (~15 s at ~25 steps/s) to kill a worker in the middle
FLAGS = [f for f in helpers.TINY if not f.startswith(("--cpu_replicas", "--checkpoint_every",
                                                       "--eval_every"))] + [
    "--cpu_replicas=1", "--checkpoint_every=50", "--eval_every=0", "--eval_split=",
    "--log_every=5", "--cluster_timeout=120"]
UNAVAILABLE = namespaces.unavailable()


class Process:
  """A child process whose output (stdout and stderr) is collected line by line."""

  def __init__(self, command, env):
    self.popen = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
    self.lines = []
    self._reader = threading.Thread(target=lambda: self.lines.extend(self.popen.stdout),
                                    daemon=True)
    self._reader.start()

  def wait_for(self, pattern, timeout=240):
    """The first output line matching `pattern`; fails after `timeout` s or at exit."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
      found = next((l for l in list(self.lines) if re.search(pattern, l)), None)
      if found:
        return found
      if self.popen.poll() is not None and not self._reader.is_alive():
        break
      time.sleep(0.2)
    raise AssertionError(f"no line matching {pattern!r}; output:\n{self.text()[-3000:]}")

  def finish(self, timeout=240):
    code = self.popen.wait(timeout=timeout)
    self._reader.join(10)
    return code

  def text(self):
    return "".join(self.lines)

  def kill(self):
    if self.popen.poll() is None:
      self.popen.kill()
      self.popen.wait()


def final_weights(model_dir):
  """Every float tensor of the newest checkpoint, by name."""
  reader = tf.train.load_checkpoint(os.path.join(model_dir, "checkpoints"))
  return {name: reader.get_tensor(name) for name, dtype in
          reader.get_variable_to_dtype_map().items()
          if dtype.is_floating and "save_counter" not in name}


@pytest.mark.slow
@pytest.mark.end_to_end
@pytest.mark.skipif(UNAVAILABLE is not None, reason=f"no network namespaces: {UNAVAILABLE}")
class NamespacesTest(tf.test.TestCase):
  """Three hosts: workers 0 and 1 (MultiWorkerMirroredStrategy), and a data-service host."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.network = namespaces.Network(3).up()
    cls.root = tempfile.mkdtemp()
    cls.processes = []
    cls.reference = cls.train_uninterrupted()

  @classmethod
  def tearDownClass(cls):
    for process in cls.processes:
      process.kill()
    cls.network.down()
    super().tearDownClass()

  @classmethod
  def start(cls, host, module, *args, env=None):
    process = Process(cls.network.command(host, [sys.executable, "-m", module, *args]),
                      env or helpers.env())
    cls.processes.append(process)
    return process

  @classmethod
  def start_workers(cls, model_dir, steps=STEPS):
    workers = [f"{cls.network.address(h)}:2222" for h in (0, 1)]
    out = []
    for index in (0, 1):
      env = helpers.env(TF_CONFIG=json.dumps({"cluster": {"worker": workers},
                                               "task": {"type": "worker", "index": index}}))
      env.pop("TF_CPP_MIN_LOG_LEVEL")  # as a user's worker: the command's own default
      out.append(cls.start(index, "trainer.main", *FLAGS, f"--synthetic_dir={cls.root}/syn",
                           f"--model_dir={model_dir}", f"--train_steps={steps}",
                           "--strategy=multi_worker_mirrored", env=env))
    return out

  @classmethod
  def train_uninterrupted(cls):
    model_dir = f"{cls.root}/reference"
    for worker in cls.start_workers(model_dir):
      assert worker.finish() == 0, worker.text()[-3000:]
    return final_weights(model_dir)

  def assertResumesBitIdentically(self, model_dir):
    for worker in self.start_workers(model_dir):
      self.assertEqual(worker.finish(), 0, worker.text()[-3000:])
      self.assertIn(f"train: {STEPS}/{STEPS} steps", worker.text())
    resumed = final_weights(model_dir)
    self.assertEqual(sorted(resumed), sorted(self.reference))
    for name, value in self.reference.items():
      np.testing.assert_array_equal(resumed[name], value, err_msg=name)

  def test_a_worker_stopped_by_sigterm_stops_both_and_the_resume_is_bit_identical(self):
    model_dir = f"{self.root}/sigterm"
    workers = self.start_workers(model_dir)
    workers[1].wait_for(r"train: 1\d\d/")
    workers[1].popen.send_signal(signal.SIGTERM)
    for worker in workers:
      self.assertEqual(worker.finish(), 0, worker.text()[-3000:])
    self.assertIn("trainer.main: stopped with the other workers", workers[0].text())
    self.assertResumesBitIdentically(model_dir)

  def test_a_lost_worker_is_one_line_on_the_survivor_and_the_resume_is_bit_identical(self):
    model_dir = f"{self.root}/sigkill"
    workers = self.start_workers(model_dir)
    workers[1].wait_for(r"train: 1\d\d/")
    workers[1].popen.kill()
    self.assertEqual(workers[0].finish(timeout=120), 1)
    text = workers[0].text()
    self.assertNotIn("Traceback", text)
    self.assertRegex(text.strip().splitlines()[-1], (
        rf"^trainer\.main: lost worker 1 \({self.network.address(1)}:2222\).* at step \d+ "
        rf"\(\w+Error: .*\); the last checkpoint is {model_dir}/checkpoints/ckpt-\d+\. "
        r"Resume: rerun on every worker, with its TF_CONFIG: python -m trainer\.main .*"
        rf"Details: {model_dir}/errors/worker-0\.txt$"))
    self.assertResumesBitIdentically(model_dir)

  def test_a_killed_launcher_leaves_no_worker_and_the_rerun_needs_no_cleanup(self):
    model_dir = f"{self.root}/launcher"
    launcher = Process([sys.executable, "-m", "trainer.program.launch_local", "--workers=2",
                        "--", *FLAGS, f"--synthetic_dir={self.root}/syn",
                        f"--model_dir={model_dir}", f"--train_steps={STEPS}"], helpers.env())
    self.processes.append(launcher)
    launcher.wait_for(r"\[worker 1\] .*train: 1\d\d/")
    workers = list(helpers.worker_processes(launcher.popen.pid).values())
    self.assertLen(workers, 2)
    launcher.popen.kill()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(alive(pid) for pid in workers):
      time.sleep(0.5)
    self.assertFalse([pid for pid in workers if alive(pid)], "workers outlived the launcher")
    rerun = subprocess.run([sys.executable, "-m", "trainer.program.launch_local", "--workers=2",
                            "--", *FLAGS, f"--synthetic_dir={self.root}/syn",
                            f"--model_dir={model_dir}", f"--train_steps={STEPS}"],
                           cwd=REPO, env=helpers.env(), capture_output=True, text=True,
                           timeout=300)
    self.assertEqual(rerun.returncode, 0, rerun.stdout[-3000:])
    self.assertRegex(rerun.stdout, r"\[worker 0\] .*Restored .*ckpt-\d+")
    resumed = final_weights(model_dir)
    for name, value in self.reference.items():  # loopback computes what namespaces do
      np.testing.assert_array_equal(resumed[name], value, err_msg=name)

  def test_the_data_service_serves_another_host_and_a_lost_data_worker_is_a_message(self):
    data_host = self.network.address(2)
    dispatcher = self.start(2, "input.service", "dispatcher", "--port=5050")
    dispatcher.wait_for("ready")
    trainer_flags = [*FLAGS, "--cpu_replicas=2", f"--synthetic_dir={self.root}/syn",
                     f"--data_service=grpc://{data_host}:5050", "--data_service_timeout=10"]
    # A worker registered as "localhost" serves no other host, and the trainer says so.
    local = self.start(2, "input.service", "worker", f"--dispatcher={data_host}:5050",
                       "--port=5051", "--worker_address=localhost")
    local.wait_for("ready")
    refused = subprocess.run(self.network.command(0, [
        sys.executable, "-m", "trainer.main", *trainer_flags, f"--model_dir={self.root}/ds0",
        "--train_steps=10"]), cwd=REPO, env=helpers.env(), capture_output=True, text=True,
                             timeout=300)
    self.assertNotEqual(refused.returncode, 0)
    self.assertRegex(refused.stderr.strip().splitlines()[-1],
                     r"1 worker\(s\) registered, but 1 cannot be reached from this host: "
                     r"localhost:5051 \(Connection refused\)")
    local.kill()

    worker = self.start(2, "input.service", "worker", f"--dispatcher={data_host}:5050",
                        "--port=5052")  # registers the address it reaches the dispatcher by
    self.assertIn(f"as {data_host}:5052", worker.wait_for("registered with"))
    trainer = self.start(0, "trainer.main", *trainer_flags, f"--model_dir={self.root}/ds",
                         "--train_steps=100000", "--input_stall_seconds=5")
    trainer.wait_for(r"train: \d\d+/")
    worker.kill()
    trainer.wait_for(r"No training step has finished for \d+ s \(at step \d+\): waiting for "
                     rf"the tf\.data service at grpc://{data_host}:5050\?", timeout=120)
    trainer.popen.send_signal(signal.SIGTERM)
    start = time.monotonic()
    self.assertEqual(trainer.finish(timeout=60), 0, trainer.text()[-3000:])
    self.assertLess(time.monotonic() - start, 20)
    step = int(re.findall(r"\(at step (\d+)\): waiting", trainer.text())[-1])
    self.assertIn("trainer.main: SIGTERM while waiting", trainer.text())
    self.assertEqual(tf.train.latest_checkpoint(f"{self.root}/ds/checkpoints"),
                     f"{self.root}/ds/checkpoints/ckpt-{step}")


def alive(pid):
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  with open(f"/proc/{pid}/stat") as f:  # a zombie waits for its reaper: it runs no more
    return f.read().rsplit(")", 1)[1].split()[0] != "Z"


if __name__ == "__main__":
  tf.test.main()
