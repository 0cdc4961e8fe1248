"""Eval actions: the best checkpoint by an eval metric (kept apart, never removed by max_to_keep) and early stopping on it."""

import math
import os
from typing import Dict, Optional

from absl import logging
import tensorflow as tf

from common import checks
from common import files
from trainer import run_dir

BEST_FILE = "best.json"
METRICS = ("si_sdr", "si_sdr_improvement", "pesq", "stoi", "loss")  # what can be kept best
PERCEPTUAL = ("pesq", "stoi")  # scored only with --eval_perceptual_examples and the packages
LOWER_IS_BETTER = ("loss",)  # every other metric is higher


class KeepBest:
  """After each eval, saves the weights to `model_dir/best/` if `metric` improved there.

  `model_dir/best/best.json` holds `{metric, value, step, checkpoint}`; a
  resumed run continues from it. The best checkpoint lives in its own
  directory (one kept), so the run's `max_to_keep` never removes it.
  """

  def __init__(self, checkpoint: tf.train.Checkpoint, model_dir: str, metric: str):
    self.metric = metric
    self._higher = metric not in LOWER_IS_BETTER
    self._dir = os.path.join(model_dir, run_dir.BEST_DIR)
    self._manager = tf.train.CheckpointManager(checkpoint, self._dir, max_to_keep=1)
    self.best = self._stored()

  def _stored(self) -> Optional[Dict]:
    best = files.read_json(
        os.path.join(self._dir, BEST_FILE),
        {"metric": str, "value": float, "step": int, "checkpoint": str},
        fix=f"it records the best checkpoint beside it; move {self._dir} aside to keep the "
        "best afresh.")
    return best if best and best["metric"] == self.metric else None

  def __call__(self, step: int, results: Dict[str, float]) -> None:
    """The eval action: keeps the weights if `results` improved the metric."""
    self.consider(step, results)

  def consider(self, step: int, results: Dict[str, float]) -> bool:
    """Whether `results` improved the metric (then the weights were saved)."""
    if self.metric not in results:
      raise checks.ArgumentError("keep_best", self.metric, "is not an eval metric; use one of "
                                 f"{', '.join(sorted(results))}.")
    value = float(results[self.metric])
    if not math.isfinite(value):
      logging.warning("Eval %s at step %d is %s: not a candidate for the best checkpoint.",
                      self.metric, step, value)
      return False
    if self.best is not None and not (value > self.best["value"] if self._higher
                                      else value < self.best["value"]):
      return False
    path = self._manager.save(checkpoint_number=step)
    self.best = dict(metric=self.metric, value=value, step=step, checkpoint=path)
    files.write_json(os.path.join(self._dir, BEST_FILE), self.best)
    logging.info("New best %s %.4f at step %d: %s", self.metric, value, step, path)
    return True


class EarlyStop:
  """Asks to stop after `patience` evals in a row without a new best: an eval action after
  `keep_best` (every worker sees the same evals, so all stop after the same step)."""

  def __init__(self, keep_best: KeepBest, patience: int):
    self.patience = checks.at_least("early_stop_patience", patience, 1)
    self._keep_best = keep_best
    self.without_improvement = 0

  def __call__(self, step: int, results: Dict[str, float]) -> Optional[str]:
    """Why training stops after the eval at `step`, or None."""
    del results  # KeepBest has judged them
    best = self._keep_best.best
    improved = best is not None and best["step"] == step
    self.without_improvement = 0 if improved else self.without_improvement + 1
    if self.without_improvement < self.patience:
      return None
    return (f"No new best {self._keep_best.metric} in {self.patience} evals; stopping early "
            f"at step {step} (best: {best}).")
