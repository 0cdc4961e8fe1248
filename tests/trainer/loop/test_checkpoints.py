"""Tests for trainer.loop.checkpoints: the manager resumes from model_dir and saves to save_dir; failed saves on real files."""

import os
import subprocess
import sys
import textwrap

import pytest
import tensorflow as tf

from tests import helpers
from trainer import run_dir
from trainer.loop import checkpoints


class ManagerTest(tf.test.TestCase):

  def test_the_manager_restores_from_model_dir_and_saves_to_save_dir(self):
    model_dir, save_dir = self.create_tempdir().full_path, self.create_tempdir().full_path
    helpers.saved_run(os.path.join(model_dir, "checkpoints"))
    variable = tf.Variable(0.0)
    manager = checkpoints.manager(tf.train.Checkpoint(v=variable), model_dir,
                                  save_dir=save_dir)
    self.assertEqual(float(variable.numpy()), 3.0)
    self.assertEqual(manager.directory, os.path.join(save_dir, "checkpoints"))


class SaveTest(tf.test.TestCase):

  def test_an_unwritable_checkpoint_directory_is_a_clear_error(self):
    model_dir = self.create_tempdir().full_path
    with open(os.path.join(model_dir, "checkpoints"), "w") as f:
      f.write("a file where the checkpoint directory should be")
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(1.0)),
                                         os.path.join(model_dir, "checkpoints"), max_to_keep=2)
    with self.assertRaisesRegex(run_dir.CheckpointError,
                                r"Could not write checkpoint 7 in .*checkpoints \(.+\): free "
                                r"space or make it writable\.$"):
      checkpoints.save(manager, 7)

  @pytest.mark.end_to_end
  def test_a_full_disk_keeps_the_last_checkpoint_and_leaves_no_partial_files(self):
    directory = self.create_tempdir().full_path
    script = textwrap.dedent(f"""
        import resource, signal
        import tensorflow as tf
        from trainer import run_dir
        from trainer.loop import checkpoints
        variable = tf.Variable(tf.zeros([100000]))
        manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=variable), {directory!r},
                                             max_to_keep=3)
        checkpoints.save(manager, 1)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a full disk: writes fail with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (200000, 200000))
        variable.assign(tf.ones([100000]))
        try:
          checkpoints.save(manager, 2)
        except run_dir.CheckpointError as e:
          print(e)
        """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300, check=True, cwd=helpers.REPO, env=helpers.env())
    self.assertRegex(result.stdout, r"Could not write checkpoint 2 in .* \(File too large\): "
                     r"free space or make it writable; the last good one, .*ckpt-1, is intact")
    self.assertCountEqual(os.listdir(directory), [
        "checkpoint", "ckpt-1.index", "ckpt-1.data-00000-of-00001"])
    variable = tf.Variable(tf.fill([100000], -1.0))
    path = run_dir.restore_newest_intact(tf.train.Checkpoint(v=variable), directory)
    self.assertEqual((os.path.basename(path), float(tf.reduce_mean(variable))), ("ckpt-1", 0.0))


if __name__ == "__main__":
  tf.test.main()
