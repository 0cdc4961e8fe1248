"""Is training input-bound? Times input alone, the step alone and both, and says what to change.

Three timed phases after warm-up (taking turns, medians of 5 runs), on the
configured strategy and devices:
  (a) input only: pull batches through the distributed iterator (no step);
  (b) step only: the compiled step on one batch cached and repeated;
  (c) both, as in training.
input headroom = rate(a) / rate(b); input-bound fraction = 1 - t(b) / t(c).
"""

import dataclasses
import os
import statistics
import time
from typing import Callable, Dict, List, Optional

from absl import logging
import tensorflow as tf

from common import files
from common import progress

# Input-bound when more than 15% of step time waits for input: repeated
# measurements of one setup here differ by up to ~8%, so smaller fractions are noise.
BOUND_THRESHOLD = 0.15


@dataclasses.dataclass(frozen=True)
class Setup:
  """What the causes are phrased in terms of (the run's input settings)."""
  reverb: str
  compression: str
  cycle_length: int
  shuffle_buffer_mb: float
  per_replica_batch: int
  steps_per_loop: int
  num_shards: int
  input_pipelines: int


def time_phases(phases: Dict[str, Callable[[int], None]], steps: int, warmup: int,
                repeats: int = 5,
                log: Callable[[str], None] = logging.info) -> Dict[str, float]:
  """Median seconds per step of each `run(steps)`, after `warmup` steps each; says what it
  is doing through `log` (a line per warm-up, a progress line per timed run).

  The phases take turns, so a slow spell of the machine hits all of them
  alike, and the median keeps one disturbed run from flipping the verdict.
  """
  for name, run in phases.items():
    log(f"diagnose: warming up {name} ({warmup} steps; the first compiles the step)")
    run(warmup)
  meter = progress.Progress("diagnose", repeats * len(phases), "timed runs", log=log)
  times = {name: [] for name in phases}
  for _ in range(repeats):
    for name, run in phases.items():
      start = time.perf_counter()
      run(steps)
      times[name].append((time.perf_counter() - start) / steps)
      meter.update(sum(map(len, times.values())),
                   f"{name}: {1e3 * times[name][-1]:.1f} ms/step", force=True)
  return {name: statistics.median(t) for name, t in times.items()}


def input_only(strategy: tf.distribute.Strategy, iterator) -> Callable[[int], None]:
  """Pulls `n` global batches onto the devices without computing on them."""

  @tf.function
  def pull(n):
    total = tf.constant(0.0)
    for _ in tf.range(n):
      batch = next(iterator)
      # Touch one sample of each signal per replica so every per-replica batch (pairs, or
      # clean speech and noise to mix) is really delivered.
      touched = strategy.run(lambda b: tf.add_n([tf.cast(b[k][0, 0], tf.float32)
                                                 for k in sorted(b) if k != "weight"]),
                             args=(batch,))
      total += tf.reshape(strategy.reduce(tf.distribute.ReduceOp.SUM, touched, axis=None), [])
    return total

  return lambda n: pull(tf.constant(n)).numpy()


def steps_of(train_step, iterator) -> Callable[[int], None]:
  """Runs `n` training steps, in calls of at most `steps_per_loop`."""

  def run(n):
    while n > 0:
      chunk = min(n, train_step.steps_per_loop)
      train_step(iterator, chunk)["loss"].numpy()
      n -= chunk

  return run


def report(seconds: Dict[str, float], *, examples_per_step: int,
           audio_seconds_per_example: float, setup: Setup) -> dict:
  """The diagnosis from per-step seconds of phases 'input', 'step' and 'both'."""
  rates = {k: examples_per_step / v for k, v in seconds.items()}
  headroom = rates["input"] / rates["step"]
  fraction = max(0.0, 1.0 - seconds["step"] / seconds["both"])
  bound = fraction > BOUND_THRESHOLD
  if bound:
    verdict = (f"input-bound: the pipeline delivers {headroom:.2f}x what the step consumes; "
               f"{100 * fraction:.0f}% of each training step waits for input")
  else:
    verdict = (f"not input-bound: the pipeline delivers {headroom:.2f}x what the step "
               f"consumes; {100 * fraction:.0f}% of step time waits for input")
  return dict(
      verdict=verdict, input_bound=bound, input_bound_fraction=fraction,
      input_headroom=headroom,
      examples_per_second={k: rates[k] for k in ("input", "step", "both")},
      audio_seconds_per_second={k: rates[k] * audio_seconds_per_example for k in rates},
      seconds_per_step=seconds,
      causes=causes(setup, bound=bound, headroom=headroom))


