"""Tests for trainer.band_extension through trainer.denoise: a lower-rate model's output keeps the file's upper band, gated as the model gated its top band."""

import types

import numpy as np
import tensorflow as tf

from trainer import band_extension
from trainer import denoise

RATE, MODEL_RATE = 48000, 16000


def model(gain_fn):
  """A stand-in for an exported 16 kHz model: multiplies its input by `gain_fn(t)`."""

  def denoise_fn(batch):
    batch = batch.numpy()
    return batch * gain_fn(np.arange(batch.shape[1]) / MODEL_RATE)[None].astype(np.float32)

  return types.SimpleNamespace(sample_rate=tf.constant(MODEL_RATE), denoise=denoise_fn)


def band_power(x, low, high):
  power = np.abs(np.fft.rfft(x.astype(np.float64))) ** 2
  hz = np.fft.rfftfreq(len(x), 1.0 / RATE)
  return power[(hz >= low) & (hz < high)].sum()


def noise(seconds=2.0, seed=0):
  return (0.1 * np.random.default_rng(seed).normal(size=int(seconds * RATE))).astype(np.float32)


class BandExtensionTest(tf.test.TestCase):

  def test_a_model_that_keeps_everything_returns_the_whole_band(self):
    signal = noise()
    out = denoise.denoise_signal(model(lambda t: np.ones_like(t)), signal, RATE)
    self.assertEqual(out.shape, signal.shape)
    error = np.sum((out - signal).astype(np.float64) ** 2) / np.sum(signal.astype(np.float64)**2)
    self.assertLess(10 * np.log10(error), -40)  # the bands add back up
    self.assertAllClose(band_power(out, 9000, 24000) / band_power(signal, 9000, 24000), 1.0,
                        rtol=0.01)

  def test_the_upper_band_follows_the_models_top_band_gain(self):
    signal = noise()
    out = denoise.denoise_signal(model(lambda t: np.full_like(t, 0.25)), signal, RATE)
    self.assertAllClose(band_power(out, 9000, 24000) / band_power(signal, 9000, 24000),
                        0.25**2, rtol=0.02)

  def test_the_gain_moves_with_time(self):
    signal = noise()
    gate = lambda t: (t >= 1.0).astype(np.float64)  # removes the first second, keeps the rest
    out = denoise.denoise_signal(model(gate), signal, RATE)
    first, second = out[:int(0.9 * RATE)], out[int(1.1 * RATE):]
    self.assertLess(band_power(first, 9000, 24000), 1e-4 * band_power(second, 9000, 24000))
    self.assertAllClose(band_power(second, 9000, 24000),
                        band_power(signal[int(1.1 * RATE):], 9000, 24000), rtol=0.02)

  def test_gains_come_from_the_top_quarter_of_the_models_band(self):
    t = np.arange(MODEL_RATE) / MODEL_RATE
    low, top = np.sin(2 * np.pi * 1000 * t), np.sin(2 * np.pi * 7000 * t)
    gains = band_extension.top_band_gains(low + top, low + 0.5 * top, MODEL_RATE)
    self.assertAllClose(gains[5:-5], np.full(len(gains) - 10, 0.5), atol=1e-3)

  def test_a_file_at_the_models_rate_or_below_is_not_extended(self):
    signal = noise()[:MODEL_RATE]
    out = denoise.denoise_signal(model(lambda t: np.full_like(t, 0.5)), signal, MODEL_RATE)
    self.assertAllClose(out, 0.5 * signal, atol=1e-6)


if __name__ == "__main__":
  tf.test.main()
