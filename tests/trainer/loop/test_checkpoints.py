"""Tests for trainer.loop.checkpoints: falling back past damaged checkpoints, and failed saves on real files."""

import os
import subprocess
import sys
import textwrap

import pytest
import tensorflow as tf

from tests import helpers
from trainer.loop import checkpoints


def saved_run(directory, values=(1.0, 2.0, 3.0)):
  """A manager in `directory` with one checkpoint per value (steps 1, 2, 3...)."""
  variable = tf.Variable(0.0)
  checkpoint = tf.train.Checkpoint(v=variable)
  manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=5)
  for step, value in enumerate(values, 1):
    variable.assign(value)
    manager.save(checkpoint_number=step)
  return manager


def restore(directory, initial=-1.0):
  """`(path, restored value (its mean), warnings)`."""
  variable = tf.Variable(initial)
  warnings = []
  path = checkpoints.restore_newest_intact(
      tf.train.Checkpoint(v=variable), directory,
      warn=lambda fmt, *args: warnings.append(fmt % args))
  return path, float(tf.reduce_mean(variable)), warnings


class RestoreTest(tf.test.TestCase):

  def test_a_truncated_newest_checkpoint_falls_back_to_the_one_before_with_a_warning(self):
    directory = self.create_tempdir().full_path
    saved_run(directory)
    data = os.path.join(directory, "ckpt-3.data-00000-of-00001")
    with open(data, "r+b") as f:
      f.truncate(os.path.getsize(data) // 2)
    path, value, warnings = restore(directory)
    self.assertEqual((os.path.basename(path), value), ("ckpt-2", 2.0))
    self.assertIn("ckpt-3 cannot be restored", warnings[0])
    self.assertIn("Restored", warnings[-1])

  def test_a_newest_checkpoint_missing_its_index_falls_back(self):
    directory = self.create_tempdir().full_path
    saved_run(directory)
    os.remove(os.path.join(directory, "ckpt-3.index"))
    self.assertEqual(restore(directory)[:2], (os.path.join(directory, "ckpt-2"), 2.0))

  def test_an_intact_newest_checkpoint_is_restored_silently(self):
    directory = self.create_tempdir().full_path
    saved_run(directory)
    self.assertEqual(restore(directory), (os.path.join(directory, "ckpt-3"), 3.0, []))

  def test_no_checkpoints_is_none_and_all_damaged_is_an_error(self):
    self.assertEqual(restore(self.create_tempdir().full_path)[0], None)
    directory = self.create_tempdir().full_path
    saved_run(directory, values=(1.0, 2.0))
    for name in ("ckpt-1.index", "ckpt-2.index"):
      os.remove(os.path.join(directory, name))
    with self.assertRaisesRegex(checkpoints.CheckpointError, r"No checkpoint in .* can be "
                                r"restored \(ckpt-2: .*; ckpt-1: .*\)\. Move the damaged"):
      restore(directory)

  def test_checkpoints_of_another_model_shape_are_named_as_such_not_as_damaged(self):
    directory = self.create_tempdir().full_path
    saved_run(directory)
    before = sorted(os.listdir(directory))
    warnings = []
    with self.assertRaisesRegex(checkpoints.CheckpointError, r"hold a model whose variables "
                                r"do not match this one \(ckpt-3: .*incompatible tensor with "
                                r"shape.*\); they are not damaged. Use the model flags it was "
                                "trained with"):
      checkpoints.restore_newest_intact(tf.train.Checkpoint(v=tf.Variable([0.0, 0.0])),
                                        directory, warn=warnings.append)
    self.assertEqual(warnings, [])  # no fallback past intact checkpoints
    self.assertEqual(sorted(os.listdir(directory)), before)

  def test_the_manager_restores_from_model_dir_and_saves_to_save_dir(self):
    model_dir, save_dir = self.create_tempdir().full_path, self.create_tempdir().full_path
    saved_run(os.path.join(model_dir, "checkpoints"))
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
    with self.assertRaisesRegex(checkpoints.CheckpointError,
                                r"Could not write checkpoint 7 in .*checkpoints \(.+\): free "
                                r"space or make it writable\.$"):
      checkpoints.save(manager, 7)

  @pytest.mark.end_to_end
  def test_a_full_disk_keeps_the_last_checkpoint_and_leaves_no_partial_files(self):
    directory = self.create_tempdir().full_path
    script = textwrap.dedent(f"""
        import resource, signal
        import tensorflow as tf
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
        except checkpoints.CheckpointError as e:
          print(e)
        """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300, check=True, cwd=helpers.REPO, env=helpers.env())
    self.assertRegex(result.stdout, r"Could not write checkpoint 2 in .* \(File too large\): "
                     r"free space or make it writable; the last good one, .*ckpt-1, is intact")
    self.assertCountEqual(os.listdir(directory), [
        "checkpoint", "ckpt-1.index", "ckpt-1.data-00000-of-00001"])
    path, value, _ = restore(directory, initial=tf.fill([100000], -1.0))
    self.assertEqual((os.path.basename(path), value), ("ckpt-1", 0.0))


if __name__ == "__main__":
  tf.test.main()
