"""Tests for trainer.serving.band_extension through trainer.serving.file_denoising: a lower-rate model's output keeps the file's upper band, gated as the model gated its top band."""

import types

import numpy as np
import tensorflow as tf

from trainer.serving import band_extension
from ops import kept_input
from trainer.serving import file_denoising

RATE, MODEL_RATE = 48000, 16000
RAW = dict(keep_input=0, keep_presence=0)  # the model's output alone, no input added back


def model(gain_fn):
  """A stand-in for an exported 16 kHz model: multiplies its input by `gain_fn(t)`, then
  keeps a share of the input as exports do."""

  def denoise_keeping(batch, keep_input, keep_presence):
    gains = gain_fn(np.arange(batch.shape[1]) / MODEL_RATE)[None].astype(np.float32)
    return kept_input.ResidualFilter(MODEL_RATE, keep_input, keep_presence)(batch * gains,
                                                                            batch)

  return types.SimpleNamespace(sample_rate=tf.constant(MODEL_RATE),
                               denoise_keeping=denoise_keeping,
                               keep_input=tf.constant(kept_input.KEEP),
                               keep_presence=tf.constant(kept_input.PRESENCE_KEEP))


def band_power(x, low, high):
  power = np.abs(np.fft.rfft(x.astype(np.float64))) ** 2
  hz = np.fft.rfftfreq(len(x), 1.0 / RATE)
  return power[(hz >= low) & (hz < high)].sum()


def noise(seconds=2.0, seed=0, slope_db=0.0):
  """Gaussian noise whose power falls `slope_db` per octave above 1 kHz (0: white)."""
  white = np.random.default_rng(seed).normal(size=int(seconds * RATE))
  spectrum = np.fft.rfft(white)
  hz = np.maximum(np.fft.rfftfreq(len(white), 1.0 / RATE), 1000.0)
  shaped = np.fft.irfft(spectrum * (hz / 1000.0) ** (slope_db / 20.0 / np.log10(2.0)),
                        len(white))
  return (0.1 * shaped / shaped.std()).astype(np.float32)


def speech_like(**kwargs):
  return noise(slope_db=band_extension.SPEECH_SLOPE_DB, **kwargs)


