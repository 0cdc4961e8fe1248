"""Tests for trainer.serving.kept_input: the share of the input kept, by frequency, as a filter of the residual and as a mask model's gain floor."""

import numpy as np
import tensorflow as tf

from trainer.models import mask
from trainer.serving import kept_input

RATE = 48000
EDGE = RATE // 1000  # 1 ms: how far the filter's edge effects reach


def tone(hz, seconds=1.0, rate=RATE):
  return np.sin(2 * np.pi * hz * np.arange(int(seconds * rate)) / rate).astype(np.float32)


def add_back(enhanced, signal, rate=RATE, keep=kept_input.KEEP,
             presence_keep=kept_input.PRESENCE_KEEP):
  """kept_input.add_back on one mono waveform."""
  return kept_input.add_back(tf.constant(enhanced[None]), tf.constant(signal[None]), rate,
                             keep, presence_keep)[0].numpy()


def gain(model, value):
  """Sets a mask model's gain to `value` in every bin, whatever its input."""
  model.project_out.kernel.assign(tf.zeros_like(model.project_out.kernel))
  logit = np.log((value - mask.FLOOR) / (1.0 - value)) if value < 1 else 40.0
  model.project_out.bias.assign(tf.fill(model.project_out.bias.shape, float(logit)))
  return model


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

  def test_a_mask_model_keeps_its_share_as_a_floor_on_its_gain(self):
    model = gain(mask.MaskDenoiser(sample_rate=16000, hidden=4, depth=1), 0.2)
    signal = 0.3 * tone(500.0, rate=16000) + 0.3 * tone(4000.0, rate=16000)
    kept = kept_input.enhance(model, tf.constant(signal[None]), 16000, 0.1, 0.5)[0]
    expected = (0.2 + 0.8 * 0.1) * 0.3 * tone(500.0, rate=16000) + (
        0.2 + 0.8 * 0.5) * 0.3 * tone(4000.0, rate=16000)
    self.assertAllClose(kept[200:-200], expected[200:-200], atol=3e-3)
    opened = gain(model, 1.0)
    self.assertAllClose(kept_input.enhance(opened, tf.constant(signal[None]), 16000, 0.1,
                                           0.5)[0], signal, atol=1e-5)


if __name__ == "__main__":
  tf.test.main()
