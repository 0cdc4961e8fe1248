"""Tests for input.audio.resample against exact (float64, analytic) values: passband, stopband, round trip, alignment, drift."""

import itertools

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from input import audio

RATES = (8000, 16000, 22050, 24000, 32000, 44100, 48000)
PAIRS = [pair for pair in itertools.permutations(RATES, 2)]


def tones(frequencies, rate, seconds, seed=0):
  """`(signal at rate, f(t) for exact values)` of unit-variance random-phase tones."""
  rng = np.random.default_rng(seed)
  phases = rng.uniform(0, 2 * np.pi, len(frequencies))
  exact = lambda t: sum(np.sin(2 * np.pi * f * t + p) for f, p in zip(frequencies, phases))  # pylint: disable=g-long-lambda
  return exact(np.arange(int(seconds * rate)) / rate), exact


def error_db(estimate, reference, trim):
  estimate, reference = estimate[trim:-trim], reference[trim:-trim]
  return 10 * np.log10(np.sum((estimate - reference) ** 2) / np.sum(reference ** 2))


class ResampleTest(tf.test.TestCase, parameterized.TestCase):

  @parameterized.parameters(*PAIRS)
  def test_passband_matches_exact_values(self, rate_in, rate_out):
    top = 0.9 * min(rate_in, rate_out) / 2  # content below 0.9 x the lower Nyquist
    frequencies = np.random.default_rng(1).uniform(20, top, 12).tolist() + [top]
    signal, exact = tones(frequencies, rate_in, 1.0)
    out = audio.resample(signal.astype(np.float32), rate_in, rate_out)
    self.assertEqual(out.dtype, np.float32)
    self.assertLen(out, round(len(signal) * rate_out / rate_in))  # length-preserving
    reference = exact(np.arange(len(out)) / rate_out)
    self.assertLess(error_db(out, reference, rate_out // 20), -40.0)

  @parameterized.parameters(*[(a, b) for a, b in PAIRS if b < a])
  def test_stopband_content_is_removed(self, rate_in, rate_out):
    nyquist_in, nyquist_out = rate_in / 2, rate_out / 2
    frequencies = np.linspace(1.1 * nyquist_out, 0.95 * nyquist_in, 8)
    signal, _ = tones(frequencies, rate_in, 1.0)
    out = audio.resample(signal.astype(np.float32), rate_in, rate_out)
    trim = rate_out // 20
    leakage = np.mean(out[trim:-trim] ** 2) / np.mean(signal ** 2)
    self.assertLess(10 * np.log10(leakage), -60.0)

  @parameterized.parameters((48000, 16000), (44100, 16000), (22050, 48000))
  def test_a_round_trip_returns_band_limited_content(self, rate, via):
    top = 0.9 * min(rate, via) / 2
    signal, _ = tones(np.random.default_rng(2).uniform(20, top, 12), rate, 1.0)
    back = audio.resample(audio.resample(signal.astype(np.float32), rate, via), via, rate)
    self.assertLess(error_db(back, signal, rate // 20), -40.0)

  @parameterized.parameters((44100, 16000), (16000, 44100), (48000, 22050))
  def test_a_pulse_stays_where_it_was_to_a_fraction_of_a_sample(self, rate_in, rate_out):
    center, width = 0.5, 0.002  # s: a Gaussian pulse, band-limited well below both rates
    t_in = np.arange(rate_in) / rate_in
    pulse = np.exp(-0.5 * ((t_in - center) / width) ** 2).astype(np.float32)
    out = audio.resample(pulse, rate_in, rate_out).astype(np.float64)
    t_out = np.arange(len(out)) / rate_out
    centroid = np.sum(t_out * out) / np.sum(out)
    self.assertLess(abs(centroid - center) * rate_out, 0.01)  # samples

  def test_a_long_file_does_not_drift(self):
    rate_in, rate_out, seconds = 44100, 16000, 400.0
    signal, exact = tones([440.0, 1234.5, 6000.0], rate_in, seconds)
    out = audio.resample(signal.astype(np.float32), rate_in, rate_out)
    tail = slice(len(out) - 10 * rate_out, len(out) - rate_out)
    reference = exact(np.arange(len(out)) / rate_out)
    self.assertLess(error_db(out[tail], reference[tail], 1), -40.0)

  def test_same_rate_is_the_identity_and_bad_rates_are_named(self):
    x = np.arange(5, dtype=np.float32)
    self.assertIs(audio.resample(x, 16000, 16000), x)
    with self.assertRaisesRegex(audio.AudioError, "clip.wav: rate_out=0 must be a positive"):
      audio.resample(x, 16000, 0, name="clip.wav")


if __name__ == "__main__":
  tf.test.main()
