"""The default model: a Demucs-style waveform U-Net as a tf.Module (float32 variables, any compute dtype).

Strided Conv1D encoder layers with GLU, a self-attention bottleneck (parallel
over time, so it keeps accelerators busy where an LSTM would run step by
step), transposed-conv decoder layers with skip connections, and the input
normalised by its standard deviation and rescaled back. The decoder predicts a
correction added to the (normalised) input, so training starts near the
identity instead of from random audio (measured on the synthetic corpus: +3.2
dB SI-SDR improvement after 300 small CPU steps, against +2.6 dB without). The model computes in
the dtype of its input (bfloat16 under mixed precision); variables stay float32.
"""

import math

import tensorflow as tf


def _init(shape, fan_in, seed):
  bound = 1.0 / math.sqrt(fan_in)
  return tf.random.stateless_uniform(shape, seed, -bound, bound)


class Conv1D(tf.Module):
  """Conv1D over `[batch, time, channels]`; `causal` pads only on the left."""

  def __init__(self, in_channels, out_channels, kernel_size, *, stride=1, dilation=1,
               causal=False, seed=(0, 0), name=None):
    super().__init__(name=name)
    fan_in = in_channels * kernel_size
    self.kernel = tf.Variable(_init([kernel_size, in_channels, out_channels], fan_in, seed),
                              name="kernel")
    self.bias = tf.Variable(_init([out_channels], fan_in, [seed[0], seed[1] + 1]), name="bias")
    self.stride, self.dilation = stride, dilation
    self.causal, self.kernel_size = causal, kernel_size

  def __call__(self, x):
    kernel, bias = tf.cast(self.kernel, x.dtype), tf.cast(self.bias, x.dtype)
    if self.causal and self.kernel_size > 1:
      x = tf.pad(x, [[0, 0], [(self.kernel_size - 1) * self.dilation, 0], [0, 0]])
      return tf.nn.conv1d(x, kernel, self.stride, "VALID", dilations=self.dilation) + bias
    return tf.nn.conv1d(x, kernel, self.stride, "SAME", dilations=self.dilation) + bias


class ConvTranspose1D(tf.Module):
  """Transposed Conv1D that upsamples time by `stride` exactly."""

  def __init__(self, in_channels, out_channels, kernel_size, *, stride, causal=False,
               seed=(0, 0), name=None):
    super().__init__(name=name)
    fan_in = in_channels * kernel_size // stride
    self.kernel = tf.Variable(_init([kernel_size, out_channels, in_channels], fan_in, seed),
                              name="kernel")
    self.bias = tf.Variable(_init([out_channels], fan_in, [seed[0], seed[1] + 1]), name="bias")
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
  a, b = tf.split(x, 2, axis=-1)
  return a * tf.sigmoid(b)


