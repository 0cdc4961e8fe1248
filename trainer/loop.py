"""The outer loop: train in steps_per_loop chunks, log progress, summarise, checkpoint, evaluate, stop cleanly."""

import contextlib
import dataclasses
import math
import signal
import time
from typing import Callable, Dict, Optional

from absl import logging
import numpy as np
import tensorflow as tf

from common import progress
from trainer import checkpoints


class NonFiniteLoss(RuntimeError):
  """Training produced non-finite steps for too long; the last good checkpoint is kept."""


@dataclasses.dataclass(frozen=True)
class LoopConfig:
  train_steps: int
  steps_per_loop: int
  log_every: int
  checkpoint_every: int
  eval_every: int
  max_skipped_steps: int
  examples_per_step: int
  audio_seconds_per_example: float


@contextlib.contextmanager
def stop_requests():
  """Turns SIGTERM/SIGINT into a flag the loop checks between chunks (then saves and exits)."""
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


def _crossed(before: int, after: int, every: int) -> bool:
  return every > 0 and after // every > before // every


def stop_agreement(strategy: tf.distribute.Strategy) -> Callable[[bool], bool]:
  """`agree(stop_here) -> stop_everywhere`: an all-reduce (SUM > 0) of one flag across workers.

  A signal reaches one worker; every worker must stop after the same step
  (checkpoint saves and the next steps are collective). One scalar collective
  per steps_per_loop chunk, on TensorFlow's own engine.
  """

  @tf.function
  def any_worker(flag):
    value = strategy.run(lambda: tf.identity(flag))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, value, axis=None)

  return lambda stop_here: bool(any_worker(tf.constant(int(stop_here))) > 0)


def train(train_step: Callable, iterator, manager: tf.train.CheckpointManager,
          config: LoopConfig, *, summary_dir: str,
          evaluate: Optional[Callable[[int], Dict[str, float]]] = None,
          agree: Callable[[bool], bool] = lambda stop_here: stop_here,
          log: Callable[[str], None] = logging.info) -> str:
  """Runs `train_step(iterator, n)` until `train_steps`; returns why it stopped.

  `agree` turns this worker's stop request into the cluster's decision (see
  `stop_agreement`); a lone worker decides alone.

  Returns:
    "completed", "end of data" (the iterator ran out first), or the name of the
    signal that stopped it.

  Raises:
    NonFiniteLoss: after `max_skipped_steps` non-finite steps in a row.
  """
  global_step = train_step.global_step
  step = int(global_step.numpy())
  writer = tf.summary.create_file_writer(summary_dir)
  meter = progress.Progress("train", config.train_steps, "steps", log=log)
  meter.restart(step)
  skipped_before = int(train_step.loss_scale.skipped_steps.numpy())  # restored total
  skipped_in_a_row = 0
  if step >= config.train_steps:
    log(f"Already at step {step} >= --train_steps={config.train_steps}; nothing to train.")
  stopping = out_of_data = False
  with stop_requests() as stop:
    while step < config.train_steps and not stopping and not out_of_data:
      chunk = min(config.steps_per_loop, config.train_steps - step)
      start = time.perf_counter()
      metrics = {k: v.numpy() for k, v in train_step(iterator, chunk).items()}
      seconds = time.perf_counter() - start
      before, step = step, int(metrics["global_step"])
      ran = int(metrics["steps"])
      if ran < chunk:
        out_of_data = True
        log(f"The training data ran out at step {step}, before --train_steps="
            f"{config.train_steps}.")
        if ran == 0:
          break

      skipped = int(metrics["skipped_steps"])
      new_skips = skipped - skipped_before
      skipped_before = skipped
      skipped_in_a_row = skipped_in_a_row + new_skips if new_skips == ran else new_skips
      if not math.isfinite(float(metrics["loss"])) and new_skips == 0:
        skipped_in_a_row += ran
      if skipped_in_a_row >= config.max_skipped_steps:
        raise NonFiniteLoss(
            f"{skipped_in_a_row} non-finite steps in a row up to step {step} "
            f"(--max_skipped_steps={config.max_skipped_steps}); stopping. The last good "
            f"checkpoint is {manager.latest_checkpoint}. Lower --learning_rate, set "
            "--clip_norm, or use --loss_scale=dynamic.")

      examples_per_second = ran * config.examples_per_step / seconds
      _write_train_summaries(writer, step, metrics, examples_per_second,
                             examples_per_second * config.audio_seconds_per_example)
      if (_crossed(before, step, config.log_every) or step >= config.train_steps
          or out_of_data):
        meter.update(step, (
            f"loss {float(metrics['loss']):.4f}, grad norm {float(metrics['grad_norm']):.3g}, "
            f"{examples_per_second:.1f} examples/s, "
            f"{examples_per_second * config.audio_seconds_per_example:.1f} audio-s/s"),
                     force=True)
      if _crossed(before, step, config.checkpoint_every):
        checkpoints.save(manager, step)
      if evaluate is not None and _crossed(before, step, config.eval_every):
        evaluate(step)
      stopping = agree(stop["signal"] is not None)
  checkpoints.save(manager, step)
  writer.flush()
  if stopping:
    return stop["signal"] or "stopped with the other workers"
  return "end of data" if out_of_data else "completed"


def _write_train_summaries(writer, step, metrics, examples_per_second, audio_per_second):
  with writer.as_default(step=step):
    for key in ("loss", "grad_norm", "learning_rate", "loss_scale", "skipped_steps"):
      tf.summary.scalar(key, float(metrics[key]))
    tf.summary.scalar("examples_per_second", examples_per_second)
    tf.summary.scalar("audio_seconds_per_second", audio_per_second)
    replica_loss = metrics["replica_loss_sum"] / np.maximum(metrics["replica_examples"], 1)
    for i, (loss, norm) in enumerate(zip(replica_loss, metrics["replica_grad_norm"])):
      tf.summary.scalar(f"replica_{i}/loss", float(loss))
      tf.summary.scalar(f"replica_{i}/grad_norm", float(norm))
      tf.summary.scalar(f"replica_{i}/nonfinite_steps",
                        float(metrics["replica_nonfinite"][i]))
