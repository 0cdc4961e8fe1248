"""Tests for trainer.run_dir: restoring falls back past damaged checkpoints, and a checkpoint of another model is named as such."""

import os

import tensorflow as tf

from tests import helpers
from trainer import run_dir


def restore(directory, initial=-1.0):
  """`(path, restored value (its mean), warnings)`."""
  variable = tf.Variable(initial)
  warnings = []
  path = run_dir.restore_newest_intact(
      tf.train.Checkpoint(v=variable), directory,
      warn=lambda fmt, *args: warnings.append(fmt % args))
  return path, float(tf.reduce_mean(variable)), warnings


class RestoreTest(tf.test.TestCase):

  def test_a_truncated_newest_checkpoint_falls_back_to_the_one_before_with_a_warning(self):
    directory = self.create_tempdir().full_path
    helpers.saved_run(directory)
    data = os.path.join(directory, "ckpt-3.data-00000-of-00001")
    with open(data, "r+b") as f:
      f.truncate(os.path.getsize(data) // 2)
    path, value, warnings = restore(directory)
    self.assertEqual((os.path.basename(path), value), ("ckpt-2", 2.0))
    self.assertIn("ckpt-3 cannot be restored", warnings[0])
    self.assertIn("Restored", warnings[-1])

  def test_a_newest_checkpoint_missing_its_index_falls_back(self):
    directory = self.create_tempdir().full_path
    helpers.saved_run(directory)
    os.remove(os.path.join(directory, "ckpt-3.index"))
    self.assertEqual(restore(directory)[:2], (os.path.join(directory, "ckpt-2"), 2.0))

  def test_an_intact_newest_checkpoint_is_restored_silently(self):
    directory = self.create_tempdir().full_path
    helpers.saved_run(directory)
    self.assertEqual(restore(directory), (os.path.join(directory, "ckpt-3"), 3.0, []))

  def test_no_checkpoints_is_none_and_all_damaged_is_an_error(self):
    self.assertEqual(restore(self.create_tempdir().full_path)[0], None)
    directory = self.create_tempdir().full_path
    helpers.saved_run(directory, values=(1.0, 2.0))
    for name in ("ckpt-1.index", "ckpt-2.index"):
      os.remove(os.path.join(directory, name))
    with self.assertRaisesRegex(run_dir.CheckpointError, r"No checkpoint in .* can be "
                                r"restored \(ckpt-2: .*; ckpt-1: .*\)\. Move the damaged"):
      restore(directory)

  def test_checkpoints_of_another_model_shape_are_named_as_such_not_as_damaged(self):
    directory = self.create_tempdir().full_path
    helpers.saved_run(directory)
    before = sorted(os.listdir(directory))
    warnings = []
    with self.assertRaisesRegex(run_dir.CheckpointError, r"hold a model whose variables "
                                r"do not match this one \(ckpt-3: .*incompatible tensor with "
                                r"shape.*\); they are not damaged. Use the model flags it was "
                                "trained with"):
      run_dir.restore_newest_intact(tf.train.Checkpoint(v=tf.Variable([0.0, 0.0])),
                                        directory, warn=warnings.append)
    self.assertEqual(warnings, [])  # no fallback past intact checkpoints
    self.assertEqual(sorted(os.listdir(directory)), before)


if __name__ == "__main__":
  tf.test.main()
