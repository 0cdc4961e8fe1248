"""Tests for trainer.loop.recovery: what counts as diverged, and real runs that diverge, recover with fresh draws, or stop."""

import os

import numpy as np
import tensorflow as tf

from ops import stateless
from tests import helpers
from trainer import run_dir
from trainer.loop import actions
from trainer.loop import checkpoints
from trainer.loop import controller
from trainer.loop import recovery


def chunk(loss, *, after=10, streak=0):
  return actions.Chunk(before=after - 5, after=after, asked=5, ran=5, seconds=1.0,
                       metrics=dict(loss=np.float32(loss),
                                    longest_nonfinite_streak=np.float32(streak)))


class DivergenceGuardTest(tf.test.TestCase):

  def test_a_streak_of_non_finite_steps_diverged(self):
    guard = recovery.DivergenceGuard(4)
    self.assertIsNone(guard(chunk(0.5, streak=3)))
    self.assertEqual(guard(chunk(0.5, streak=4)),
                     "4 non-finite steps in a row by step 10 (max_skipped_steps=4)")

  def test_a_loss_above_the_bound_diverged(self):
    guard = recovery.DivergenceGuard(4, max_loss=-5.0)
    self.assertIsNone(guard(chunk(-6.0)))
    self.assertEqual(guard(chunk(-4.0, after=20)),
                     "loss -4 over steps 16-20 is above divergence_loss=-5")

  def test_a_rise_above_the_running_median_diverged_once_five_chunks_are_known(self):
    guard = recovery.DivergenceGuard(4, max_rise=3.0)
    self.assertIsNone(guard(chunk(-10.0)))  # a jump with no history is not judged
    for loss in (-12.0, -13.0, -11.0, -12.5):
      self.assertIsNone(guard(chunk(loss)))
    self.assertIsNone(guard(chunk(-9.1)))  # median -12: 2.9 above
    self.assertRegex(guard(chunk(-8.0)), "loss -8 over steps 6-10 is more than "
                     r"divergence_rise=3 above its running median -11\.5")

  def test_diverged_chunks_do_not_enter_the_median(self):
    guard = recovery.DivergenceGuard(4, max_rise=1.0)
    for _ in range(5):
      guard(chunk(0.0))
    for _ in range(10):  # a run stuck diverging does not drag its own median up
      self.assertIsNotNone(guard(chunk(5.0)))

  def test_a_chunk_of_only_skipped_steps_is_judged_by_its_streak_alone(self):
    guard = recovery.DivergenceGuard(4, max_loss=0.0)
    self.assertIsNone(guard(chunk(np.nan, streak=2)))


TOTAL_STEPS, PER_STEP = 40, 8


def stream(step, poisoned):
  """The tiny data from global step `step` on; the steps in `poisoned` get NaN inputs."""
  examples = helpers.data(PER_STEP * TOTAL_STEPS)
  for k in poisoned:
    examples["noisy"][k * PER_STEP:(k + 1) * PER_STEP] = np.nan
  examples = {key: value[step * PER_STEP:] for key, value in examples.items()}
  return helpers.iterator(tf.distribute.get_strategy(), examples, PER_STEP)


