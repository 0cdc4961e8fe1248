"""Tests for trainer.models.mask: exact reconstruction, shapes and rates, level invariance, errors."""

import tensorflow as tf

from tests.trainer.models import model_contract
from trainer.models import mask

RATE = 8000


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

  def test_bad_shapes(self):
    with self.assertRaisesRegex(ValueError, "depth=0 must be >= 1"):
      mask.MaskDenoiser(sample_rate=RATE, depth=0)


if __name__ == "__main__":
  tf.test.main()
