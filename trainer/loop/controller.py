"""The outer loop: call the step in chunks of steps, give each train action its turn, evaluate and give each eval action its turn, stop cleanly."""

import dataclasses
import enum
import math
import time
from typing import Callable, Optional, Sequence, Tuple

from absl import logging
import tensorflow as tf

from common import checks
from common import progress
from trainer.loop import actions
from trainer.loop import checkpoints
from trainer.loop import periodic_eval
from trainer.loop import recovery as recovery_lib
from trainer.loop import stall
from trainer.loop import summaries


class Outcome(str, enum.Enum):
  """How a controller call ended; equal to its value (e.g. "completed")."""
  COMPLETED = "completed"
  END_OF_DATA = "end of data"  # the iterator ran out before train_steps
  STOPPED = "stopped"  # a signal, here or on another worker: see Controller.stopped_by
  EARLY_STOPPED = "early stopped"  # an eval action asked to stop (e.g. best.EarlyStop)
  EVALUATED = "evaluated"


@dataclasses.dataclass(frozen=True)
class LoopConfig:
  """When things happen, in global steps (0: never), and what a step holds."""
  train_steps: int
  steps_per_loop: int
  log_every: int
  checkpoint_every: int
  eval_every: int
  max_skipped_steps: int
  examples_per_step: int
  audio_seconds_per_example: float
  profile_steps: Optional[Tuple[int, int]] = None
  divergence_loss: Optional[float] = None  # a chunk's mean loss above it diverged
  divergence_rise: Optional[float] = None  # ... or this far above its running median
  recover_attempts: int = 0  # restores from a checkpoint before a divergence stops training
  input_stall_seconds: float = 0.0  # a line when no step finishes this long (0: not watched)

  def __post_init__(self):
    for name in ("train_steps", "steps_per_loop", "log_every", "checkpoint_every",
                 "max_skipped_steps", "examples_per_step"):
      checks.at_least(name, getattr(self, name), 1)
    checks.at_least("eval_every", self.eval_every, 0)
    checks.at_least("recover_attempts", self.recover_attempts, 0)
    if self.input_stall_seconds:
      checks.positive("input_stall_seconds", self.input_stall_seconds)
    if self.divergence_loss is not None and not math.isfinite(self.divergence_loss):
      raise checks.ArgumentError("divergence_loss", self.divergence_loss,
                                 "must be a finite number (leave it unset for no bound).")
    if self.divergence_rise is not None:
      checks.positive("divergence_rise", self.divergence_rise)


