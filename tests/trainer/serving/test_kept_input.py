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
    expected = 0.2 * 0.3 * tone(500.0) + 0.5 * 0.3 * tone(4000.0) + 0.2 * 0.3 * tone(12000.0)
    self.assertEqual(out.dtype, np.float32)
    self.assertAllClose(out[EDGE:-EDGE], expected[EDGE:-EDGE], atol=2e-3)

  def test_a_zero_phase_filter_on_broadband_audio(self):
    signal = np.random.default_rng(0).normal(size=RATE // 3).astype(np.float32)
    out = add_back(0.25 * signal, signal, keep=0.15, presence_keep=0.5)
    self.assertEqual(out.shape, signal.shape)
    response = np.fft.rfft(out) / np.fft.rfft(signal)
    expected = 0.25 + 0.75 * kept_input.shares(np.fft.rfftfreq(len(signal), 1.0 / RATE),
                                               0.15, 0.5).numpy()
    self.assertLess(np.median(np.abs(response - expected)), 0.01)

  def test_a_piece_of_a_longer_signal_matches_it_beyond_a_millisecond_of_its_ends(self):
    signal = np.random.default_rng(2).normal(size=2 * RATE).astype(np.float32)
    whole = add_back(np.zeros_like(signal), signal)
    start, stop = RATE // 2, RATE
    piece = add_back(np.zeros(stop - start, np.float32), signal[start:stop])
    error = np.abs(piece - whole[start:stop])
    self.assertLess(error[EDGE:-EDGE].max(), 0.03 * whole.std())  # -30 dB
    self.assertLess(error[10 * EDGE:-10 * EDGE].max(), 0.003 * whole.std())

  def test_equal_shares_are_a_plain_mix_at_any_length(self):
    signal = np.random.default_rng(1).normal(size=1000).astype(np.float32)
    self.assertAllClose(add_back(0.5 * signal, signal, keep=0.3, presence_keep=0.3),
                        0.65 * signal, atol=1e-5)
    one = add_back(np.zeros(1, np.float32), signal[:1])  # one sample is DC: outside the band
    self.assertAllClose(one, kept_input.KEEP * signal[:1])
    self.assertEqual(add_back(np.zeros(0, np.float32), np.zeros(0, np.float32)).shape, (0,))

  def test_a_mask_model_keeps_its_share_as_a_floor_on_its_gain(self):
    model = gain(mask.MaskDenoiser(sample_rate=16000, hidden=4, depth=1), 0.2)
    signal = 0.3 * tone(500.0, rate=16000) + 0.3 * tone(4000.0, rate=16000)
    kept = kept_input.enhance(model, tf.constant(signal[None]), 16000, 0.1, 0.5)[0]
    expected = (0.2 + 0.8 * 0.1) * 0.3 * tone(500.0, rate=16000) + (
        0.2 + 0.8 * 0.5) * 0.3 * tone(4000.0, rate=16000)
    self.assertAllClose(kept[200:-200], expected[200:-200], atol=3e-3)
    # The same shares as a filter of the residual, within what framing changes:
    filtered = add_back(model(signal[None])[0].numpy(), signal, 16000, 0.1, 0.5)
    self.assertAllClose(kept[200:-200], filtered[200:-200], atol=3e-3)
    opened = gain(model, 1.0)
    self.assertAllClose(kept_input.enhance(opened, tf.constant(signal[None]), 16000, 0.1,
                                           0.5)[0], signal, atol=1e-5)


if __name__ == "__main__":
  tf.test.main()
