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
  """Pre-activation multi-head self-attention + feed-forward, both residual.

  Causal with a `window` (frames), each frame attends to itself and the
  `window - 1` before it, with a penalty on the logits growing with the
  distance, one slope per head (no absolute positions, so a stream never
  meets a position it was not trained at); otherwise sinusoidal positions are
  added to the input and a causal block attends to every frame so far.
  """

  def __init__(self, channels, heads, *, causal, window=None, seed, name=None):
    super().__init__(name=name)
    self.heads, self.causal = heads, causal
    self.window = window if causal else None
    self.qkv = layers.Conv1D(channels, 3 * channels, 1, seed=(seed, 1))
    self.out = layers.Conv1D(channels, channels, 1, seed=(seed, 3))
    self.ff1 = layers.Conv1D(channels, 2 * channels, 1, seed=(seed, 5))
    self.ff2 = layers.Conv1D(2 * channels, channels, 1, seed=(seed, 7))

  @property
  def slopes(self) -> tf.Tensor:
    """`[heads]`: how much each head's logits fall per frame of distance."""
    return tf.constant([2.0 ** (-8.0 * (h + 1) / self.heads) for h in range(self.heads)])

  def __call__(self, x):
    batch, frames, channels = tf.shape(x)[0], tf.shape(x)[1], x.shape[-1]
    if self.window is None:
      x = x + tf.cast(_positions(frames, channels), x.dtype)
    q, k, v = tf.split(self.qkv(x), 3, axis=-1)
    split = lambda t: tf.transpose(  # pylint: disable=g-long-lambda
        tf.reshape(t, [batch, frames, self.heads, channels // self.heads]), [0, 2, 1, 3])
    q, k, v = split(q), split(k), split(v)
    logits = tf.cast(tf.matmul(q, k, transpose_b=True), tf.float32) / math.sqrt(
        channels // self.heads)
    if self.causal:
      distance = tf.cast(tf.range(frames)[:, None] - tf.range(frames)[None, :], tf.float32)
      seen = distance >= 0
      if self.window is not None:
        seen &= distance < self.window
        logits -= self.slopes[:, None, None] * distance
      logits += (1.0 - tf.cast(seen, tf.float32)) * -1e9
    attended = tf.matmul(tf.cast(tf.nn.softmax(logits), x.dtype), v)
    return self.finish(x, tf.reshape(tf.transpose(attended, [0, 2, 1, 3]),
                                     [batch, frames, channels]))

  def finish(self, x, attended):
    """The block's output from its input and the heads' attended values `[b, f, c]`."""
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
  (`lookahead` is 0): the convolutions pad on the left, the attention sees the
  latest `attention_seconds` (every frame so far if 0), and the input is
  normalised by its RMS over the latest `level_seconds` (all so far if 0)
  instead of the clip's. Both windows no longer than the training crop keep a
  stream's attention and level of the kind the model was trained on, and its
  state bounded (trainer.serving.unet_step).
  """

  def __init__(self, *, sample_rate: int, hidden: int = 16, depth: int = 3,
               kernel_size: int = 8, stride: int = 4, growth: int = 2,
               max_hidden: int = 10000, causal: bool = False, attention_heads: int = 4,
               attention_layers: int = 1, level_seconds: float = 1.0,
               attention_seconds: float = 1.0, seed: int = 0, name: str = "unet"):
    super().__init__(name=name)
    checks.at_least("level_seconds", level_seconds, 0)
    checks.at_least("attention_seconds", attention_seconds, 0)
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
    self.sample_rate, self.kernel_size = sample_rate, kernel_size
    self.lookahead = 0 if causal else None
    # A causal model's windows: samples of its level, bottleneck frames of its attention
    # (None: everything so far).
    self.level_samples = max(1, int(round(level_seconds * sample_rate))) if (
        causal and level_seconds) else None
    self.attention_frames = max(1, int(round(attention_seconds * sample_rate
                                             / stride ** depth))) if (
                                                 causal and attention_seconds) else None
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
                                        window=self.attention_frames,
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
    """`[batch, 1]` RMS of the clip, or if causal `[batch, time]` RMS of the latest
    `level_samples` (all so far if None) up to each sample."""
    if not self.causal:
      return tf.sqrt(tf.reduce_mean(tf.square(signal), axis=-1, keepdims=True)) + RMS_FLOOR
    count = tf.range(1, tf.shape(signal)[-1] + 1)
    if self.level_samples is None:
      total = tf.cumsum(tf.square(signal), axis=-1)
    else:  # a difference of running sums, in float64 so that a loud past costs no precision
      total = tf.cumsum(tf.square(tf.cast(signal, tf.float64)), axis=-1)
      before = tf.pad(total, [[0, 0], [self.level_samples, 0]])[:, :tf.shape(total)[-1]]
      total = tf.cast(total - before, tf.float32)
      count = tf.minimum(count, self.level_samples)
    return tf.sqrt(total / tf.cast(count, tf.float32)) + RMS_FLOOR

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
