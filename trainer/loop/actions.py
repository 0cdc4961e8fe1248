"""What the controller does between calls of the step and after each eval: the chunk it reports, progress, periodic work, profiling, stop requests."""

import contextlib
import dataclasses
import signal
from typing import Callable, Dict, Optional, Tuple

from absl import logging
import numpy as np
import tensorflow as tf

from common import progress


@dataclasses.dataclass(frozen=True)
class Chunk:
  """One call of the step: `asked` steps, `ran` of them (global step `before` -> `after`)."""
  before: int
  after: int
  asked: int
  ran: int
  seconds: float
  metrics: Dict[str, np.ndarray]

  examples_per_step: int = 0
  audio_seconds_per_example: float = 0.0

  @property
  def out_of_data(self) -> bool:
    return self.ran < self.asked

  @property
  def examples_per_second(self) -> float:
    return self.ran * self.examples_per_step / max(self.seconds, 1e-9)

  @property
  def audio_seconds_per_second(self) -> float:
    return self.examples_per_second * self.audio_seconds_per_example

  def crossed(self, every: int) -> bool:
    """Whether a multiple of `every` (> 0) lies in (before, after]."""
    return every > 0 and self.after // every > self.before // every


# A train action: called with each chunk of steps that ran (the controller's own report
# progress, write summaries, save checkpoints and evaluate; pass more as `train_actions`).
TrainAction = Callable[[Chunk], None]
# An eval action: called with the step and the results of each eval while training; a text it
# returns is a reason to stop training early (e.g. best.KeepBest, then best.EarlyStop).
EvalAction = Callable[[int, Dict[str, float]], Optional[str]]


class ProgressLog:
  """A progress line every `every` steps and at the end: step, steps/s over the steps since
  the last line and the examples and audio seconds per second it makes, ETA, loss."""

  def __init__(self, meter: progress.Progress, *, every: int, train_steps: int):
    self._meter, self._every, self._train_steps = meter, every, train_steps

  def __call__(self, chunk: Chunk):
    if not (chunk.crossed(self._every) or chunk.after >= self._train_steps
            or chunk.out_of_data):
      return
    skipped = int(chunk.metrics["skipped_in_call"])
    skips = f"{skipped} of {chunk.ran} steps skipped (non-finite), " if skipped else ""
    examples = self._meter.rate(chunk.after) * chunk.examples_per_step  # the line's rate
    self._meter.update(chunk.after, (
        f"{examples:.1f} examples/s, "
        f"{examples * chunk.audio_seconds_per_example:.1f} audio-s/s, "
        f"loss {float(chunk.metrics['loss']):.4f}, {skips}"
        f"grad norm {float(chunk.metrics['grad_norm']):.3g}"), force=True)


def every(steps: int, fn: Callable[[int], object]) -> TrainAction:
  """An action calling `fn(step)` whenever a chunk crosses a multiple of `steps` (0: never)."""

  def action(chunk: Chunk):
    if chunk.crossed(steps):
      fn(chunk.after)

  return action


class Profiler:
  """A TensorBoard profile of the steps from global step `start` to `end`, with step markers.

  Inside the window the step runs one step per call, each call inside a
  `tf.profiler.experimental.Trace("train", step_num=...)` (the iterator's
  `next` runs inside the step), which is what TensorBoard's input-pipeline
  analyzer and step-time graphs need from a loop Keras does not drive.
  """

  def __init__(self, steps: Optional[Tuple[int, int]], logdir: str,
               log: Callable[[str], None] = logging.info):
    self._start, self._end = steps or (None, None)
    self._logdir, self._log = logdir, log
    self._running = False

  def chunk_size(self, step: int, wanted: int) -> int:
    """How many steps the next call may run: it stops at `start`; one at a time inside."""
    if self._start is None or step >= self._end:
      return wanted
    if step < self._start:
      return min(wanted, self._start - step)
    return 1

  @contextlib.contextmanager
  def around_call(self, step: int):
    """Starts the profiler at `start`, marks each step inside the window, stops at `end`."""
    if self._start is None or not self._start <= step < self._end:
      yield
      return
    if not self._running:
      tf.profiler.experimental.start(self._logdir)
      self._running = True
      self._log(f"Profiling steps {self._start}-{self._end} into {self._logdir}.")
    with tf.profiler.experimental.Trace("train", step_num=step, _r=1):
      yield
    if step + 1 >= self._end:
      self.stop()

  def stop(self):
    """Writes the profile if one is being taken (also when training ends inside the window)."""
    if self._running:
      tf.profiler.experimental.stop()
      self._running = False
      self._log(f"Wrote the profile: tensorboard --logdir {self._logdir}, Profile tab.")


@contextlib.contextmanager
def stop_requests():
  """Turns SIGTERM/SIGINT into a flag checked between calls (then save and stop)."""
  requested = {"signal": None}
  handlers = {}

  def handle(signum, _):
    requested["signal"] = signal.Signals(signum).name
    logging.warning("%s received: saving a checkpoint after the current steps, then "
                    "stopping.", requested["signal"])

  for signum in (signal.SIGTERM, signal.SIGINT):
    handlers[signum] = signal.signal(signum, handle)
  try:
    yield requested
  finally:
    for signum, handler in handlers.items():
      signal.signal(signum, handler)


def stop_agreement(strategy: tf.distribute.Strategy) -> Callable[[bool], bool]:
  """`agree(stop_here) -> stop_everywhere`: an all-reduce (SUM > 0) of one flag across workers.

  A signal reaches one worker; every worker must stop after the same step
  (checkpoint saves and the next steps are collective). One scalar collective
  per call of the step, on TensorFlow's own engine.
  """

  @tf.function
  def any_worker(flag):
    value = strategy.run(lambda: tf.identity(flag))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, value, axis=None)

  return lambda stop_here: bool(any_worker(tf.constant(int(stop_here))) > 0)
