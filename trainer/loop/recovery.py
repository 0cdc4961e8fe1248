"""Recovery from divergence: judge each chunk of steps, restore the newest checkpoint and train on with fresh draws, a bounded number of times."""

import collections
import os
import statistics
from typing import Callable, Iterator, List, Optional

from absl import logging

from common import files
from trainer.loop import actions

RECOVERIES_FILE = "recoveries.json"
MEDIAN_WINDOW = 20  # healthy chunks whose losses make the running median
MEDIAN_MIN = 5  # chunks needed before the rise above the median is judged


class Diverged(RuntimeError):
  """Training diverged and was not (or could no longer be) recovered; the checkpoints are intact."""


class DivergenceGuard:
  """`guard(chunk) -> reason or None`: whether a chunk of steps diverged.

  A chunk diverged when `max_nonfinite_in_a_row` steps in a row were
  non-finite (skipped, or with a non-finite loss; counted across chunks by
  the step), or when its mean loss is finite and above `max_loss`, or more
  than `max_rise` above the median of the last `MEDIAN_WINDOW` healthy chunks'
  losses (judged once `MEDIAN_MIN` of them are known). Only healthy chunks
  enter the median.
  """

  def __init__(self, max_nonfinite_in_a_row: int, *, max_loss: Optional[float] = None,
               max_rise: Optional[float] = None):
    self._max_in_a_row, self._max_loss, self._max_rise = (max_nonfinite_in_a_row, max_loss,
                                                          max_rise)
    self._losses = collections.deque(maxlen=MEDIAN_WINDOW)

  def __call__(self, chunk: actions.Chunk) -> Optional[str]:
    longest = int(chunk.metrics["longest_nonfinite_streak"])
    if longest >= self._max_in_a_row:
      return (f"{longest} non-finite steps in a row by step {chunk.after} "
              f"(max_skipped_steps={self._max_in_a_row})")
    loss = float(chunk.metrics["loss"])
    if loss != loss:  # every step of the chunk skipped: nothing to judge the loss by
      return None
    if self._max_loss is not None and loss > self._max_loss:
      return (f"loss {loss:.4g} over steps {chunk.before + 1}-{chunk.after} is above "
              f"divergence_loss={self._max_loss:g}")
    if self._max_rise is not None and len(self._losses) >= MEDIAN_MIN:
      median = statistics.median(self._losses)
      if loss > median + self._max_rise:
        return (f"loss {loss:.4g} over steps {chunk.before + 1}-{chunk.after} is more than "
                f"divergence_rise={self._max_rise:g} above its running median {median:.4g}")
    self._losses.append(loss)
    return None


def recoveries(model_dir: str) -> List[dict]:
  """The recoveries a run in `model_dir` made so far (`model_dir/recoveries.json`), oldest
  first: `{step, restored, reason}` each."""
  path = os.path.join(model_dir, RECOVERIES_FILE)
  fix = ("it counts the run's recoveries from divergence; restore it from a copy, or delete "
         "it to allow --recover_attempts afresh.")
  stored = files.read_json(path, {"recoveries": list}, fix=fix)
  if stored is None:
    return []
  for entry in stored["recoveries"]:
    if not (isinstance(entry, dict) and isinstance(entry.get("step"), int)):
      raise files.DamagedFileError(f"{path} lists {entry!r}, not a recovery "
                                   f"{{step, restored, reason}}: {fix}")
  return stored["recoveries"]


class Recovery:
  """`recover(step, reason) -> iterator`: restores the newest intact checkpoint, moves the
  step's augmentation draws and the input stream to a fresh round, and returns the new
  training iterator; at most `attempts` times per run (resumes included).

  Each recovery is logged and recorded in `model_dir/recoveries.json` (by the
  chief); its count is the round of draws, so a resumed run keeps the fresh ones.

  Args:
    attempts: recoveries allowed, >= 0 (0: a divergence stops training at once;
      `LoopConfig.recover_attempts` checks the program's).
    train_step: the `TrainStep` (its `global_step` and `reseed`).
    restore: restores the newest intact checkpoint, returning its path (None
      if there is none).
    restart_input: `restart_input(step) -> iterator`: the training input from
      global step `step`, drawn by the step's current `reseeds` round.
    model_dir: where the record lives (the chief's model_dir).
    write: whether this process writes the record (the chief).
    log: where the recovery lines go.
  """

  def __init__(self, *, attempts: int, train_step, restore: Callable[[], Optional[str]],
               restart_input: Callable[[int], Iterator], model_dir: str, write: bool = True,
               log: Callable[[str], None] = logging.warning):
    self.attempts = attempts
    self._train_step, self._restore, self._restart_input = train_step, restore, restart_input
    self._path = os.path.join(model_dir, RECOVERIES_FILE)
    self._write, self._log = write, log
    self.history = recoveries(model_dir)

  def __call__(self, step: int, reason: str) -> Iterator:
    """Recovers from the divergence `reason` seen at `step`; returns the new iterator.

    Raises:
      Diverged: no attempt is left, or there is no checkpoint to go back to.
    """
    if len(self.history) >= self.attempts:
      raise Diverged(
          f"Training diverged: {reason}, after {len(self.history)} recoveries "
          f"(recover_attempts={self.attempts}); stopping. The checkpoints are intact. Lower "
          "the learning rate, clip gradients (--clip_norm), check the data, or allow more "
          "recoveries.")
    restored = self._restore()
    if restored is None:
      raise Diverged(f"Training diverged: {reason}, before the first checkpoint, so there is "
                     "nothing to go back to; stopping. Lower the learning rate, or checkpoint "
                     "sooner (--checkpoint_every).")
    self.history.append(dict(step=step, restored=restored, reason=reason))
    self._train_step.reseed(len(self.history))
    if self._write:
      files.write_json(self._path, dict(recoveries=self.history))
    back_to = int(self._train_step.global_step.numpy())
    self._log(f"Training diverged: {reason}. Recovery {len(self.history)} of {self.attempts}: "
              f"restored {restored} (step {back_to}); training on with fresh data and "
              "augmentation draws.")
    return self._restart_input(back_to)
