"""Tests for trainer.loop.best in the controller: the best checkpoint outlives max_to_keep, early stopping ends the run."""

import json
import os

import tensorflow as tf

from tests import helpers
from trainer import run_dir
from trainer.loop import best
from trainer.loop import checkpoints
from trainer.loop import controller


class ScriptedEval:
  """`evaluate(step)` returning scripted SI-SDRs, one per eval."""

  def __init__(self, values):
    self._values, self.last_step, self.steps = list(values), None, []

  def __call__(self, step):
    self.last_step = step
    self.steps.append(step)
    return dict(si_sdr=self._values.pop(0), loss=0.0)


def eval_actions(state, model_dir, patience):
  """KeepBest by si_sdr, then EarlyStop after `patience` evals without a new best (if any)."""
  keep_best = best.KeepBest(state, model_dir, "si_sdr")
  return [keep_best] + ([best.EarlyStop(keep_best, patience)] if patience else [])


class BestTest(tf.test.TestCase):

  def run_loop(self, values, *, patience=None, train_steps=60):
    model_dir = self.create_tempdir().full_path
    step = helpers.ScriptedStep([0] * 100)
    weight = tf.Variable(0.0)
    state = tf.train.Checkpoint(v=weight, global_step=step.global_step)
    manager = checkpoints.manager(state, model_dir, max_to_keep=1)
    evaluate = ScriptedEval(values)
    config = helpers.loop_config(train_steps=train_steps, eval_every=10, checkpoint_every=10)
    loop = controller.Controller(
        step, None, manager, config, summary_dir=self.create_tempdir().full_path, evaluate=evaluate,
        log=lambda _: None, eval_actions=eval_actions(state, model_dir, patience))
    return loop.train_and_evaluate(), model_dir, evaluate

  def test_the_best_checkpoint_outlives_max_to_keep(self):
    outcome, model_dir, evaluate = self.run_loop([10.0, 12.0, 11.0, 9.0, 11.5, 8.0])
    self.assertEqual(outcome, "completed")
    self.assertEqual(evaluate.steps, [10, 20, 30, 40, 50, 60])
    with open(os.path.join(model_dir, "best", "best.json")) as f:
      kept = json.load(f)
    self.assertEqual((kept["metric"], kept["value"], kept["step"]), ("si_sdr", 12.0, 20))
    self.assertTrue(tf.io.gfile.exists(kept["checkpoint"] + ".index"))
    self.assertEqual(tf.train.latest_checkpoint(os.path.join(model_dir, "checkpoints")),
                     os.path.join(model_dir, "checkpoints", "ckpt-60"))  # only the last kept
    reader = tf.train.load_checkpoint(kept["checkpoint"])
    self.assertEqual(int(reader.get_tensor("global_step/.ATTRIBUTES/VARIABLE_VALUE")), 20)

  def test_no_new_best_for_patience_evals_stops_early(self):
    outcome, model_dir, evaluate = self.run_loop([10.0, 12.0, 11.0, 11.5, 13.0], patience=2)
    self.assertEqual(outcome, "early stopped")
    self.assertEqual(evaluate.steps, [10, 20, 30, 40])
    with open(os.path.join(model_dir, "best", "best.json")) as f:
      self.assertEqual(json.load(f)["step"], 20)

  def test_lower_is_better_for_the_loss_and_an_unknown_metric_is_named(self):
    state = tf.train.Checkpoint(v=tf.Variable(0.0))
    keep = best.KeepBest(state, self.create_tempdir().full_path, "loss")
    self.assertTrue(keep.consider(1, dict(loss=2.0)))
    self.assertFalse(keep.consider(2, dict(loss=3.0)))
    self.assertTrue(keep.consider(3, dict(loss=1.0)))
    with self.assertRaisesRegex(ValueError, "keep_best=pesq is not an eval metric; use one "
                                "of loss"):
      best.KeepBest(state, self.create_tempdir().full_path, "pesq")(1, dict(loss=1.0))


class NonFiniteTest(tf.test.TestCase):

  def test_a_non_finite_eval_is_never_the_best_and_blocks_nothing(self):
    model_dir = self.create_tempdir().full_path
    keep = best.KeepBest(tf.train.Checkpoint(v=tf.Variable(1.0)), model_dir, "si_sdr")
    self.assertFalse(keep.consider(10, dict(si_sdr=float("nan"))))
    self.assertFalse(os.path.exists(os.path.join(model_dir, run_dir.BEST_DIR, best.BEST_FILE)))
    self.assertTrue(keep.consider(20, dict(si_sdr=5.9)))
    self.assertFalse(keep.consider(30, dict(si_sdr=float("inf"))))
    self.assertTrue(keep.consider(40, dict(si_sdr=6.4)))
    self.assertEqual(keep.best["step"], 40)


if __name__ == "__main__":
  tf.test.main()