class RecoveryRunTest(tf.test.TestCase):
  """Real steps, checkpoints and restores; the input is poisoned at steps 12-15 (of the first
  round of draws only, or of every round)."""

  def train(self, *, every_round=False, attempts=2, checkpoint_every=10):
    model_dir = self.create_tempdir().full_path
    model, train_step = helpers.build(tf.distribute.get_strategy(), jit_compile=False)
    checkpoint = tf.train.Checkpoint(model=model, optimizer=train_step.optimizer,
                                     loss_scale=train_step.loss_scale,
                                     global_step=train_step.global_step)
    manager = checkpoints.manager(checkpoint, model_dir)
    starts, lines = [], []

    def restart_input(step):
      starts.append((step, int(train_step.reseeds.numpy())))
      fresh = starts[-1][1] > 0 and not every_round
      return stream(step, [] if fresh else range(12, 16))

    recover = recovery.Recovery(
        attempts=attempts, train_step=train_step, model_dir=model_dir, log=lines.append,
        restore=lambda: run_dir.restore_run(checkpoint, model_dir),
        restart_input=restart_input)
    loop = controller.Controller(
        train_step, restart_input(0), manager,
        helpers.loop_config(train_steps=30, max_skipped_steps=3,
                            checkpoint_every=checkpoint_every),
        summary_dir=os.path.join(model_dir, "train"), log=lambda _: None, recovery=recover)
    return loop, train_step, model, model_dir, starts, lines

  def test_a_diverged_run_goes_back_to_its_checkpoint_and_finishes_on_fresh_draws(self):
    loop, train_step, model, model_dir, starts, lines = self.train()
    self.assertEqual(loop.train(), "completed")
    self.assertEqual(starts, [(0, 0), (10, 1)])  # back to step 10, the next round of draws
    self.assertEqual(int(train_step.global_step.numpy()), 30)
    self.assertEqual(int(train_step.loss_scale.skipped_steps.numpy()), 0)  # restored with it
    self.assertTrue(all(np.isfinite(w).all() for w in helpers.weights(model)))
    restored = os.path.join(model_dir, "checkpoints", "ckpt-10")
    self.assertEqual(recovery.recoveries(model_dir), [dict(
        step=15, restored=restored,
        reason="3 non-finite steps in a row by step 15 (max_skipped_steps=3)")])
    self.assertRegex(lines[0], "Recovery 1 of 2: restored .*ckpt-10 \\(step 10\\); training "
                     "on with fresh data and augmentation draws")

  def test_a_run_that_keeps_diverging_stops_after_its_attempts_with_its_checkpoints(self):
    loop, train_step, _, model_dir, starts, _ = self.train(every_round=True)
    with self.assertRaisesRegex(recovery.Diverged, "Training diverged: 3 non-finite steps in "
                                r"a row by step 15 \(max_skipped_steps=3\), after 2 recoveries "
                                r"\(recover_attempts=2\); stopping. The checkpoints are intact"):
      loop.train()
    self.assertEqual(starts, [(0, 0), (10, 1), (10, 2)])
    self.assertLen(recovery.recoveries(model_dir), 2)
    self.assertEqual(tf.train.latest_checkpoint(os.path.join(model_dir, "checkpoints")),
                     os.path.join(model_dir, "checkpoints", "ckpt-10"))

  def test_a_resumed_run_counts_earlier_recoveries(self):
    loop, _, _, model_dir, _, _ = self.train(attempts=1)
    loop.train()  # one recovery, recorded
    again = recovery.Recovery(attempts=1, train_step=None, model_dir=model_dir,
                              restore=lambda: None, restart_input=None)
    with self.assertRaisesRegex(recovery.Diverged, "after 1 recoveries"):
      again(25, "a test")

  def test_a_divergence_before_the_first_checkpoint_stops(self):
    loop, _, _, _, _, _ = self.train(checkpoint_every=100)
    with self.assertRaisesRegex(recovery.Diverged, "by step 15 .*, before the first "
                                "checkpoint, so there is nothing to go back to"):
      loop.train()


class ReseedTest(tf.test.TestCase):
  """A new round of draws changes the step's augmentation; round 0 is the original one."""

  def test_a_new_round_draws_other_augmentations(self):

    def augment(noisy, clean, seed):
      return noisy + stateless.uniform(tf.shape(noisy), seed, dtype=tf.float32), clean

    def loss(round_):
      strategy = tf.distribute.get_strategy()
      _, train_step = helpers.build(strategy, jit_compile=False, augment=augment)
      train_step.reseed(round_)
      return float(train_step(helpers.iterator(strategy, helpers.data(), 8))["loss"])

    original, again, fresh = loss(0), loss(0), loss(1)
    self.assertEqual(original, again)
    self.assertGreater(abs(original - fresh), 1e-4)


if __name__ == "__main__":
  tf.test.main()
