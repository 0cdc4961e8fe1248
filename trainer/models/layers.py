"""Layers the models share, each with its offline form and, for streaming, its step: 1-D convolutions (optionally causal), transposed convolution, GLU.

Plain tf.Modules with float32 variables that compute in their input's dtype
(bfloat16 under mixed precision), initialised from a stateless seed. They train
on every CPU: TensorFlow's stock (Eigen) CPU kernels, which run wherever oneDNN
is off, refuse the gradient of a natively dilated convolution, so dilations go
through space-to-batch (`tf.nn.convolution`), measured in BENCHMARKS.md.

A causal layer's `step` takes the next frames of one stream (`[frames,
channels]`, no batch) and its state, and returns its output for them and the
new state (shape `state_shape`, zeros before the first frame): concatenated
over any split of a signal into steps, the outputs equal the offline layer's.
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
                       "not both (TensorFlow's convolutions do not combine them).")
    fan_in = in_channels * kernel_size
    self.kernel = tf.Variable(
        uniform_init([kernel_size, in_channels, out_channels], fan_in, seed), name="kernel")
    self.bias = tf.Variable(uniform_init([out_channels], fan_in, [seed[0], seed[1] + 1]),
                            name="bias")
    self.stride, self.dilation = stride, dilation
    self.causal, self.kernel_size = causal, kernel_size

  def __call__(self, x):
    kernel, bias = tf.cast(self.kernel, x.dtype), tf.cast(self.bias, x.dtype)
    padding = "SAME"
    if self.causal and self.kernel_size > 1:
      x = tf.pad(x, [[0, 0], [self.history, 0], [0, 0]])
      padding = "VALID"
    # tf.nn.convolution computes a dilated convolution by space-to-batch (plain
    # convolutions), which every backend can differentiate; tf.nn.conv1d would not.
    return tf.nn.convolution(x, kernel, self.stride, padding, dilations=self.dilation) + bias

  @property
  def history(self) -> int:
    """Input frames before the current ones that a causal output sees."""
    return (self.kernel_size - 1) * self.dilation

  @property
  def state_shape(self) -> list:
    """The step's state: the latest `history` input frames."""
    return [self.history, self.kernel.shape[1]]

  def step(self, x, history):
    """The causal outputs for the next input frames `x` `[frames, in]` (a whole number of
    strides) after `history`; returns `(outputs [frames / stride, out], new history)`. One
    matrix product over the taps, which TFLite runs with builtin ops."""
    kernel, bias = tf.cast(self.kernel, x.dtype), tf.cast(self.bias, x.dtype)
    frames = x.shape[0]
    if frames % self.stride:
      raise ValueError(f"A step of a stride-{self.stride} Conv1D takes whole strides, not "
                       f"{frames} frames.")
    seen = tf.concat([history, x], 0)
    if frames == self.stride:  # one output (a hop of frames): its taps in one slice
      taps = tf.reshape(seen[:self.history + 1:self.dilation], [1, -1])
    else:
      last = (frames // self.stride - 1) * self.stride + 1  # span of one tap's inputs
      taps = tf.concat([seen[k * self.dilation:k * self.dilation + last:self.stride]
                        for k in range(self.kernel_size)], -1)
    outputs = tf.matmul(taps, tf.reshape(kernel, [-1, kernel.shape[-1]]))
    return outputs + bias, seen[frames:]


class ConvTranspose1D(tf.Module):
  """Transposed Conv1D that upsamples time by `stride` exactly."""

  def __init__(self, in_channels, out_channels, kernel_size, *, stride, causal=False,
               seed=(0, 0), name=None):
    super().__init__(name=name)
    if kernel_size < stride:
      raise ValueError(f"ConvTranspose1D's kernel_size ({kernel_size}) must be at least its "
                       f"stride ({stride}), or outputs between its kernels would be empty.")
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

  @property
  def state_shape(self) -> list:
    """The step's state: the overlap tail the frames so far add to the next outputs."""
    return [self.kernel_size - self.stride, self.kernel.shape[1]]

  def step(self, x, tail):
    """The causal outputs for the next frames `x` `[frames, in]` with the overlap `tail` of
    the frames before; returns `(outputs [frames * stride, out], new tail)`."""
    kernel, bias = tf.cast(self.kernel, x.dtype), tf.cast(self.bias, x.dtype)
    frames, stride = x.shape[0], self.stride
    full = tf.nn.conv1d_transpose(
        x[None], kernel, [1, (frames - 1) * stride + self.kernel_size, kernel.shape[1]],
        stride, "VALID")[0]
    full += tf.pad(tail, [[0, full.shape[0] - tail.shape[0]], [0, 0]])
    return full[:frames * stride] + bias, full[frames * stride:]


def glu(x):
  """Gated linear unit over the last axis: first half * sigmoid(second half)."""
  a, b = tf.split(x, 2, axis=-1)
  return a * tf.sigmoid(b)
