"""The sidecar evaluator: another process evaluates each checkpoint of a training run once, as it appears, so eval never stalls the accelerators."""

import os
import time
from typing import Callable, List, Optional, Sequence, Tuple

from absl import logging
import tensorflow as tf

from common import files
from trainer import run_dir
from trainer.loop import actions
from trainer.loop import periodic_eval

POLL_SECONDS = 2.0


def last_evaluated(model_dir: str) -> Optional[int]:
  """The step `model_dir/eval_results.json` was written for (None: no eval yet)."""
  results = files.read_json(
      os.path.join(model_dir, periodic_eval.RESULTS_FILE), {"step": int},
      fix="it records the last evaluated step; delete it to evaluate every checkpoint again.")
  return results["step"] if results else None


def newer_checkpoints(directory: str, after: Optional[int]) -> List[Tuple[int, str]]:
  """`[(step, path)]` of the checkpoints in `directory` after step `after`, oldest first."""
  state = tf.train.get_checkpoint_state(directory)
  found = [(int(path.rsplit("-", 1)[1]), path)
           for path in (state.all_model_checkpoint_paths if state else [])]
  return sorted(item for item in found if after is None or item[0] > after)


class Sidecar:
  """Evaluates every checkpoint a training run writes to `model_dir/checkpoints`, once each,
  oldest first, into `model_dir/eval/` and `eval_results.json` (and `best/` with
  eval actions such as `best.KeepBest`).

  It starts after the step in `eval_results.json` (a restarted sidecar does not
  evaluate a checkpoint again) and ends after evaluating step `train_steps` or
  later, when the training run it saw holding the model_dir's lock has ended
  (its final checkpoint is written by then), or after `timeout_seconds`
  without a new checkpoint. A checkpoint the trainer removed (its
  --keep_checkpoints) before the sidecar got to it is passed over with a
  warning: one listed but gone, or a step of `checkpoint_every` never seen.

  Args:
    checkpoint: what to restore each checkpoint into (the model and, if kept,
      the weight average that `evaluate` swaps in).
    model_dir: the training run's model_dir.
    evaluate: the eval, as in training (`PeriodicEval`).
    train_steps: the run's last step.
    checkpoint_every: the run's steps between checkpoints (to tell which it removed).
    training: whether a training run holds the model_dir (`lock.training`).
    timeout_seconds: how long to wait for a new checkpoint.
    eval_actions: called after each eval with its step and results (e.g. `best.KeepBest`
      keeps the best checkpoint); a sidecar cannot stop its trainer, so what they return
      is not acted on.
    log: where the progress lines go.
  """

  def __init__(self, *, checkpoint: tf.train.Checkpoint, model_dir: str,
               evaluate: periodic_eval.PeriodicEval, train_steps: int,
               checkpoint_every: int, training: Callable[[], bool], timeout_seconds: float,
               eval_actions: Sequence[actions.EvalAction] = (),
               log: Callable[[str], None] = logging.info):
    self._checkpoint, self._model_dir, self._evaluate = checkpoint, model_dir, evaluate
    self._train_steps, self._training, self._timeout = train_steps, training, timeout_seconds
    self._every = checkpoint_every
    self._eval_actions, self._log = list(eval_actions), log
    self.evaluated: List[int] = []

  def _evaluate_one(self, step: int, path: str):
    try:
      run_dir.restore(self._checkpoint, path)
    except run_dir.UNREADABLE as e:
      logging.warning("Checkpoint %s is gone or unreadable (%s): the trainer's "
                      "--keep_checkpoints removes old ones; passing it over.", path, e)
      return
    results = self._evaluate(step)
    for action in self._eval_actions:
      action(step, results)
    self.evaluated.append(step)

  def _warn_if_removed(self, last: int, step: int):
    """Warns of the checkpoints the run wrote between steps `last` and `step` (every
    `checkpoint_every` steps) that were gone before the sidecar saw them."""
    removed = list(range((last // self._every + 1) * self._every, step, self._every))
    if removed:
      logging.warning(
          "The checkpoints of step%s %s were removed by the trainer (--keep_checkpoints) "
          "before this sidecar could evaluate them: keep more checkpoints, or checkpoint less "
          "often than the sidecar evaluates.", "s" if len(removed) > 1 else "",
          f"{removed[0]}-{removed[-1]}" if len(removed) > 1 else removed[0])

  def run(self) -> str:
    """Evaluates checkpoints until the run ends or none comes in time; returns how it ended."""
    directory = os.path.join(self._model_dir, run_dir.CHECKPOINT_DIR)
    last = last_evaluated(self._model_dir)
    self._log(f"Sidecar: evaluating each new checkpoint in {directory}"
              + (f" after step {last}" if last is not None else "") + ".")
    deadline, saw_trainer = time.monotonic() + self._timeout, False
    while True:
      for step, path in newer_checkpoints(directory, last):
        self._warn_if_removed(last or 0, step)
        self._evaluate_one(step, path)
        last, deadline = step, time.monotonic() + self._timeout
        if step >= self._train_steps:
          return f"evaluated {len(self.evaluated)} checkpoint(s); the run reached its last step"
      training = self._training()
      if saw_trainer and not training and not newer_checkpoints(directory, last):
        return f"evaluated {len(self.evaluated)} checkpoint(s); the training run has ended"
      saw_trainer |= training
      if time.monotonic() > deadline:
        return (f"evaluated {len(self.evaluated)} checkpoint(s); no new checkpoint in "
                f"{self._timeout:g} s")
      time.sleep(POLL_SECONDS)