class AttentionBlock(tf.Module):
  """Pre-activation multi-head self-attention + feed-forward, both residual."""

  def __init__(self, channels, heads, *, causal, seed, name=None):
    super().__init__(name=name)
    if channels % heads:
      raise ValueError(f"Bottleneck channels {channels} must be divisible by "
                       f"attention heads {heads}.")
    self.heads, self.causal = heads, causal
    self.qkv = Conv1D(channels, 3 * channels, 1, seed=(seed, 1))
    self.out = Conv1D(channels, channels, 1, seed=(seed, 3))
    self.ff1 = Conv1D(channels, 2 * channels, 1, seed=(seed, 5))
    self.ff2 = Conv1D(2 * channels, channels, 1, seed=(seed, 7))

  def __call__(self, x):
    batch, frames, channels = tf.shape(x)[0], tf.shape(x)[1], x.shape[-1]
    x = x + tf.cast(_positions(frames, channels), x.dtype)
    q, k, v = tf.split(self.qkv(x), 3, axis=-1)
    split = lambda t: tf.transpose(  # pylint: disable=g-long-lambda
        tf.reshape(t, [batch, frames, self.heads, channels // self.heads]), [0, 2, 1, 3])
    q, k, v = split(q), split(k), split(v)
    logits = tf.cast(tf.matmul(q, k, transpose_b=True), tf.float32) / math.sqrt(
        channels // self.heads)
    if self.causal:
      mask = tf.linalg.band_part(tf.ones([frames, frames]), -1, 0)
      logits += (1.0 - mask) * -1e9
    attended = tf.matmul(tf.cast(tf.nn.softmax(logits), x.dtype), v)
    attended = tf.reshape(tf.transpose(attended, [0, 2, 1, 3]), [batch, frames, channels])
    x = x + self.out(attended)
    return x + self.ff2(tf.nn.relu(self.ff1(x)))


def _positions(frames, channels):
  """Sinusoidal position encodings `[frames, channels]` (float32)."""
  position = tf.cast(tf.range(frames), tf.float32)[:, None]
  rates = tf.exp(-math.log(10000.0) * tf.range(0, channels, 2, tf.float32) / channels)
  angles = position * rates[None]
  return tf.reshape(tf.stack([tf.sin(angles), tf.cos(angles)], axis=-1),
                    [frames, -1])[:, :channels]


class Denoiser(tf.Module):
  """Waveform U-Net: `[batch, time]` noisy audio -> `[batch, time]` clean estimate."""

  def __init__(self, *, hidden: int = 48, depth: int = 5, kernel_size: int = 8,
               stride: int = 4, growth: int = 2, max_hidden: int = 10000,
               causal: bool = False, attention_heads: int = 4,
               attention_layers: int = 1, seed: int = 0, name: str = "denoiser"):
    super().__init__(name=name)
    if depth < 1 or hidden < 1 or kernel_size < stride or stride < 1:
      raise ValueError("Denoiser needs depth >= 1, hidden >= 1 and kernel_size >= stride "
                       f">= 1; got depth={depth}, hidden={hidden}, kernel_size={kernel_size}, "
                       f"stride={stride}.")
    self.stride, self.depth, self.causal = stride, depth, causal
    encoder, decoder = [], []
    channels, width = 1, hidden
    with self.name_scope:
      for i in range(depth):
        encoder.append([
            Conv1D(channels, width, kernel_size, stride=stride, causal=causal, seed=(seed, 100 + 10 * i)),
            Conv1D(width, 2 * width, 1, seed=(seed, 102 + 10 * i))])
        decoder.append([
            Conv1D(width, 2 * width, 1, seed=(seed, 200 + 10 * i)),
            ConvTranspose1D(width, channels, kernel_size, stride=stride, causal=causal,
                            seed=(seed, 202 + 10 * i))])
        channels, width = width, min(int(growth * width), max_hidden)
      # Assigned whole (not mutated in place) so checkpoints and SavedModels track them.
      self.encoder, self.decoder = encoder, decoder[::-1]
      self.bottleneck = [AttentionBlock(channels, attention_heads, causal=causal,
                                        seed=seed * 1000 + 300 + i)
                         for i in range(attention_layers)]

  @property
  def time_multiple(self) -> int:
    """Inputs are padded to a multiple of this many samples."""
    return self.stride ** self.depth

  def __call__(self, noisy):
    dtype = noisy.dtype
    noisy32 = tf.cast(noisy, tf.float32)
    std = tf.sqrt(tf.reduce_mean(tf.square(noisy32), axis=-1, keepdims=True)) + 1e-3
    length = tf.shape(noisy)[-1]
    padded = -length % self.time_multiple
    x = tf.cast(tf.pad(noisy32 / std, [[0, 0], [0, padded]]), dtype)[..., None]
    skips = []
    for conv, mix in self.encoder:
      x = glu(mix(tf.nn.relu(conv(x))))
      skips.append(x)
    for block in self.bottleneck:
      x = block(x)
    for i, (mix, upsample) in enumerate(self.decoder):
      x = upsample(glu(mix(x + skips.pop())))
      if i < self.depth - 1:
        x = tf.nn.relu(x)
    correction = tf.cast(x[:, :length, 0], tf.float32)
    enhanced = (noisy32 / std + correction) * std
    return tf.cast(enhanced, dtype)
