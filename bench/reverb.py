"""Benchmark: NumPy shift-and-add reverb vs the RevEcho op (eager, XLA) vs its FFT floor.

Run: python -m bench.reverb [--runs 5]
"""

import argparse

import numpy as np
import tensorflow as tf

from bench import numpy_reverb
from bench import timing
import ops

DRAWS = {  # name -> (rt60 range, first_delay range)
    "typical (default ranges)": ((0.3, 1.3), (0.01, 0.03)),
    "worst (rt60 1.3 s, first_delay 10 ms)": ((1.3, 1.3), (0.01, 0.01)),
}


def main():
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument("--runs", type=int, default=5)
  parser.add_argument("--batch", type=int, default=8)
  parser.add_argument("--seconds", type=float, default=10.0)
  parser.add_argument("--sample_rate", type=int, default=48000)
  args = parser.parse_args()

  length = int(args.seconds * args.sample_rate)
  rng = np.random.default_rng(0)
  clean = rng.normal(0, 0.1, [args.batch, length]).astype(np.float32)
  noisy = clean + rng.normal(0, 0.05, [args.batch, length]).astype(np.float32)
  noisy_t, clean_t = tf.constant(noisy), tf.constant(clean)
  print(f"RevEcho on a batch of {args.batch} x {args.seconds:g} s at {args.sample_rate} Hz "
        f"(noise and clean, proba=1), medians of {args.runs} runs; {timing.machine()}")

  for draw_name, (rt60, first_delay) in DRAWS.items():
    # The IR bound (and so the FFT length) always comes from the default ranges.
    reverb = ops.RevEcho(sample_rate=args.sample_rate, proba=1.0)
    draws = ops.RevEcho(sample_rate=args.sample_rate, proba=1.0, rt60=rt60,
                        first_delay=first_delay).sample([0, 1], args.batch, length)
    draws_np = tf.nest.map_structure(np.asarray, draws)
    _, ir_length = reverb.bounds(length)
    n_fft = ops.spectral.fft_length(length + ir_length - 1)
    compiled = tf.function(reverb.apply, jit_compile=True)
    irs = tf.random.normal([2, args.batch, ir_length])
    fft_floor = tf.function(
        lambda: (ops.apply_ir(noisy_t, irs[0]), ops.apply_ir(clean_t, irs[1])),
        jit_compile=True)

    def loop(dtype):
      return lambda: numpy_reverb.rev_echo_numpy(  # pylint: disable=g-long-lambda
          noisy.astype(dtype), clean.astype(dtype), draws_np,
          sample_rate=args.sample_rate)

    want = loop(np.float64)()
    got = compiled(noisy_t, clean_t, draws)
    error = max(np.abs(g.numpy() - w).max() / np.abs(w).max() for g, w in zip(got, want))

    cases = [
        ("NumPy shift-and-add loop, float64", loop(np.float64)),
        ("NumPy shift-and-add loop, float32", loop(np.float32)),
        ("RevEcho op, eager", lambda: reverb.apply(noisy_t, clean_t, draws)),
        ("RevEcho op, jit_compile=True", lambda: compiled(noisy_t, clean_t, draws)),
        (f"FFT floor: 2 x apply_ir at n={n_fft}, jit", fft_floor),
    ]
    times = {name: timing.median_seconds(fn, runs=args.runs) for name, fn in cases}
    op_time = times["RevEcho op, jit_compile=True"]
    floor_time = times[cases[-1][0]]
    echoes = sum(int(np.count_nonzero(
        ops.rev_echo_ir(draws.initial, draws.first_delay, draws.rt60, u, length=length,
                        sample_rate=args.sample_rate) != 0)) for u in
                 (draws.noise_jitter, draws.clean_jitter)) / (2 * args.batch)
    print(f"\n{draw_name}: {echoes:.0f} echoes (full passes of the loop) per signal; "
          f"max relative difference op vs float64 loop {error:.1e}")
    print(timing.table(
        ["variant", "ms/batch", "ms/clip", "compiled op speed-up", "x FFT floor"],
        [(name, t * 1e3, t * 1e3 / args.batch, t / op_time, t / floor_time)
         for name, t in times.items()]))


if __name__ == "__main__":
  main()
