"""Tests for trainer.loop.lock: one run per model_dir, stale locks taken over, released at the end."""

import json
import os
import socket
import subprocess
import sys

import pytest
import tensorflow as tf

from trainer.loop import lock


class LockTest(tf.test.TestCase):

  def test_a_held_model_dir_is_refused_naming_the_holder(self):
    model_dir = self.create_tempdir().full_path
    with lock.held(model_dir) as path:
      with open(path) as f:
        self.assertEqual(json.load(f), dict(host=socket.gethostname(), pid=os.getpid()))
      with self.assertRaisesRegex(lock.LockedError, rf"{model_dir} is being trained by pid "
                                  rf"{os.getpid()} on .*: wait for it to finish, or use "
                                  r"another --model_dir. If that run is gone .* delete"):
        lock.acquire(model_dir)
    self.assertFalse(os.path.exists(path))  # released
    lock.release(lock.acquire(model_dir))

  @pytest.mark.end_to_end
  def test_a_lock_whose_process_is_gone_is_taken_over(self):
    model_dir = self.create_tempdir().full_path
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    with open(os.path.join(model_dir, lock.LOCK_FILE), "w") as f:
      json.dump(dict(host=socket.gethostname(), pid=gone.pid), f)
    path = lock.acquire(model_dir)
    with open(path) as f:
      self.assertEqual(json.load(f)["pid"], os.getpid())
    lock.release(path)

  def test_a_lock_from_another_host_is_respected(self):
    model_dir = self.create_tempdir().full_path
    with open(os.path.join(model_dir, lock.LOCK_FILE), "w") as f:
      json.dump(dict(host="elsewhere", pid=1), f)
    with self.assertRaisesRegex(lock.LockedError, "pid 1 on elsewhere"):
      lock.acquire(model_dir)


if __name__ == "__main__":
  tf.test.main()
