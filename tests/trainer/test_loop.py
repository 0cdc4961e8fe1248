"""Tests for trainer.loop with a scripted stand-in for the step: skip counting, end of data."""

import types

import tensorflow as tf

from trainer import loop


class ScriptedStep:
  """Reports, chunk by chunk, how many of its steps were skipped (with a finite loss)."""

  def __init__(self, skips_per_chunk, *, skipped_at_start=0, batches=10**9):
    self.global_step = tf.Variable(0, dtype=tf.int64)
    self.loss_scale = types.SimpleNamespace(
        skipped_steps=tf.Variable(skipped_at_start, dtype=tf.int64))
    self._skips = list(skips_per_chunk)
    self._batches = batches

  def __call__(self, iterator, num_steps):
    del iterator
    ran = min(num_steps, self._batches)
    self._batches -= ran
    self.global_step.assign_add(ran)
    self.loss_scale.skipped_steps.assign_add(self._skips.pop(0))
    return dict(global_step=self.global_step, skipped_steps=self.loss_scale.skipped_steps,
                steps=tf.constant(float(ran)),
                loss=tf.constant(0.5), grad_norm=tf.constant(1.0),
                learning_rate=tf.constant(1e-3), loss_scale=tf.constant(1.0),
                replica_loss_sum=tf.constant([2.5]), replica_examples=tf.constant([5.0]),
                replica_grad_norm=tf.constant([1.0]), replica_nonfinite=tf.constant([0.0]))


class Manager:
  latest_checkpoint = "ckpt-0"

  def __init__(self):
    self.saved = []

  def save(self, checkpoint_number):
    self.saved.append(checkpoint_number)


def config(train_steps=20, max_skipped_steps=4):
  return loop.LoopConfig(train_steps=train_steps, steps_per_loop=5, log_every=100,
                         checkpoint_every=100, eval_every=0,
                         max_skipped_steps=max_skipped_steps, examples_per_step=1,
                         audio_seconds_per_example=1.0)


class LoopTest(tf.test.TestCase):

  def run_loop(self, step, manager=None, log=lambda _: None, **kwargs):
    return loop.train(step, None, manager or Manager(), config(**kwargs),
                      summary_dir=self.create_tempdir().full_path, log=log)

  def test_the_end_of_the_data_stops_the_loop_and_saves_where_it_stopped(self):
    manager, lines = Manager(), []
    step = ScriptedStep([0, 0, 0, 0], batches=12)
    self.assertEqual(self.run_loop(step, manager, log=lines.append), "end of data")
    self.assertEqual((int(step.global_step.numpy()), manager.saved), (12, [12]))
    self.assertTrue(any("ran out at step 12, before --train_steps=20" in l for l in lines))

  def test_data_ending_on_a_chunk_boundary_stops_after_an_empty_call(self):
    manager = Manager()
    step = ScriptedStep([0, 0, 0, 0], batches=10)
    self.assertEqual(self.run_loop(step, manager), "end of data")
    self.assertEqual((int(step.global_step.numpy()), manager.saved), (10, [10]))

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
