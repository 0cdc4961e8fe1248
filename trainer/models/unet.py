"""The Demucs-style waveform U-Net as a tf.Module (float32 variables, any compute dtype).

Strided Conv1D encoder layers with GLU, a self-attention bottleneck (parallel
over time, so it keeps accelerators busy where an LSTM would run step by
step), transposed-conv decoder layers with skip connections, and the input
normalised by its RMS and rescaled back. The decoder predicts a correction
added to the (normalised) input, so training starts near the identity instead
of from random audio. The model
computes in the dtype of its input (bfloat16 under mixed precision);
variables stay float32. The GPU flagfiles train it at 48 kHz.
"""

import math

import tensorflow as tf

from common import checks
from trainer.models import layers

RMS_FLOOR = 1e-3  # keeps silence from being amplified without bound


class AttentionBlock(tf.Module):
  """Pre-activation multi-head self-attention + feed-forward, both residual."""

  def __init__(self, channels, heads, *, causal, seed, name=None):
    super().__init__(name=name)
    self.heads, self.causal = heads, causal
    self.qkv = layers.Conv1D(channels, 3 * channels, 1, seed=(seed, 1))
    self.out = layers.Conv1D(channels, channels, 1, seed=(seed, 3))
    self.ff1 = layers.Conv1D(channels, 2 * channels, 1, seed=(seed, 5))
    self.ff2 = layers.Conv1D(2 * channels, channels, 1, seed=(seed, 7))

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


class UNet(tf.Module):
  """Waveform U-Net: `[batch, time]` noisy audio -> `[batch, time]` clean estimate.

  The defaults are a small shape that trains on a CPU; the GPU flagfiles set
  `hidden=48, depth=5`. With `causal`, no output sample depends on later input
  (`lookahead` is 0): the convolutions pad on the left, the attention is
  masked, and the input is normalised by its RMS so far instead of the clip's.
  """

  def __init__(self, *, hidden: int = 16, depth: int = 3, kernel_size: int = 8,
               stride: int = 4, growth: int = 2, max_hidden: int = 10000,
               causal: bool = False, attention_heads: int = 4,
               attention_layers: int = 1, seed: int = 0, name: str = "unet"):
    super().__init__(name=name)
    for argument, value in (("hidden", hidden), ("depth", depth), ("stride", stride),
                            ("growth", growth), ("attention_heads", attention_heads),
                            ("attention_layers", attention_layers)):
      checks.at_least(argument, value, 1)
    if kernel_size < stride:
      raise checks.ArgumentError("kernel_size", kernel_size, f"must be >= stride={stride}.")
    channels = self.bottleneck_channels(hidden=hidden, depth=depth, growth=growth,
                                        max_hidden=max_hidden)
    if channels % attention_heads:
      raise checks.ArgumentError(
          "attention_heads", attention_heads,
          f"must divide the bottleneck's {channels} channels (hidden * growth**(depth - 1), "
          "at most max_hidden).")
    self.stride, self.depth, self.causal = stride, depth, causal
    self.lookahead = 0 if causal else None
    encoder, decoder = [], []
    channels, width = 1, hidden
    with self.name_scope:
      for i in range(depth):
        encoder.append([
            layers.Conv1D(channels, width, kernel_size, stride=stride, causal=causal,
                          seed=(seed, 100 + 10 * i)),
            layers.Conv1D(width, 2 * width, 1, seed=(seed, 102 + 10 * i))])
        decoder.append([
            layers.Conv1D(width, 2 * width, 1, seed=(seed, 200 + 10 * i)),
            layers.ConvTranspose1D(width, channels, kernel_size, stride=stride,
                                   causal=causal, seed=(seed, 202 + 10 * i))])
        channels, width = width, min(int(growth * width), max_hidden)
      # Assigned whole (not mutated in place) so checkpoints and SavedModels track them.
      self.encoder, self.decoder = encoder, decoder[::-1]
      self.bottleneck = [AttentionBlock(channels, attention_heads, causal=causal,
                                        seed=seed * 1000 + 300 + i)
                         for i in range(attention_layers)]

  @staticmethod
  def bottleneck_channels(*, hidden: int, depth: int, growth: int, max_hidden: int) -> int:
    """Channels of the deepest encoder layer, where the attention runs."""
    width = hidden
    for _ in range(depth - 1):
      width = min(int(growth * width), max_hidden)
    return width

  @property
  def time_multiple(self) -> int:
    """Inputs are padded (at the end) to a multiple of this many samples."""
    return self.stride ** self.depth

  def _rms(self, signal):
    """`[batch, 1]` RMS of the clip, or `[batch, time]` RMS up to each sample if causal."""
    if not self.causal:
      return tf.sqrt(tf.reduce_mean(tf.square(signal), axis=-1, keepdims=True)) + RMS_FLOOR
    count = tf.cast(tf.range(1, tf.shape(signal)[-1] + 1), tf.float32)
    return tf.sqrt(tf.cumsum(tf.square(signal), axis=-1) / count) + RMS_FLOOR

  def __call__(self, noisy):
    dtype = noisy.dtype
    noisy32 = tf.cast(noisy, tf.float32)
    rms = self._rms(noisy32)
    length = tf.shape(noisy)[-1]
    padded = -length % self.time_multiple
    x = tf.cast(tf.pad(noisy32 / rms, [[0, 0], [0, padded]]), dtype)[..., None]
    skips = []
    for conv, mix in self.encoder:
      x = layers.glu(mix(tf.nn.relu(conv(x))))
      skips.append(x)
    for block in self.bottleneck:
      x = block(x)
    for i, (mix, upsample) in enumerate(self.decoder):
      x = upsample(layers.glu(mix(x + skips.pop())))
      if i < self.depth - 1:
        x = tf.nn.relu(x)
    correction = tf.cast(x[:, :length, 0], tf.float32)
    enhanced = (noisy32 / rms + correction) * rms
    return tf.cast(enhanced, dtype)
