"""Tests for trainer.denoiser: shapes, float32 variables with bf16 compute, causality, errors."""

import numpy as np
import tensorflow as tf

from trainer import denoiser


class DenoiserTest(tf.test.TestCase):

  model = denoiser.Denoiser(hidden=8, depth=3, attention_heads=2)

  def test_any_length_in_same_length_out(self):
    for length in (64, 1000, 1601):
      self.assertEqual(self.model(tf.random.normal([2, length])).shape, [2, length])

  def test_bfloat16_compute_with_float32_variables(self):
    x = tf.random.normal([2, 640])
    y16 = self.model(tf.cast(x, tf.bfloat16))
    self.assertEqual(y16.dtype, tf.bfloat16)
    self.assertTrue(all(v.dtype == tf.float32 for v in self.model.trainable_variables))
    y32 = self.model(x)
    self.assertAllClose(tf.cast(y16, tf.float32), y32,
                        atol=0.05 * float(tf.reduce_max(tf.abs(y32))))

  def test_output_scales_with_input(self):
    x = tf.random.normal([2, 640])
    # Exact but for the 1e-3 floor added to the normalising std.
    self.assertAllClose(self.model(3.0 * x), 3.0 * self.model(x), rtol=2e-3, atol=1e-3)

  def test_causal_model_does_not_look_ahead(self):
    model = denoiser.Denoiser(hidden=8, depth=3, attention_heads=2, causal=True)
    x = np.random.default_rng(0).normal(size=[1, 4096]).astype(np.float32)
    changed = x.copy()
    changed[:, 2048:] = x[:, 2048:][:, ::-1]  # same energy, so the same normalisation
    y, y_changed = model(x), model(changed)
    margin = model.time_multiple
    self.assertAllClose(y[:, :2048 - margin], y_changed[:, :2048 - margin], atol=1e-5)
    self.assertNotAllClose(y[:, 2048:], y_changed[:, 2048:])

  def test_same_seed_same_weights(self):
    a = denoiser.Denoiser(hidden=8, depth=2, attention_heads=2, seed=4)
    b = denoiser.Denoiser(hidden=8, depth=2, attention_heads=2, seed=4)
    for x, y in zip(a.trainable_variables, b.trainable_variables):
      self.assertAllEqual(x, y)

  def test_checkpoint_holds_every_variable(self):
    path = tf.train.Checkpoint(model=self.model).save(self.create_tempdir().full_path + "/c")
    saved = [n for n in tf.train.list_variables(path) if n[0].startswith("model/")]
    self.assertLen(saved, len(self.model.trainable_variables))

  def test_bad_shapes(self):
    with self.assertRaisesRegex(ValueError, "kernel_size >= stride"):
      denoiser.Denoiser(kernel_size=2, stride=4)
    with self.assertRaisesRegex(ValueError, "divisible by attention heads"):
      denoiser.Denoiser(hidden=6, depth=1, attention_heads=4)


if __name__ == "__main__":
  tf.test.main()
