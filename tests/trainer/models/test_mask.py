"""Tests for trainer.models.mask: exact reconstruction, shapes and rates, level invariance, errors."""

import numpy as np
import tensorflow as tf

from tests.trainer.models import model_contract
from trainer.models import mask

RATE = 8000


def gain(model, value):
  """Sets a mask model's gain to `value` in every bin, whatever its input."""
  model.project_out.kernel.assign(tf.zeros_like(model.project_out.kernel))
  logit = np.log((value - mask.FLOOR) / (1.0 - value)) if value < 1 else 40.0
  model.project_out.bias.assign(tf.fill(model.project_out.bias.shape, float(logit)))
  return model


def tone(hz, rate=16000):
  return np.sin(2 * np.pi * hz * np.arange(rate) / rate).astype(np.float32)


def open_mask(model):
  """Saturates the mask at 1: the model must then give back its input."""
  model.project_out.kernel.assign(tf.zeros_like(model.project_out.kernel))
  model.project_out.bias.assign(tf.fill(model.project_out.bias.shape, 40.0))
  return model


class MaskDenoiserTest(model_contract.ModelContract, tf.test.TestCase):

  model = mask.MaskDenoiser(sample_rate=RATE, hidden=16, depth=3)

  def test_open_mask_reconstructs_the_input_exactly(self):
    model = open_mask(mask.MaskDenoiser(sample_rate=RATE, hidden=8, depth=2))
    for length in (100, 8001):
      x = tf.random.normal([2, length])
      self.assertAllClose(model(x), x, atol=1e-5)

  def test_any_length_and_rate_in_same_length_out(self):
    for rate, length in ((8000, 333), (16000, 16003), (48000, 4800)):
      model = mask.MaskDenoiser(sample_rate=rate, hidden=8, depth=2)
      self.assertEqual(model(tf.random.normal([2, length])).shape, [2, length])
      self.assertEqual(model.window, round(0.032 * rate))

  def test_mask_only_attenuates(self):
    x = tf.random.normal([1, 8000])
    power = lambda s: tf.reduce_sum(tf.square(s))  # pylint: disable=g-long-lambda
    self.assertLessEqual(float(power(self.model(x))), float(power(x)) * 1.01)

  def test_a_causal_level_is_the_mean_of_the_latest_frames(self):
    levels = np.random.default_rng(0).normal(size=[2, 30, 1]).astype(np.float32)
    for seconds, frames in ((0.04, 5), (1.0, 125), (0.0, None)):
      model = mask.MaskDenoiser(sample_rate=RATE, hidden=4, depth=1, causal=True,
                                level_seconds=seconds)
      self.assertEqual(model.level_frames, frames)
      expected = [levels[:, max(0, t + 1 - (frames or 30)):t + 1].mean(axis=1)
                  for t in range(30)]
      self.assertAllClose(model.causal_level(tf.constant(levels)),
                          np.stack(expected, axis=1), atol=1e-5)

  def test_a_causal_level_forgets_audio_older_than_its_window(self):
    model = mask.MaskDenoiser(sample_rate=RATE, hidden=8, depth=2, causal=True,
                              level_seconds=0.1)
    x = tf.random.normal([1, 2 * RATE], seed=3)
    louder_start = tf.concat([10.0 * x[:, :RATE // 2], x[:, RATE // 2:]], 1)
    # The level's window (0.1 s) plus the convs' context (3 frames) and a window later:
    later = RATE // 2 + int(0.2 * RATE)
    self.assertAllClose(model(louder_start)[:, later:], model(x)[:, later:], atol=1e-5)
    unbounded = mask.MaskDenoiser(sample_rate=RATE, hidden=8, depth=2, causal=True,
                                  level_seconds=0)
    self.assertNotAllClose(unbounded(louder_start)[:, later:], unbounded(x)[:, later:])

  def test_bins_with_no_energy_barely_move_the_power_level(self):
    rate = 16000
    noise = tf.random.stateless_normal([1, rate], seed=[1, 2])
    spectrum = lambda x: tf.signal.stft(x, 512, 128)  # pylint: disable=g-long-lambda
    full = spectrum(noise)
    band_limited = full * tf.cast(tf.range(257) < 128, tf.complex64)  # nothing above 4 kHz
    for level, most in (("power", 0.75), ("log", None)):
      model = mask.MaskDenoiser(sample_rate=rate, hidden=8, depth=2, level=level)
      shift = float(tf.reduce_mean(model.features(band_limited)[..., :128]
                                   - model.features(full)[..., :128]))
      if most is None:  # the first models' level: dragged down by the empty half
        self.assertGreater(shift, 5.0)
      else:  # half the power gone: log 2 = 0.69 nats
        self.assertBetween(shift, 0.5, most)
    empty = mask.MaskDenoiser(sample_rate=rate, hidden=8, depth=2).features(band_limited)
    self.assertAllGreaterEqual(empty, -mask.FEATURE_FLOOR)

  def test_the_noise_floor_is_each_bins_quantile_beside_its_features(self):
    model = mask.MaskDenoiser(sample_rate=RATE, hidden=4, depth=1, noise_floor=0.2)
    rng = np.random.default_rng(0)
    spectrum = tf.complex(*(rng.normal(size=[2, 41, 129]).astype(np.float32) for _ in "ri"))
    features = model.features(spectrum).numpy()
    self.assertEqual(features.shape, (2, 41, 2 * 129))
    relative, floor = features[..., :129], features[..., 129:]
    self.assertAllClose(relative, mask.MaskDenoiser(sample_rate=RATE, hidden=4, depth=1)
                        .features(spectrum))
    # the 9th of 41 values in each bin (index 0.2 * 40), the same in every frame
    expected = np.sort(relative, axis=1)[:, 8:9]
    self.assertAllClose(floor, np.broadcast_to(expected, relative.shape))
    self.assertEqual(model(tf.random.normal([2, 999])).shape, [2, 999])

  def test_bad_shapes(self):
    with self.assertRaisesRegex(ValueError, "depth=0 must be >= 1"):
      mask.MaskDenoiser(sample_rate=RATE, depth=0)
    with self.assertRaisesRegex(ValueError, "level=db must be one of power, log"):
      mask.MaskDenoiser(sample_rate=RATE, level="db")
    with self.assertRaisesRegex(ValueError, r"fft_length=200 is shorter than the window \(256 "
                                r"samples at 8000 Hz\)"):
      mask.MaskDenoiser(sample_rate=8000, fft_length=200)
    with self.assertRaisesRegex(ValueError, "noise_floor=0.2 needs the whole clip"):
      mask.MaskDenoiser(sample_rate=RATE, causal=True, noise_floor=0.2)
    with self.assertRaisesRegex(ValueError, "noise_floor=1 is a quantile"):
      mask.MaskDenoiser(sample_rate=RATE, noise_floor=1)

  def test_a_longer_fft_zero_pads_the_window_and_still_reconstructs(self):
    model = mask.MaskDenoiser(sample_rate=8000, hidden=8, depth=2, fft_length=512)
    self.assertEqual((model.window, model.fft_length), (256, 512))
    self.assertEqual(model.tflite_transform, "rfft")  # a power of two: TFLite's RFFT2D
    self.assertEqual(mask.MaskDenoiser(sample_rate=48000, hidden=8, depth=2).tflite_transform,
                     "matmul")  # 1536 by default
    x = tf.random.normal([2, 3001])
    self.assertAllClose(open_mask(model)(x), x, atol=1e-5)


  def test_a_mask_model_keeps_its_share_as_a_floor_on_its_gain(self):
    signal = 0.3 * tone(500.0) + 0.3 * tone(4000.0)
    for value in (0.2, 0.9):
      model = gain(mask.MaskDenoiser(sample_rate=16000, hidden=4, depth=1), value)
      kept = model.keeping(tf.constant(signal[None]), 0.1, 0.5)[0]
      # in the presence band the share rises with the gain over the speech band (value)
      presence_share = 0.1 + (0.5 - 0.1) * value
      expected = (value + (1 - value) * 0.1) * 0.3 * tone(500.0) + (
          value + (1 - value) * presence_share) * 0.3 * tone(4000.0)
      self.assertAllClose(kept[200:-200], expected[200:-200], atol=3e-3)
    opened = gain(model, 1.0)
    self.assertAllClose(opened.keeping(tf.constant(signal[None]), 0.1, 0.5)[0], signal,
                        atol=1e-5)


if __name__ == "__main__":
  tf.test.main()
