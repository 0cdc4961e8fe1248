"""Tests for trainer.loop with a scripted stand-in for the step: skip counting from the first chunk."""

import types

import tensorflow as tf

from trainer import loop


class ScriptedStep:
  """Reports, chunk by chunk, how many of its steps were skipped (with a finite loss)."""

  def __init__(self, skips_per_chunk, *, skipped_at_start=0):
    self.global_step = tf.Variable(0, dtype=tf.int64)
    self.loss_scale = types.SimpleNamespace(
        skipped_steps=tf.Variable(skipped_at_start, dtype=tf.int64))
    self._skips = list(skips_per_chunk)

  def __call__(self, iterator, num_steps):
    del iterator
    self.global_step.assign_add(num_steps)
    self.loss_scale.skipped_steps.assign_add(self._skips.pop(0))
    return dict(global_step=self.global_step, skipped_steps=self.loss_scale.skipped_steps,
                loss=tf.constant(0.5), grad_norm=tf.constant(1.0),
                learning_rate=tf.constant(1e-3), loss_scale=tf.constant(1.0),
                replica_loss_sum=tf.constant([2.5]), replica_examples=tf.constant([5.0]),
                replica_grad_norm=tf.constant([1.0]), replica_nonfinite=tf.constant([0.0]))


class Manager:
  latest_checkpoint = "ckpt-0"

  def save(self, checkpoint_number):
    del checkpoint_number


def config(train_steps=20, max_skipped_steps=4):
  return loop.LoopConfig(train_steps=train_steps, steps_per_loop=5, log_every=100,
                         checkpoint_every=100, eval_every=0,
                         max_skipped_steps=max_skipped_steps, examples_per_step=1,
                         audio_seconds_per_example=1.0)


class LoopTest(tf.test.TestCase):

  def run_loop(self, step, **kwargs):
    return loop.train(step, None, Manager(), config(**kwargs),
                      summary_dir=self.create_tempdir().full_path, log=lambda _: None)

  def test_skips_in_the_first_chunk_count(self):
    with self.assertRaisesRegex(loop.NonFiniteLoss, "4 non-finite steps in a row up to step 5"):
      self.run_loop(ScriptedStep([4, 0, 0, 0]))

  def test_skips_restored_from_a_checkpoint_are_not_counted_again(self):
    self.assertEqual(self.run_loop(ScriptedStep([0, 1, 0, 0], skipped_at_start=30)),
                     "completed")

  def test_fully_skipped_chunks_in_a_row_add_up(self):
    with self.assertRaisesRegex(loop.NonFiniteLoss, "10 non-finite steps in a row up to "
                                "step 15"):
      self.run_loop(ScriptedStep([0, 5, 5, 0]), max_skipped_steps=8)


if __name__ == "__main__":
  tf.test.main()
