"""What every denoiser model promises the step, export and denoise (trainer.models.contract.Denoiser): a mixin of tests over `self.model`."""

import tensorflow as tf


class ModelContract:
  """Mix into a tf.test.TestCase that sets `model` (and `length`, samples per test input)."""

  length = 2000

  def test_bfloat16_compute_with_float32_variables(self):
    x = tf.random.normal([2, self.length])
    y16 = self.model(tf.cast(x, tf.bfloat16))
    self.assertEqual(y16.dtype, tf.bfloat16)
    self.assertTrue(all(v.dtype == tf.float32 for v in self.model.trainable_variables))
    y32 = self.model(x)
    self.assertAllClose(tf.cast(y16, tf.float32), y32,
                        atol=0.05 * float(tf.reduce_max(tf.abs(y32))))

  def test_output_scales_with_input(self):
    x = tf.random.normal([2, self.length])
    # Exact but for small floors in the models' level normalisation.
    self.assertAllClose(self.model(3.0 * x), 3.0 * self.model(x), rtol=2e-3, atol=1e-3)

  def test_checkpoint_holds_every_variable(self):
    path = tf.train.Checkpoint(model=self.model).save(self.create_tempdir().full_path + "/c")
    saved = [n for n in tf.train.list_variables(path) if n[0].startswith("model/")]
    self.assertLen(saved, len(self.model.trainable_variables))

  def test_it_follows_the_denoiser_protocol(self):
    for attribute in ("sample_rate", "causal", "lookahead", "tflite_transform"):
      self.assertTrue(hasattr(self.model, attribute), attribute)
    x = tf.random.normal([1, self.length])
    # Keeping no share of the input is the model alone.
    self.assertAllClose(self.model.keeping(x, 0.0, 0.0), self.model(x), atol=1e-5)
