"""Tests for ops.spectral: 5-smooth FFT sizes and STFT magnitudes."""

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from ops import spectral


class FftLengthTest(parameterized.TestCase):

  @parameterized.parameters((1, 1), (7, 8), (11, 12), (557998, 559872),
                            (2**20 + 1, 1049760), (960000, 960000))
  def test_smallest_5_smooth(self, n, expected):
    self.assertEqual(spectral.fft_length(n), expected)

  def test_matches_brute_force(self):
    smooth = lambda m: all(  # pylint: disable=g-long-lambda
        m % p for p in (7, 11, 13)) and _only_235(m)
    for n in range(1, 400):
      self.assertEqual(spectral.fft_length(n), next(m for m in range(n, 2 * n + 1)
                                                  if smooth(m)))


def _only_235(m):
  for p in (2, 3, 5):
    while m % p == 0:
      m //= p
  return m == 1


class StftMagnitudeTest(tf.test.TestCase):

  def test_a_tone_peaks_in_its_bin(self):
    rate, window = 8000, 256
    tone = np.sin(2 * np.pi * 1000 * np.arange(4000) / rate).astype(np.float32)
    magnitude = spectral.stft_magnitude(tf.constant(tone[None]), window, 64)
    self.assertEqual(magnitude.shape[-1], spectral.fft_length(window) // 2 + 1)
    self.assertEqual(int(np.argmax(np.mean(magnitude[0], axis=0))), 1000 * window // rate)


if __name__ == "__main__":
  tf.test.main()
