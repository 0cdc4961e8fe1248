"""Benchmark: the project's resampler (soxr, very high quality) vs tensorflow-io and SciPy: accuracy against exact values, and speed.

Run: python -m bench.resample [--seconds 60] [--runs 3]   (SciPy comes with the metrics extra)

Accuracy: random-phase tones up to 0.9 x the lower Nyquist frequency, the
error of each resampler's output against the tones' exact values at the new
sample times (dB, lower is better; tensorflow-io's delay, found once per
pair by cross-correlation, is removed, so only its filter is judged).
Speed: seconds of audio resampled per second of wall time, mono float32.
"""

import argparse
import functools
import math

import numpy as np
import scipy.signal
import tensorflow as tf

from bench import timing
from input import audio
from input import decoders

PAIRS = ((48000, 16000), (44100, 16000), (16000, 48000), (22050, 48000), (48000, 44100))


def _tfio(signal, rate_in, rate_out):
  import tensorflow_io as tfio  # pylint: disable=g-import-not-at-top
  return tfio.audio.resample(tf.constant(signal, tf.float32)[:, None], rate_in=rate_in,
                             rate_out=rate_out).numpy()[:, 0]


@functools.lru_cache(maxsize=None)
def _tfio_delay(rate_in: int, rate_out: int) -> int:
  """Output samples by which tensorflow-io delays a signal: the lag that best matches the
  exact resampler on one second of noise."""
  probe = np.random.default_rng(2).normal(0, 0.1, rate_in).astype(np.float32)
  out, reference = _tfio(probe, rate_in, rate_out), audio.resample(probe, rate_in, rate_out)
  span = len(reference) // 2
  return max(range(400), key=lambda k: float(np.dot(out[k:k + span], reference[:span])))


def tfio_aligned(signal, rate_in, rate_out):
  """tensorflow-io's resample with its delay removed (so only its filter is judged)."""
  length = int(round(len(signal) * rate_out / rate_in))
  out = _tfio(signal, rate_in, rate_out)[_tfio_delay(rate_in, rate_out):]
  return np.pad(out, (0, max(0, length - len(out))))[:length]


RESAMPLERS = {
    "soxr VHQ (this project)": audio.resample,
    "scipy resample_poly": lambda x, a, b: scipy.signal.resample_poly(
        x, b // math.gcd(a, b), a // math.gcd(a, b)).astype(np.float32),
}
if decoders.problem(decoders.TENSORFLOW_IO) is None:  # its compiled ops load (TF 2.16/2.17)
  RESAMPLERS["tensorflow-io"] = tfio_aligned


def passband_error_db(resample, rate_in, rate_out, seconds=5.0):
  top = 0.9 * min(rate_in, rate_out) / 2
  rng = np.random.default_rng(0)
  frequencies, phases = rng.uniform(20, top, 16), rng.uniform(0, 2 * np.pi, 16)
  exact = lambda t: sum(np.sin(2 * np.pi * f * t + p) for f, p in zip(frequencies, phases))  # pylint: disable=g-long-lambda
  signal = exact(np.arange(int(seconds * rate_in)) / rate_in).astype(np.float32)
  out = np.asarray(resample(signal, rate_in, rate_out), np.float64)
  reference = exact(np.arange(len(out)) / rate_out)
  trim = rate_out // 10
  error = out[trim:-trim] - reference[trim:-trim]
  return 10 * np.log10(np.sum(error ** 2) / np.sum(reference[trim:-trim] ** 2))


def main():
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument("--seconds", type=float, default=60.0)
  parser.add_argument("--runs", type=int, default=3)
  args = parser.parse_args()
  accuracy, speed = [], []
  for rate_in, rate_out in PAIRS:
    pair = f"{rate_in / 1000:g} -> {rate_out / 1000:g} kHz"
    accuracy.append([pair] + [round(passband_error_db(fn, rate_in, rate_out), 1)
                              for fn in RESAMPLERS.values()])
    signal = np.random.default_rng(1).normal(0, 0.1, int(args.seconds * rate_in))
    signal = signal.astype(np.float32)
    speed.append([pair] + [round(args.seconds / timing.median_seconds(
        lambda fn=fn: fn(signal, rate_in, rate_out), runs=args.runs)) for fn in
                           RESAMPLERS.values()])
  print(timing.machine())
  print("Passband error against exact values, dB (lower is better)")
  print(timing.table(["pair", *RESAMPLERS], accuracy))
  if "tensorflow-io" not in RESAMPLERS:
    print(f"tensorflow-io: not measured, {decoders.problem(decoders.TENSORFLOW_IO)}")
  print(f"\nSpeed, x real time ({args.seconds:g} s mono float32, median of {args.runs})")
  print(timing.table(["pair", *RESAMPLERS], speed))


if __name__ == "__main__":
  main()
