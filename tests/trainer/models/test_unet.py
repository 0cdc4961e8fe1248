"""Tests for trainer.models.unet: shapes, float32 variables with bf16 compute, seeds, errors."""

import tensorflow as tf

from tests.trainer.models import model_contract
from trainer.models import unet


class UNetTest(model_contract.ModelContract, tf.test.TestCase):

  model = unet.UNet(sample_rate=8000, hidden=8, depth=3, attention_heads=2)
  length = 640

  def test_any_length_in_same_length_out(self):
    for length in (64, 1000, 1601):
      self.assertEqual(self.model(tf.random.normal([2, length])).shape, [2, length])

  def test_same_seed_same_weights(self):
    a = unet.UNet(sample_rate=8000, hidden=8, depth=2, attention_heads=2, seed=4)
    b = unet.UNet(sample_rate=8000, hidden=8, depth=2, attention_heads=2, seed=4)
    for x, y in zip(a.trainable_variables, b.trainable_variables):
      self.assertAllEqual(x, y)

  def test_a_causal_unet_forgets_audio_older_than_its_windows(self):
    rate = 8000
    x = tf.random.normal([1, 2 * rate], seed=3)
    louder_start = tf.concat([10.0 * x[:, :rate // 2], x[:, rate // 2:]], 1)
    later = rate // 2 + int(0.1 * rate)  # both windows (0.05 s) and the convs' reach later
    bounded = unet.UNet(sample_rate=rate, hidden=8, depth=2, attention_heads=2, causal=True,
                        level_seconds=0.05, attention_seconds=0.05)
    self.assertEqual((bounded.level_samples, bounded.attention_frames), (400, 25))
    self.assertAllClose(bounded(louder_start)[:, later:], bounded(x)[:, later:], rtol=1e-5,
                        atol=1e-5)
    unbounded = unet.UNet(sample_rate=rate, hidden=8, depth=2, attention_heads=2,
                          causal=True, level_seconds=0, attention_seconds=0)
    self.assertNotAllClose(unbounded(louder_start)[:, later:], unbounded(x)[:, later:])

  def test_bad_shapes(self):
    with self.assertRaisesRegex(ValueError, "kernel_size=2 must be >= stride=4"):
      unet.UNet(sample_rate=8000, kernel_size=2, stride=4)
    with self.assertRaisesRegex(ValueError, "attention_heads=4 must divide the bottleneck's 6"):
      unet.UNet(sample_rate=8000, hidden=6, depth=1, attention_heads=4)
    self.assertEqual(unet.UNet.bottleneck_channels(hidden=16, depth=3, growth=2,
                                                   max_hidden=48), 48)


if __name__ == "__main__":
  tf.test.main()
