"""Tests for trainer.loop.sidecar: each checkpoint evaluated once, oldest first, and the three ways a sidecar ends."""

import logging
import os

import tensorflow as tf

from common import files
from trainer import run_dir
from trainer.loop import periodic_eval
from trainer.loop import sidecar


class RecordingEval:
  """Records `(step, weight)`: the step evaluated and the weight restored for it."""

  def __init__(self, weight):
    self.weight, self.seen = weight, []

  def __call__(self, step):
    self.seen.append((step, float(self.weight.numpy())))
    return {"si_sdr": float(self.weight.numpy())}


class SidecarTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.enter_context(tf.compat.v1.test.mock.patch.object(sidecar, "POLL_SECONDS", 0.01))
    self.model_dir = self.create_tempdir().full_path
    self.weight = tf.Variable(0.0)
    self.checkpoint = tf.train.Checkpoint(weight=self.weight)
    self.manager = tf.train.CheckpointManager(
        self.checkpoint, os.path.join(self.model_dir, run_dir.CHECKPOINT_DIR),
        max_to_keep=10)

  def save(self, *steps):
    for step in steps:
      self.weight.assign(step / 10.0)  # each checkpoint holds its own value
      self.manager.save(checkpoint_number=step)

  def sidecar(self, *, training=lambda: False, timeout=30.0, train_steps=30):
    evaluate = RecordingEval(self.weight)
    return evaluate, sidecar.Sidecar(
        checkpoint=tf.train.Checkpoint(weight=self.weight), model_dir=self.model_dir,
        evaluate=evaluate, train_steps=train_steps, checkpoint_every=10, training=training,
        timeout_seconds=timeout, log=lambda _: None)

  def test_every_checkpoint_is_evaluated_once_oldest_first_on_its_own_weights(self):
    self.save(10, 20, 30)
    evaluate, car = self.sidecar()
    self.assertEqual(car.run(), "evaluated 3 checkpoint(s); the run reached its last step")
    self.assertEqual(evaluate.seen, [(10, 1.0), (20, 2.0), (30, 3.0)])

  def test_a_restarted_sidecar_starts_after_the_last_evaluated_step(self):
    self.save(10, 20, 30)
    files.write_json(os.path.join(self.model_dir, periodic_eval.RESULTS_FILE), dict(step=20))
    evaluate, car = self.sidecar()
    car.run()
    self.assertEqual(evaluate.seen, [(30, 3.0)])

  def test_it_ends_when_the_training_run_it_saw_has_ended(self):
    self.save(10)
    answers = iter([True, True])  # training, then gone (the final checkpoint is written)

    def training():
      running = next(answers, False)
      if not running and self.manager.latest_checkpoint.endswith("-10"):
        self.save(15)  # an early stop's final checkpoint, written as the lock is released
      return running

    evaluate, car = self.sidecar(training=training)
    self.assertEqual(car.run(), "evaluated 2 checkpoint(s); the training run has ended")
    self.assertEqual([step for step, _ in evaluate.seen], [10, 15])

  def test_it_ends_after_the_timeout_without_a_new_checkpoint(self):
    self.save(10)
    evaluate, car = self.sidecar(training=lambda: True, timeout=0.2)
    self.assertEqual(car.run(), "evaluated 1 checkpoint(s); no new checkpoint in 0.2 s")
    self.assertEqual([step for step, _ in evaluate.seen], [10])

  def test_a_checkpoint_removed_before_its_turn_is_passed_over(self):
    self.save(10, 20, 30)
    for path in tf.io.gfile.glob(os.path.join(self.model_dir, "checkpoints", "ckpt-10.*")):
      os.remove(path)
    evaluate, car = self.sidecar()
    with self.assertLogs(level="WARNING") as logs:
      car.run()
    self.assertEqual([step for step, _ in evaluate.seen], [20, 30])
    self.assertIn("ckpt-10 is gone or unreadable", "\n".join(logs.output))

  def test_checkpoints_removed_before_the_sidecar_saw_them_are_named(self):
    self.manager = tf.train.CheckpointManager(
        self.checkpoint, os.path.join(self.model_dir, run_dir.CHECKPOINT_DIR),
        max_to_keep=1)  # --keep_checkpoints=1: each save removes the one before
    self.save(10)
    evaluate, car = self.sidecar(train_steps=65)

    def training():  # the trainer runs on while the sidecar evaluates ckpt-10
      if self.manager.latest_checkpoint.endswith("-10"):
        self.save(20, 30, 40, 50, 60, 65)
      return True

    car._training = training  # pylint: disable=protected-access
    with self.assertLogs(level="WARNING") as logs:
      self.assertEqual(car.run(), "evaluated 2 checkpoint(s); the run reached its last step")
    self.assertEqual([step for step, _ in evaluate.seen], [10, 65])
    self.assertIn("The checkpoints of steps 20-60 were removed by the trainer "
                  "(--keep_checkpoints) before this sidecar could evaluate them",
                  "\n".join(logs.output))

  def test_no_warning_when_every_checkpoint_was_evaluated(self):
    self.save(10, 20, 25)
    evaluate, car = self.sidecar(train_steps=25)
    with self.assertLogs(level="INFO") as logs:  # (assertNoLogs needs Python 3.10)
      logging.info("the sidecar runs")  # assertLogs needs one record
      car.run()
    self.assertEqual([r.getMessage() for r in logs.records if r.levelno >= logging.WARNING], [])
    self.assertEqual([step for step, _ in evaluate.seen], [10, 20, 25])


if __name__ == "__main__":
  tf.test.main()
