"""Benchmark: the causal default model in real time on one CPU thread - algorithmic latency, time per hop, real-time factor, file and state size.

The README's default mask model with --causal (untrained weights: the time
does not depend on them) at 16 and 48 kHz, streamed hop by hop through
`trainer.serving.stream.Streamer` from Python: the TensorFlow step (as
`trainer.stream` runs it) and the TFLite file (`trainer.export
--format=tflite`, TFLite's interpreter with its default delegates); and the
whole clip at once for comparison. One thread everywhere.
  python -m bench.stream [--seconds 10]
"""

import argparse
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # pylint: disable=g-import-not-at-top
import tensorflow as tf  # pylint: disable=g-import-not-at-top

from bench import timing  # pylint: disable=g-import-not-at-top
from trainer.models import mask  # pylint: disable=g-import-not-at-top
from trainer.serving import stream  # pylint: disable=g-import-not-at-top
from trainer.serving import tflite  # pylint: disable=g-import-not-at-top

RATES = (16000, 48000)


def streamed_seconds(streamer: stream.Streamer, signal: np.ndarray) -> float:
  """Wall time to stream `signal` hop by hop (after one untimed hop: tracing)."""
  streamer.feed(signal[:streamer.hop])
  streamer.reset()
  start = time.perf_counter()
  for first in range(0, len(signal), streamer.hop):
    streamer.feed(signal[first:first + streamer.hop])
  streamer.flush()
  return time.perf_counter() - start


def rows(rate: int, seconds: float, work_dir: str):
  model = mask.MaskDenoiser(sample_rate=rate, causal=True)  # the default shape
  signal = (0.1 * np.random.default_rng(0).standard_normal(int(seconds * rate))).astype(
      np.float32)
  path = os.path.join(work_dir, f"stream-{rate}.tflite")
  with open(path, "wb") as f:
    f.write(tflite.convert(model))
  whole = tf.function(model)
  clip = tf.constant(signal[None])
  offline = timing.median_seconds(lambda: whole(clip), runs=3)
  state = stream.MaskStep(model).state_size
  out = []
  for name, streamer in (("TensorFlow step", stream.Streamer.for_mask_model(model)),
                         ("TFLite float", stream.Streamer.from_tflite(path, num_threads=1))):
    took = streamed_seconds(streamer, signal)
    out.append([f"{rate}", name, f"{1e3 * streamer.latency / rate:.1f}",
                f"{1e3 * took * streamer.hop / len(signal):.3f}", f"{took / seconds:.4f}",
                f"{offline / seconds:.4f}", f"{os.path.getsize(path) / 2**20:.1f} MB",
                f"{4 * state / 1024:.0f} KiB"])
  return out


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--seconds", type=float, default=10.0)
  args = parser.parse_args()
  tf.config.threading.set_intra_op_parallelism_threads(1)
  tf.config.threading.set_inter_op_parallelism_threads(1)
  with tempfile.TemporaryDirectory() as work_dir:
    table = [r for rate in RATES for r in rows(rate, args.seconds, work_dir)]
  print(f"Causal default mask model, {args.seconds:g} s of audio, 8 ms hops, 1 thread; "
        f"{timing.machine()}")
  print(timing.table(["rate Hz", "stream", "latency ms", "ms per hop", "RTF streamed",
                      "RTF whole clip (TF)", "TFLite file", "state"], table))


if __name__ == "__main__":
  main()