class BandExtensionTest(tf.test.TestCase):

  def test_the_speech_ratio_is_that_of_a_spectrum_with_the_speech_slope(self):
    signal = speech_like(seconds=8.0)
    measured = band_power(signal, 8000, 24000) / band_power(signal, 5600, 7200)
    self.assertAllClose(band_extension.speech_ratio(MODEL_RATE, RATE), measured, rtol=0.05)

  def test_a_speech_like_band_that_the_model_keeps_is_returned_whole(self):
    signal = speech_like()
    out = file_denoising.denoise_signal(model(np.ones_like), signal, RATE, **RAW)
    self.assertEqual(out.shape, signal.shape)
    self.assertAllClose(band_power(out, 9000, 24000) / band_power(signal, 9000, 24000), 1.0,
                        rtol=0.1)
    error = np.sum((out - signal).astype(np.float64) ** 2) / np.sum(signal.astype(np.float64)**2)
    self.assertLess(10 * np.log10(error), -25)

  def test_more_power_up_there_than_speech_would_have_is_cut_to_the_expected_share(self):
    signal = noise()  # white: 16/24 of its power above 8 kHz, 1.6/24 in 5.6-7.2 kHz
    out = file_denoising.denoise_signal(model(np.ones_like), signal, RATE, **RAW)
    expected = band_extension.speech_ratio(MODEL_RATE, RATE) * 1.6 / 16.0  # of the power
    self.assertAllClose(band_power(out, 9000, 24000) / band_power(signal, 9000, 24000),
                        expected, rtol=0.15)

  def test_the_upper_band_follows_what_the_model_removed_frame_by_frame(self):
    signal = speech_like()
    gate = lambda t: (t >= 1.0).astype(np.float64)  # removes the first second, keeps the rest
    out = file_denoising.denoise_signal(model(gate), signal, RATE, **RAW)
    first, second = out[:int(0.9 * RATE)], out[int(1.1 * RATE):]
    self.assertLess(band_power(first, 9000, 24000), 1e-4 * band_power(second, 9000, 24000))
    self.assertAllClose(band_power(second, 9000, 24000),
                        band_power(signal[int(1.1 * RATE):], 9000, 24000), rtol=0.1)
    kept = file_denoising.denoise_signal(model(gate), signal, RATE, keep_input=0.2, keep_presence=0)
    self.assertAllClose(band_power(kept[:int(0.9 * RATE)], 9000, 24000),  # (0.2)^2 of it
                        0.04 * band_power(signal[:int(0.9 * RATE)], 9000, 24000), rtol=0.1)

  def test_fed_in_blocks_it_returns_what_it_returns_fed_whole(self):
    rng = np.random.default_rng(5)
    for rate in (48000, 44100):
      loudness = np.repeat(rng.uniform(0.1, 1, 15), rate // 10)  # a new one every 0.1 s
      upper = noise(seconds=1.5, seed=rate)[:len(loudness)] * loudness
      model_band = speech_like(seconds=1.5)[::3] * np.repeat(rng.uniform(0, 1, 30), 800)
      whole = band_extension.BandExtension(rate, MODEL_RATE, 0.1).feed(upper, model_band,
                                                                      last=True)
      extension = band_extension.BandExtension(rate, MODEL_RATE, 0.1)
      out, fed, fed_model = [], 0, 0
      for size in rng.integers(1, 2000, 200):
        model_size = int(size * MODEL_RATE / rate)
        out.append(extension.feed(upper[fed:fed + size], model_band[fed_model:fed_model
                                                                     + model_size]))
        fed, fed_model = fed + size, fed_model + model_size
      out.append(extension.feed(upper[fed:], model_band[fed_model:], last=True))
      self.assertAllClose(np.concatenate(out), whole, atol=1e-6)
      self.assertLen(whole, len(upper))

  def test_a_file_at_the_models_rate_or_below_is_not_extended(self):
    signal = noise()[:MODEL_RATE]
    halve = model(lambda t: np.full_like(t, 0.5))
    out = file_denoising.denoise_signal(halve, signal, MODEL_RATE, **RAW)
    self.assertAllClose(out, 0.5 * signal, atol=1e-6)
    uniform = file_denoising.denoise_signal(halve, signal, MODEL_RATE, keep_input=0.25,
                                     keep_presence=0.25)
    self.assertAllClose(uniform, (0.75 * 0.5 + 0.25) * signal, atol=1e-6)
    with self.assertRaisesRegex(ValueError, r"keep_input=1.5 must be in \[0, 1\]"):
      file_denoising.denoise_signal(halve, signal, MODEL_RATE, keep_input=1.5)

  def test_by_default_more_input_is_kept_in_the_presence_band(self):
    seconds = np.arange(MODEL_RATE) / MODEL_RATE
    halve = model(lambda t: np.full_like(t, 0.5))
    taps = kept_input.residual_filter(MODEL_RATE, kept_input.KEEP,
                                      kept_input.PRESENCE_KEEP).numpy()
    gains = []
    for hz in (500.0, 4000.0):
      tone = (0.5 * np.sin(2 * np.pi * hz * seconds)).astype(np.float32)
      out = file_denoising.denoise_signal(halve, tone, MODEL_RATE)
      inside = slice(MODEL_RATE // 100, -MODEL_RATE // 100)  # beyond the edge effects
      gains.append(np.std(out[inside]) / np.std(tone[inside]))
      response = np.sum(taps * np.exp(-2j * np.pi * hz * np.arange(len(taps)) / MODEL_RATE))
      self.assertAllClose(gains[-1], abs(0.5 + 0.5 * response), atol=5e-3, msg=f"{hz} Hz")
    self.assertGreater(gains[1], gains[0] + 0.15)


if __name__ == "__main__":
  tf.test.main()
