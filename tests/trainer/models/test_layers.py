"""Tests for trainer.models.layers: dilated Conv1D equals TensorFlow's dilated convolution, forward and backward, on any CPU backend."""

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from trainer.models import layers


def native(x, kernel, dilation, causal):
  """tf.nn.conv1d's own dilated convolution (its gradient needs oneDNN or XLA on a CPU)."""
  if causal:
    x = tf.pad(x, [[0, 0], [(kernel.shape[0] - 1) * dilation, 0], [0, 0]])
  return tf.nn.conv1d(x, kernel, 1, "VALID" if causal else "SAME", dilations=dilation)


@tf.function(jit_compile=True)  # XLA's CPU convolution has the dilated gradient
def native_gradients(x, kernel, dilation, causal):
  with tf.GradientTape() as tape:
    tape.watch([x, kernel])
    y = native(x, kernel, dilation, causal)
    loss = tf.reduce_sum(y * tf.cos(tf.range(tf.size(y), dtype=y.dtype)[:y.shape[-1]]))
  return tape.gradient(loss, [x, kernel])


class Conv1DTest(tf.test.TestCase, parameterized.TestCase):

  @parameterized.product(kernel_size=[2, 3, 4], dilation=[2, 4], causal=[False, True])
  def test_a_dilated_conv_equals_tensorflows(self, kernel_size, dilation, causal):
    conv = layers.Conv1D(3, 5, kernel_size, dilation=dilation, causal=causal, seed=(1, 2))
    x = tf.random.stateless_normal([2, 21, 3], [0, kernel_size])
    expected = native(x, conv.kernel, dilation, causal) + conv.bias
    self.assertAllClose(conv(x), expected, atol=1e-5)

    with tf.GradientTape() as tape:
      tape.watch(x)
      y = conv(x) - conv.bias
      loss = tf.reduce_sum(y * tf.cos(tf.range(tf.size(y), dtype=y.dtype)[:y.shape[-1]]))
    got = tape.gradient(loss, [x, conv.kernel])
    for ours, theirs in zip(got, native_gradients(x, conv.kernel, dilation, causal)):
      self.assertAllClose(ours, theirs, atol=1e-4)

  def test_trains_on_the_stock_cpu_kernels_in_bfloat16(self):
    conv = layers.Conv1D(4, 4, 3, dilation=2, seed=(0, 1))
    x = tf.cast(tf.random.stateless_normal([2, 16, 4], [0, 0]), tf.bfloat16)
    with tf.GradientTape() as tape:
      y = conv(x)
      loss = tf.reduce_sum(tf.cast(y, tf.float32) ** 2)
    self.assertEqual(y.dtype, tf.bfloat16)
    gradient = tape.gradient(loss, conv.kernel)
    self.assertEqual(gradient.dtype, tf.float32)
    self.assertTrue(np.all(np.isfinite(gradient.numpy())))
    self.assertGreater(float(tf.norm(gradient)), 0.0)

  def test_stride_and_dilation_together_are_refused(self):
    with self.assertRaisesRegex(ValueError, r"stride \(2\) or a dilation \(2\)"):
      layers.Conv1D(1, 1, 3, stride=2, dilation=2)


if __name__ == "__main__":
  tf.test.main()
