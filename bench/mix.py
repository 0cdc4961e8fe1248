"""Benchmark: what ops.Mix costs on the device per example, against RevEcho, at the CPU default's and the GPU recipe's shapes.

Each variant runs XLA-compiled (as inside the step) on one batch; rooms are
simulated (input.rooms) and as long as the recipe's (1 s).

Run: python -m bench.mix [--runs 5]
"""

import argparse

import numpy as np
import tensorflow as tf

from bench import timing
from input import rooms
import ops

SHAPES = {  # name -> (batch, seconds, sample rate)
    "CPU default (16 x 1 s at 16 kHz)": (16, 1.0, 16000),
    "GPU recipe per replica (32 x 10 s at 48 kHz)": (32, 10.0, 48000),
}


def variants(sample_rate: int, responses: np.ndarray):
  """name -> augmentation taking (clean, noise, seed)."""
  full = dict(rirs=responses, rir_proba=1.0, second_noise_proba=1.0, clip_proba=1.0,
              band_limit_proba=1.0)
  reverb = ops.RevEcho(sample_rate=sample_rate, proba=1.0)
  return {
      "Mix: level + SNR": ops.Mix(sample_rate=sample_rate),
      "Mix: + second noise (p=1)": ops.Mix(sample_rate=sample_rate, second_noise_proba=1.0),
      "Mix: + rooms (p=1, 1 s responses)": ops.Mix(sample_rate=sample_rate, rirs=responses,
                                                  rir_proba=1.0),
      "Mix: everything (p=1)": ops.Mix(sample_rate=sample_rate, **full),
      "RevEcho (p=1), for comparison": lambda clean, noise, seed: reverb(clean + noise, clean,
                                                                        seed),
  }


def main():
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument("--runs", type=int, default=5)
  parser.add_argument("--rooms", type=int, default=64)
  args = parser.parse_args()
  print(f"ops.Mix, XLA-compiled, medians of {args.runs} runs; {timing.machine()}")
  for shape_name, (batch, seconds, rate) in SHAPES.items():
    length = int(seconds * rate)
    rng = np.random.default_rng(0)
    clean = tf.constant(rng.normal(0, 0.1, [batch, length]).astype(np.float32))
    noise = tf.constant(rng.normal(0, 0.1, [batch, length]).astype(np.float32))
    responses = np.stack([r for r, _ in rooms.simulated_set(args.rooms, sample_rate=rate,
                                                           seconds=1.0)])
    seed = tf.constant([1, 2], tf.int64)
    rows = []
    for name, augment in variants(rate, responses).items():
      compiled = tf.function(augment, jit_compile=True)
      call = lambda fn=compiled: fn(clean, noise, seed)  # pylint: disable=cell-var-from-loop
      seconds_per_batch = timing.median_seconds(call, runs=args.runs)
      rows.append((name, seconds_per_batch * 1e3, seconds_per_batch * 1e3 / batch,
                   batch * seconds / seconds_per_batch))
    print(f"\n{shape_name}")
    print(timing.table(["variant", "ms/batch", "ms/example", "audio s/s"], rows))


if __name__ == "__main__":
  main()
