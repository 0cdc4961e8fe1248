"""Layers the models share: 1-D convolutions (optionally causal), transposed convolution, GLU.

Plain tf.Modules with float32 variables that compute in their input's dtype
(bfloat16 under mixed precision), initialised from a stateless seed. They run
on every CPU: TensorFlow's stock (Eigen) CPU kernels, which run wherever oneDNN
is off, have no gradient for a dilated convolution, so dilated convolutions are
computed as one matmul over their taps (`dilated_conv1d`).
"""

import math

import tensorflow as tf


def uniform_init(shape, fan_in, seed):
  """U(-1/sqrt(fan_in), 1/sqrt(fan_in)) from a stateless `seed`."""
  bound = 1.0 / math.sqrt(fan_in)
  return tf.random.stateless_uniform(shape, seed, -bound, bound)


class Conv1D(tf.Module):
  """Conv1D over `[batch, time, channels]`; `causal` pads only on the left."""

  def __init__(self, in_channels, out_channels, kernel_size, *, stride=1, dilation=1,
               causal=False, seed=(0, 0), name=None):
    super().__init__(name=name)
    if stride > 1 and dilation > 1:
      raise ValueError(f"Conv1D takes a stride ({stride}) or a dilation ({dilation}) above 1, "
                       "not both (tf.nn.conv1d has neither combined).")
    fan_in = in_channels * kernel_size
    self.kernel = tf.Variable(
        uniform_init([kernel_size, in_channels, out_channels], fan_in, seed), name="kernel")
    self.bias = tf.Variable(uniform_init([out_channels], fan_in, [seed[0], seed[1] + 1]),
                            name="bias")
    self.stride, self.dilation = stride, dilation
    self.causal, self.kernel_size = causal, kernel_size

  def __call__(self, x):
    kernel, bias = tf.cast(self.kernel, x.dtype), tf.cast(self.bias, x.dtype)
    if self.dilation > 1:
      span = (self.kernel_size - 1) * self.dilation
      before = span if self.causal else span // 2  # "SAME" puts the odd sample after
      x = tf.pad(x, [[0, 0], [before, span - before], [0, 0]])
      return dilated_conv1d(x, kernel, self.dilation) + bias
    if self.causal and self.kernel_size > 1:
      x = tf.pad(x, [[0, 0], [self.kernel_size - 1, 0], [0, 0]])
      return tf.nn.conv1d(x, kernel, self.stride, "VALID") + bias
    return tf.nn.conv1d(x, kernel, self.stride, "SAME") + bias


def dilated_conv1d(x, kernel, dilation: int):
  """`tf.nn.conv1d(x, kernel, 1, "VALID", dilations=dilation)` as one matmul over its taps.

  Slices, a concat and a matmul have forward and backward kernels on every device
  and CPU backend; the stock CPU Conv2DBackpropInput/Filter refuse dilations > 1.

  Args:
    x: `[batch, time, in_channels]`, already padded.
    kernel: `[taps, in_channels, out_channels]`.
    dilation: samples between taps.

  Returns:
    `[batch, time - (taps - 1) * dilation, out_channels]`.
  """
  taps, in_channels, out_channels = kernel.shape
  frames = tf.shape(x)[1] - (taps - 1) * dilation
  stacked = tf.concat([x[:, tap * dilation:tap * dilation + frames] for tap in range(taps)],
                      axis=-1)  # [batch, frames, taps * in_channels], tap-major like kernel
  batch = tf.shape(x)[0]
  y = tf.matmul(tf.reshape(stacked, [-1, taps * in_channels]),  # one GEMM for the batch
                tf.reshape(kernel, [taps * in_channels, out_channels]))
  return tf.reshape(y, [batch, frames, out_channels])


class ConvTranspose1D(tf.Module):
  """Transposed Conv1D that upsamples time by `stride` exactly."""

  def __init__(self, in_channels, out_channels, kernel_size, *, stride, causal=False,
               seed=(0, 0), name=None):
    super().__init__(name=name)
    fan_in = in_channels * kernel_size // stride
    self.kernel = tf.Variable(
        uniform_init([kernel_size, out_channels, in_channels], fan_in, seed), name="kernel")
    self.bias = tf.Variable(uniform_init([out_channels], fan_in, [seed[0], seed[1] + 1]),
                            name="bias")
    self.stride, self.causal, self.kernel_size = stride, causal, kernel_size

  def __call__(self, x):
    kernel, bias = tf.cast(self.kernel, x.dtype), tf.cast(self.bias, x.dtype)
    batch, frames = tf.shape(x)[0], tf.shape(x)[1]
    channels = self.kernel.shape[1]
    if self.causal:
      full = (frames - 1) * self.stride + self.kernel_size
      y = tf.nn.conv1d_transpose(x, kernel, tf.stack([batch, full, channels]), self.stride,
                                 "VALID")
      y = y[:, :frames * self.stride]  # keep what depends only on frames so far
    else:
      y = tf.nn.conv1d_transpose(x, kernel, tf.stack([batch, frames * self.stride, channels]),
                                 self.stride, "SAME")
    return y + bias


def glu(x):
  """Gated linear unit over the last axis: first half * sigmoid(second half)."""
  a, b = tf.split(x, 2, axis=-1)
  return a * tf.sigmoid(b)
