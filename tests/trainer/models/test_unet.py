"""Tests for trainer.denoiser: shapes, float32 variables with bf16 compute, causality, errors."""

import numpy as np
import tensorflow as tf

from tests.trainer.models import model_contract
from trainer.models import unet


class DenoiserTest(model_contract.ModelContract, tf.test.TestCase):

  model = unet.Denoiser(hidden=8, depth=3, attention_heads=2)
  length = 640

  def test_any_length_in_same_length_out(self):
    for length in (64, 1000, 1601):
      self.assertEqual(self.model(tf.random.normal([2, length])).shape, [2, length])

  def test_causal_model_does_not_look_ahead(self):
    model = unet.Denoiser(hidden=8, depth=3, attention_heads=2, causal=True)
    x = np.random.default_rng(0).normal(size=[1, 4096]).astype(np.float32)
    changed = x.copy()
    changed[:, 2048:] = x[:, 2048:][:, ::-1]  # same energy, so the same normalisation
    y, y_changed = model(x), model(changed)
    margin = model.time_multiple
    self.assertAllClose(y[:, :2048 - margin], y_changed[:, :2048 - margin], atol=1e-5)
    self.assertNotAllClose(y[:, 2048:], y_changed[:, 2048:])

  def test_same_seed_same_weights(self):
    a = unet.Denoiser(hidden=8, depth=2, attention_heads=2, seed=4)
    b = unet.Denoiser(hidden=8, depth=2, attention_heads=2, seed=4)
    for x, y in zip(a.trainable_variables, b.trainable_variables):
      self.assertAllEqual(x, y)

  def test_bad_shapes(self):
    with self.assertRaisesRegex(ValueError, "kernel_size >= stride"):
      unet.Denoiser(kernel_size=2, stride=4)
    with self.assertRaisesRegex(ValueError, "divisible by attention heads"):
      unet.Denoiser(hidden=6, depth=1, attention_heads=4)


if __name__ == "__main__":
  tf.test.main()