class Controller:
  """Owns the outer loop around a `trainer.step.TrainStep`-like callable.

  Args:
    train_step: `train_step(iterator, num_steps) -> metrics`, with
      `global_step` and `loss_scale.skipped_steps` variables.
    iterator: the (distributed) training iterator.
    manager: the tf.train.CheckpointManager to save with (already restored).
    config: the schedule.
    summary_dir: where train summaries and profiles go.
    evaluate: the periodic eval (`evaluate(step)`; it remembers `last_step`).
    agree: turns this worker's stop request into the cluster's decision
      (`actions.stop_agreement`); a lone worker decides alone.
    train_actions: called with each chunk of steps after the controller's own
      (summaries, progress, checkpoints, the periodic eval).
    eval_actions: called in order after each eval while training, with its
      step and results; the first to return a reason stops training early
      (`best.KeepBest`, then `best.EarlyStop`).
    recovery: what a diverged chunk (`recovery.DivergenceGuard` with the
      config's bounds) calls to restore a checkpoint and restart the input
      (`recovery.Recovery`); without it a divergence stops training.
    stalled_input: what to check when no step finishes for the config's
      `input_stall_seconds` (`stall.StallWatch` says it); a stop request
      during such a stall ends training at once.
    save_abandoned: whether a stop during a stall saves the steps since the
      last checkpoint (a lone worker; a multi-worker save is collective and
      the others may be waiting too).
    log: where progress lines go.
  """

  def __init__(self, train_step, iterator, manager: tf.train.CheckpointManager,
               config: LoopConfig, *, summary_dir: str,
               evaluate: Optional[periodic_eval.PeriodicEval] = None,
               agree: Callable[[bool], bool] = lambda stop_here: stop_here,
               log: Callable[[str], None] = logging.info,
               train_actions: Sequence[actions.TrainAction] = (),
               eval_actions: Sequence[actions.EvalAction] = (),
               recovery: Optional[recovery_lib.Recovery] = None,
               stalled_input: str = "check the input pipeline.", save_abandoned: bool = True):
    self._train_step, self._iterator, self._manager = train_step, iterator, manager
    self._config, self._evaluate, self._agree, self._log = config, evaluate, agree, log
    self._summary_dir = summary_dir
    self._profiler = actions.Profiler(config.profile_steps, summary_dir, log=log)
    self._train_actions, self._eval_actions = list(train_actions), list(eval_actions)
    self._early_stopped = False
    self._guard = recovery_lib.DivergenceGuard(
        config.max_skipped_steps, max_loss=config.divergence_loss,
        max_rise=config.divergence_rise)
    self._recovery = recovery
    self._watch = (stall.StallWatch(config.input_stall_seconds, stalled_input, log=log)
                   if config.input_stall_seconds else None)
    self._save_abandoned = save_abandoned
    self._called = False  # the first call of the step compiles it
    self._stop = {"signal": None}
    self.stopped_by: Optional[str] = None

  @property
  def step(self) -> int:
    return int(self._train_step.global_step.numpy())

  def _actions(self, writer, meter: progress.Progress):
    config = self._config
    chunk_actions = [
        summaries.TrainSummaries(writer),
        actions.ProgressLog(meter, every=config.log_every, train_steps=config.train_steps),
        actions.every(config.checkpoint_every,
                      lambda step: checkpoints.save(self._manager, step)),
    ]
    if self._evaluate is not None:
      chunk_actions.append(actions.every(config.eval_every, self._evaluate_and_act))
    return chunk_actions + self._train_actions

  def _evaluate_and_act(self, step: int):
    """The periodic eval, then each eval action until one asks to stop."""
    results = self._evaluate(step)
    for action in self._eval_actions:
      reason = action(step, results)
      if reason:
        self._log(reason)
        self._early_stopped = True
        return

  def _recover(self, step: int, reason: str) -> int:
    """Goes back to the newest checkpoint with a fresh input; returns the step restored."""
    if self._recovery is None:
      raise recovery_lib.Diverged(
          f"Training diverged: {reason}; stopping. The last good checkpoint is "
          f"{self._manager.latest_checkpoint}. Lower the learning rate, clip gradients, or "
          "use dynamic loss scaling.")
    self._iterator = self._recovery(step, reason)
    return self.step

  def _run_chunk(self, step: int) -> actions.Chunk:
    wanted = min(self._config.steps_per_loop, self._config.train_steps - step)
    size = self._profiler.chunk_size(step, wanted)
    start = time.perf_counter()
    call = lambda: {k: v.numpy() for k, v in self._train_step(self._iterator, size).items()}
    with self._profiler.around_call(step):
      metrics = (self._watch(call, lambda: self.step, lambda: self._stop["signal"] is not None,
                             first=not self._called) if self._watch else call())
    self._called = True
    chunk = actions.Chunk(before=step, after=int(metrics["global_step"]), asked=size,
                          ran=int(metrics["steps"]), seconds=time.perf_counter() - start,
                          metrics=metrics, examples_per_step=self._config.examples_per_step,
                          audio_seconds_per_example=self._config.audio_seconds_per_example)
    if chunk.out_of_data:
      self._log(f"The training data ran out at step {chunk.after}, before train_steps="
                f"{self._config.train_steps}.")
    return chunk

  def train(self) -> Outcome:
    """Trains to `train_steps` (or the end of the data, or a stop request); saves at the end.

    Raises:
      recovery.Diverged: a chunk diverged (see `recovery.DivergenceGuard`) and no
        recovery was left.
    """
    step, outcome = self.step, Outcome.COMPLETED
    if step >= self._config.train_steps:
      self._log(f"Already at step {step} >= train_steps={self._config.train_steps}; "
                "nothing to train.")
    writer = summaries.file_writer(self._summary_dir)  # made only when training
    meter = progress.Progress("train", self._config.train_steps, "steps", log=self._log)
    meter.restart(step)
    chunk_actions = self._actions(writer, meter)
    try:
      with actions.stop_requests() as self._stop:
        while step < self._config.train_steps:
          chunk = self._run_chunk(step)
          step = chunk.after
          reason = self._guard(chunk) if chunk.ran else None
          if reason is not None:
            step = self._recover(step, reason)
            meter.restart(step)
          elif chunk.ran:
            for action in chunk_actions:
              action(chunk)
          if chunk.out_of_data and reason is None:
            outcome = Outcome.END_OF_DATA
            break
          if self._early_stopped:
            outcome = Outcome.EARLY_STOPPED
            break
          if self._agree(self._stop["signal"] is not None):
            self.stopped_by = self._stop["signal"] or "stopped with the other workers"
            outcome = Outcome.STOPPED
            break
    except stall.Abandoned as e:
      step, outcome = self.step, Outcome.STOPPED
      self.stopped_by = f"{self._stop['signal']} while waiting {e.waited:.0f} s for a step"
      if not self._save_abandoned:
        writer.flush()
        return outcome
    finally:
      self._profiler.stop()
    checkpoints.save(self._manager, step)
    writer.flush()
    return outcome

  def evaluate(self) -> Outcome:
    """Evaluates the current weights once."""
    if self._evaluate is None:
      raise ValueError("There is no eval split to evaluate on.")
    self._evaluate(self.step)
    return Outcome.EVALUATED

  def train_and_evaluate(self) -> Outcome:
    """Trains (evaluating every `eval_every` steps) and, if training completed, evaluates
    the final weights unless that step was just evaluated."""
    outcome = self.train()
    if (outcome == Outcome.COMPLETED and self._evaluate is not None
        and self._evaluate.last_step != self.step):
      self._evaluate_and_act(self.step)
    return outcome

