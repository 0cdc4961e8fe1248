"""Benchmark: the causal default model in real time on one CPU thread - algorithmic latency, time per hop, real-time factor, state size.

The README's default mask model with --causal (untrained weights: the time
does not depend on them) at 16 and 48 kHz, streamed hop by hop through
`trainer.serving.stream.Streamer` from Python (as `trainer.stream` runs it),
and as a whole clip for comparison. One intra-op and one inter-op thread.
  python -m bench.stream [--seconds 10]
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # pylint: disable=g-import-not-at-top
import tensorflow as tf  # pylint: disable=g-import-not-at-top

from bench import timing  # pylint: disable=g-import-not-at-top
from trainer.models import mask  # pylint: disable=g-import-not-at-top
from trainer.serving import stream  # pylint: disable=g-import-not-at-top

RATES = (16000, 48000)


def row(rate: int, seconds: float):
  model = mask.MaskDenoiser(sample_rate=rate, causal=True)  # the default shape
  signal = (0.1 * np.random.default_rng(0).standard_normal(int(seconds * rate))).astype(
      np.float32)
  streamer = stream.Streamer.for_mask_model(model)
  streamer.feed(signal[:4 * streamer.hop])  # trace the step
  streamer.reset()
  start = time.perf_counter()
  for first in range(0, len(signal), streamer.hop):
    streamer.feed(signal[first:first + streamer.hop])
  streamer.flush()
  streamed = time.perf_counter() - start
  whole = tf.function(model)
  clip = tf.constant(signal[None])
  offline = timing.median_seconds(lambda: whole(clip), runs=3)
  hops = len(signal) / streamer.hop
  state = stream.MaskStep(model).state_size
  return [f"{rate}", f"{1e3 * streamer.latency / rate:.1f}", f"{1e3 * streamer.hop / rate:g}",
          f"{1e3 * streamed / hops:.2f}", f"{streamed / seconds:.3f}",
          f"{offline / seconds:.4f}", f"{state} ({4 * state / 1024:.0f} KiB)"]


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--seconds", type=float, default=10.0)
  args = parser.parse_args()
  tf.config.threading.set_intra_op_parallelism_threads(1)
  tf.config.threading.set_inter_op_parallelism_threads(1)
  rows = [row(rate, args.seconds) for rate in RATES]
  print(f"Causal default mask model, {args.seconds:g} s of audio, 1 thread; "
        f"{timing.machine()}")
  print(timing.table(["rate Hz", "latency ms", "hop ms", "ms per hop", "RTF streamed",
                      "RTF whole clip", "state floats"], rows))


if __name__ == "__main__":
  main()