def causes(setup: Setup, *, bound: bool, headroom: float) -> List[str]:
  """Likely causes and the flag to change, most likely first."""
  out = []
  if bound and setup.reverb == "host":
    out.append("Reverb runs on the host CPU (~0.15 s of CPU per 10 s example): use "
               "--reverb=device to run it inside the compiled step on the accelerator.")
  if bound and setup.compression != "none":
    out.append(f"The shards are {setup.compression}-compressed (from the manifest): audio "
               "barely compresses and decompression costs ~6-8x read throughput; re-create "
               "them with input.prepare --compression=none.")
  if bound and setup.cycle_length < min(16, max(1, setup.num_shards // setup.input_pipelines)):
    out.append(f"Only {setup.cycle_length} shard(s) are read in parallel: raise "
               "--cycle_length (up to the shards per input pipeline).")
  if bound and setup.num_shards < setup.input_pipelines:
    out.append(f"{setup.num_shards} shards for {setup.input_pipelines} input pipelines: every "
               "pipeline reads every file; write more shards (input.prepare --num_shards).")
  if bound and setup.per_replica_batch < 8:
    out.append(f"{setup.per_replica_batch} examples per replica per step: each batch pays the "
               "pipeline's per-batch costs (parse call, transfer); a larger --global_batch_size "
               "amortises them.")
  if bound:
    out.append("More host CPU for preprocessing: run the pipeline on tf.data service workers, "
               "or on a machine with more cores per accelerator.")
  if not bound and headroom < 1.3:
    out.append("Little input headroom: a slower host or a larger model step may make the run "
               "input-bound; keep --reverb=device.")
  if setup.steps_per_loop < 10:
    out.append(f"--steps_per_loop={setup.steps_per_loop}: each call returns to Python; 50-100 "
               "steps per call hide host overhead on fast accelerators.")
  if setup.shuffle_buffer_mb > 4096:
    out.append(f"--shuffle_buffer_mb={setup.shuffle_buffer_mb:g} fills slowly at start and "
               "holds much host RAM; 1-2 GB mixes long corpora well enough.")
  return out


def format_report(result: dict) -> str:
  lines = [f"Diagnosis: {result['verdict']}."]
  for phase, label in (("input", "(a) input only"), ("step", "(b) step only "),
                       ("both", "(c) both        ")):
    lines.append(f"  {label}: {result['examples_per_second'][phase]:9.1f} examples/s, "
                 f"{result['audio_seconds_per_second'][phase]:9.1f} audio-s/s")
  lines.append(f"  input headroom (a)/(b) = {result['input_headroom']:.2f}; input-bound "
               f"fraction 1 - t(b)/t(c) = {result['input_bound_fraction']:.2f}")
  lines += [f"  - {cause}" for cause in result["causes"]]
  return "\n".join(lines)


def diagnose(strategy: tf.distribute.Strategy, train_step, make_iterator: Callable,
             *, steps: int, warmup: int, examples_per_step: int,
             audio_seconds_per_example: float, setup: Setup,
             model_dir: Optional[str] = None) -> dict:
  """Runs the three phases and returns (and optionally writes) the report.

  Args:
    strategy: the training strategy.
    train_step: a `trainer.step.TrainStep`.
    make_iterator: `make_iterator(cached: bool)` -> a fresh distributed
      iterator over the training input; `cached` repeats its first batch.
    steps: timed steps per phase.
    warmup: untimed steps before each phase (compiles, fills buffers).
  """
  seconds = time_phases({
      "input": input_only(strategy, make_iterator(False)),
      "step": steps_of(train_step, make_iterator(True)),
      "both": steps_of(train_step, make_iterator(False)),
  }, steps, warmup)
  result = report(seconds, examples_per_step=examples_per_step,
                  audio_seconds_per_example=audio_seconds_per_example, setup=setup)
  if model_dir:
    result["path"] = files.write_json(os.path.join(model_dir, "diagnosis.json"), result)
  return result
