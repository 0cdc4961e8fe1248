"""Tests for ops.kept_input: the share of the input kept, by frequency, as a causal filter of the residual, offline and step by step (a mask model's gain floor: tests/trainer/models/test_mask.py)."""

import numpy as np
import tensorflow as tf

from ops import kept_input

RATE = 48000
EDGE = RATE // 1000  # 1 ms: how far the filter's edge effects reach


def tone(hz, seconds=1.0, rate=RATE):
  return np.sin(2 * np.pi * hz * np.arange(int(seconds * rate)) / rate).astype(np.float32)


def add_back(enhanced, signal, rate=RATE, keep=kept_input.KEEP,
             presence_keep=kept_input.PRESENCE_KEEP):
  """kept_input.ResidualFilter on one mono waveform."""
  return kept_input.ResidualFilter(rate, keep, presence_keep)(
      tf.constant(enhanced[None]), tf.constant(signal[None]))[0].numpy()


class KeptInputTest(tf.test.TestCase):

  def test_shares_rise_to_the_presence_band_and_fall_back(self):
    hz = np.array([100.0, 1500.0, 2121.0, 3000.0, 4000.0, 5000.0, 7000.0, 20000.0])
    self.assertAllClose(kept_input.shares(hz, 0.1, 0.6),
                        [0.1, 0.1, 0.35, 0.6, 0.6, 0.6, 0.1, 0.1], atol=1e-3)

  def test_each_frequency_keeps_its_share_of_what_the_model_removed(self):
    signal = 0.3 * tone(500.0) + 0.3 * tone(4000.0) + 0.3 * tone(12000.0)
    out = add_back(np.zeros_like(signal), signal, keep=0.2, presence_keep=0.5)
    self.assertEqual(out.dtype, np.float32)
    amplitude = np.abs(np.fft.rfft(out[RATE // 10:])) * 2 / len(out[RATE // 10:])
    hz = np.fft.rfftfreq(len(out[RATE // 10:]), 1.0 / RATE)
    self.assertAllClose([amplitude[np.argmin(np.abs(hz - f))] for f in (500, 4000, 12000)],
                        [0.3 * 0.2, 0.3 * 0.5, 0.3 * 0.2], atol=2e-3)

  def test_the_filter_is_causal_and_its_gain_is_the_share(self):
    for rate in (8000, 16000, 48000):
      taps = kept_input.residual_filter(rate, 0.15, 0.5).numpy()
      self.assertLen(taps, round(kept_input.FILTER_SECONDS * rate))
      self.assertEqual(kept_input.filter_taps(rate), len(taps))
      response = np.abs(np.fft.rfft(taps, 8192))
      expected = kept_input.shares(np.fft.rfftfreq(8192, 1.0 / rate), 0.15, 0.5).numpy()
      self.assertAllClose(response, expected, atol=0.01)
    signal = np.random.default_rng(0).normal(size=RATE // 10).astype(np.float32)
    later = signal.copy()
    later[3000:] *= -2.0
    self.assertAllClose(add_back(0.25 * signal, signal)[:3000],
                        add_back(0.25 * later, later)[:3000], atol=1e-6)

  def test_a_piece_of_a_longer_signal_matches_it_once_the_filter_has_filled(self):
    signal = np.random.default_rng(2).normal(size=RATE).astype(np.float32)
    whole = add_back(np.zeros_like(signal), signal)
    start, stop = RATE // 2, RATE
    piece = add_back(np.zeros(stop - start, np.float32), signal[start:stop])
    filled = kept_input.filter_taps(RATE)
    self.assertAllClose(piece[filled:], whole[start + filled:stop], atol=1e-5)

  def test_equal_shares_are_a_plain_mix_and_none_is_the_model_alone(self):
    signal = np.random.default_rng(1).normal(size=1000).astype(np.float32)
    self.assertAllClose(add_back(0.5 * signal, signal, keep=0.3, presence_keep=0.3),
                        0.65 * signal, atol=1e-5)
    self.assertAllClose(add_back(0.5 * signal, signal, keep=0.0, presence_keep=0.0),
                        0.5 * signal, atol=1e-7)
    self.assertEqual(add_back(np.zeros(0, np.float32), np.zeros(0, np.float32)).shape, (0,))


  def test_its_step_over_any_split_equals_the_filter_offline(self):
    rng = np.random.default_rng(4)
    signal, enhanced = (rng.normal(size=(2, 3001)) * 0.1).astype(np.float32)
    keep = kept_input.ResidualFilter(RATE, 0.15, 0.5)
    history, out, start = tf.zeros(keep.state_shape), [], 0
    for size in (1, 7, 200, *rng.integers(1, 400, 20)):
      piece, history = keep.step(tf.constant(enhanced[start:start + size]),
                                 tf.constant(signal[start:start + size]), history)
      out.append(piece.numpy())
      start += size
    stepped = np.concatenate(out)
    self.assertAllClose(stepped, add_back(enhanced, signal)[:len(stepped)], atol=1e-6)


class GainFloorTest(tf.test.TestCase):

  def test_the_presence_share_follows_the_frames_speech_activity(self):
    fft_length, rate = 512, 16000
    floor = kept_input.GainFloor(fft_length, rate, 0.1, 0.5)
    frequencies = np.arange(fft_length // 2 + 1) * rate / fft_length
    speech = (frequencies >= 300) & (frequencies < 3000)
    pause = np.full(len(frequencies), 0.01, np.float32)
    talk = np.where(speech, 0.99, 0.01).astype(np.float32)
    floored = floor(tf.constant(np.stack([pause, talk])[None])).numpy()[0]
    shares = [(out - gain) / (1.0 - gain) for gain, out in zip((pause, talk), floored)]
    in_presence = (frequencies >= 3000) & (frequencies <= 5000)
    below = frequencies < 1500
    # a pause (activity 0.01) keeps about `keep`; speech (0.99), about `presence_keep` there
    self.assertAllClose(shares[0][in_presence], np.full(in_presence.sum(), 0.1 + 0.4 * 0.01),
                        atol=1e-6)
    self.assertAllClose(shares[1][in_presence], np.full(in_presence.sum(), 0.1 + 0.4 * 0.99),
                        atol=1e-5)
    self.assertAllClose(shares[0][below], np.full(below.sum(), 0.1), atol=1e-6)
    self.assertAllClose(kept_input.GainFloor(fft_length, rate, 0.0, 0.0)(talk), talk)


if __name__ == "__main__":
  tf.test.main()
