"""Tests for trainer.serving.kept_input: the share of the input added back, by frequency."""

from unittest import mock

import numpy as np
import tensorflow as tf

from trainer.serving import kept_input

RATE = 48000
EDGE = RATE // 1000  # 1 ms: how far the filter's edge effects reach


def tone(hz, seconds=1.0, rate=RATE):
  return np.sin(2 * np.pi * hz * np.arange(int(seconds * rate)) / rate)


class KeptInputTest(tf.test.TestCase):

  def test_shares_rise_to_the_presence_band_and_fall_back(self):
    hz = np.array([100.0, 1500.0, 2121.0, 3000.0, 4000.0, 5000.0, 7000.0, 20000.0])
    self.assertAllClose(kept_input.shares(hz, 0.1, 0.6),
                        [0.1, 0.1, 0.35, 0.6, 0.6, 0.6, 0.1, 0.1], atol=1e-3)

  def test_each_frequency_keeps_its_share_of_what_the_model_removed(self):
    signal = 0.3 * tone(500.0) + 0.3 * tone(4000.0) + 0.3 * tone(12000.0)
    out = kept_input.add_back(np.zeros_like(signal), signal, RATE, keep=0.2,  # all was removed
                         presence_keep=0.5)
    expected = 0.2 * 0.3 * tone(500.0) + 0.5 * 0.3 * tone(4000.0) + 0.2 * 0.3 * tone(12000.0)
    self.assertEqual(out.dtype, np.float32)
    inside = slice(EDGE, -EDGE)
    self.assertAllClose(out[inside], expected[inside], atol=2e-3)

  def test_a_zero_phase_filter_on_broadband_audio(self):
    signal = np.random.default_rng(0).normal(size=RATE // 3).astype(np.float32)
    out = kept_input.add_back(0.25 * signal, signal, RATE, keep=0.15, presence_keep=0.5)
    self.assertEqual(out.shape, signal.shape)
    response = np.fft.rfft(out) / np.fft.rfft(signal)
    expected = 0.25 + 0.75 * kept_input.shares(np.fft.rfftfreq(len(signal), 1.0 / RATE),
                                               0.15, 0.5)
    self.assertLess(np.median(np.abs(response - expected)), 0.01)

  def test_a_piece_of_a_longer_signal_matches_it_beyond_a_millisecond_of_its_ends(self):
    signal = np.random.default_rng(2).normal(size=2 * RATE).astype(np.float32)
    whole = kept_input.add_back(np.zeros_like(signal), signal, RATE)
    start, stop = RATE // 2, RATE
    piece = kept_input.add_back(np.zeros(stop - start, np.float32), signal[start:stop], RATE)
    error = np.abs(piece - whole[start:stop])
    self.assertLess(error[EDGE:-EDGE].max(), 0.03 * whole.std())  # -30 dB
    self.assertLess(error[10 * EDGE:-10 * EDGE].max(), 0.003 * whole.std())

  def test_blocks_join_without_seams(self):
    rate = 8000
    signal = np.random.default_rng(3).normal(size=12 * rate + 77).astype(np.float32)
    blocks = kept_input.add_back(0.5 * signal, signal, rate)  # 5 s blocks
    with mock.patch.object(kept_input, "BLOCK_SECONDS", 20.0):
      whole = kept_input.add_back(0.5 * signal, signal, rate)
    self.assertAllClose(blocks, whole, atol=1e-4)

  def test_equal_shares_are_a_plain_mix(self):
    signal = np.random.default_rng(1).normal(size=1000).astype(np.float32)
    out = kept_input.add_back(0.5 * signal, signal, RATE, keep=0.3, presence_keep=0.3)
    self.assertAllClose(out, 0.65 * signal, atol=1e-6)
    one = kept_input.add_back(np.zeros(1, np.float32), signal[:1], RATE, keep=0.15,
                         presence_keep=0.5)  # one sample is DC: outside the band
    self.assertAllClose(one, 0.15 * signal[:1])

  def test_bad_arguments(self):
    signal = np.zeros(100, np.float32)
    with self.assertRaisesRegex(ValueError, r"keep_presence=1.2 must be in \[0, 1\]"):
      kept_input.add_back(signal, signal, RATE, presence_keep=1.2)
    with self.assertRaisesRegex(ValueError, r"keep_input=-0.1 must be in \[0, 1\]"):
      kept_input.add_back(signal, signal, RATE, keep=-0.1)
    with self.assertRaisesRegex(ValueError, r"same shape"):
      kept_input.add_back(signal[:50], signal, RATE)


if __name__ == "__main__":
  tf.test.main()
