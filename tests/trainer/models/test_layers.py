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


def in_steps(step, x, sizes, state):
  """`step(piece, *state) -> (out, state)` over `x` `[time, ...]` cut into pieces cycling
  through `sizes` (the last one shorter); the outputs concatenated. A state of one part may
  come back bare."""
  out, start, k = [], 0, 0
  while start < x.shape[0]:
    piece = x[start:start + sizes[k % len(sizes)]]
    y, state = step(piece, *state)
    state = state if isinstance(state, (list, tuple)) else [state]
    out.append(y)
    start, k = start + piece.shape[0], k + 1
  return tf.concat(out, 0)


def feeds(frame, length, seed=0):
  """Feed sizes to test a step with: 1 and 7 units, one `frame`, and random counts (a unit
  is what the layer's step takes whole, e.g. a stride)."""
  rng = np.random.default_rng(seed)
  return [[1], [7], [frame], [int(n) for n in rng.integers(1, 3 * frame, length)]]


class StepTest(tf.test.TestCase, parameterized.TestCase):
  """Each causal layer's step over any split of a signal equals the offline layer."""

  @parameterized.product(kernel_size=[1, 3], dilation=[1, 2, 4])
  def test_a_dilated_conv_steps_as_it_convolves(self, kernel_size, dilation):
    conv = layers.Conv1D(3, 4, kernel_size, dilation=dilation, causal=True, seed=(2, 3))
    x = tf.random.stateless_normal([53, 3], [1, kernel_size])
    offline = conv(x[None])[0]
    for sizes in feeds(conv.history + 1, 12):
      got = in_steps(conv.step, x, sizes, [tf.zeros(conv.state_shape)])
      self.assertAllClose(got, offline, atol=1e-6, rtol=0)

  @parameterized.parameters(2, 4)
  def test_a_strided_conv_steps_a_whole_stride_at_a_time(self, stride):
    conv = layers.Conv1D(2, 5, 2 * stride, stride=stride, causal=True, seed=(4, 5))
    x = tf.random.stateless_normal([stride * 19, 2], [2, stride])
    offline = conv(x[None])[0]
    for sizes in feeds(conv.kernel_size, 8):
      strides = [stride * n for n in sizes]
      got = in_steps(conv.step, x, strides, [tf.zeros(conv.state_shape)])
      self.assertAllClose(got, offline, atol=1e-6, rtol=0)
    with self.assertRaisesRegex(ValueError, "takes whole strides"):
      conv.step(x[:stride + 1], tf.zeros(conv.state_shape))

  @parameterized.parameters((4, 8), (2, 2), (4, 6))
  def test_a_transposed_conv_steps_with_its_overlap_tail(self, stride, kernel_size):
    upsample = layers.ConvTranspose1D(3, 2, kernel_size, stride=stride, causal=True,
                                      seed=(6, 7))
    x = tf.random.stateless_normal([23, 3], [3, stride])
    offline = upsample(x[None])[0]
    for sizes in feeds(1, 8):
      got = in_steps(upsample.step, x, sizes, [tf.zeros(upsample.state_shape)])
      self.assertAllClose(got, offline, atol=1e-6, rtol=0)

  def test_a_transposed_conv_shorter_than_its_stride_is_refused(self):
    with self.assertRaisesRegex(ValueError, "at least its stride"):
      layers.ConvTranspose1D(1, 1, 2, stride=4)
