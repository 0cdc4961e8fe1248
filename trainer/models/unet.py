"""The Demucs-style waveform U-Net as a tf.Module (float32 variables, any compute dtype).

Strided Conv1D encoder layers with GLU, a self-attention bottleneck (parallel
over time, so it keeps accelerators busy where an LSTM would run step by
step), transposed-conv decoder layers with skip connections, and the input
normalised by its RMS and rescaled back. The decoder predicts a correction
added to the (normalised) input, so training starts near the identity instead
of from random audio. The model
computes in the dtype of its input (bfloat16 under mixed precision);
variables stay float32. The GPU flagfiles train it at 48 kHz. A causal one
streams a bottleneck frame at a time (`UNetStep`, composed of its layers'
steps); the input it keeps goes back through `kept_input.ResidualFilter`.
"""

from typing import Tuple

import tensorflow as tf

from common import checks
from ops import kept_input
from trainer.models import attention
from trainer.models import layers
from trainer.models import level
from trainer.models import streaming

RMS_FLOOR = 1e-3  # keeps silence from being amplified without bound


def _check_shape(*, hidden, depth, kernel_size, stride, growth, max_hidden, attention_heads,
                 attention_layers, level_seconds, attention_seconds):
  """Raises ArgumentError naming the first of the U-Net's arguments it cannot take."""
  checks.at_least("level_seconds", level_seconds, 0)
  checks.at_least("attention_seconds", attention_seconds, 0)
  for argument, value in (("hidden", hidden), ("depth", depth), ("stride", stride),
                          ("growth", growth), ("attention_heads", attention_heads),
                          ("attention_layers", attention_layers)):
    checks.at_least(argument, value, 1)
  if kernel_size < stride:
    raise checks.ArgumentError("kernel_size", kernel_size, f"must be >= stride={stride}.")
  channels = UNet.bottleneck_channels(hidden=hidden, depth=depth, growth=growth,
                                      max_hidden=max_hidden)
  if channels % attention_heads:
    raise checks.ArgumentError(
        "attention_heads", attention_heads,
        f"must divide the bottleneck's {channels} channels (hidden * growth**(depth - 1), "
        "at most max_hidden).")


class UNet(tf.Module):
  """Waveform U-Net: `[batch, time]` noisy audio -> `[batch, time]` clean estimate.

  The defaults are a small shape that trains on a CPU; the GPU flagfiles set
  `hidden=48, depth=5`. With `causal`, no output sample depends on later input
  (`lookahead` is 0): the convolutions pad on the left, the attention sees the
  latest `attention_seconds` (every frame so far if 0), and the input is
  normalised by its RMS over the latest `level_seconds` (all so far if 0)
  instead of the clip's. Both windows no longer than the training crop keep a
  stream's attention and level of the kind the model was trained on, and its
  state bounded (`UNetStep`).
  """

  def __init__(self, *, sample_rate: int, hidden: int = 16, depth: int = 3,
               kernel_size: int = 8, stride: int = 4, growth: int = 2,
               max_hidden: int = 10000, causal: bool = False, attention_heads: int = 4,
               attention_layers: int = 1, level_seconds: float = 1.0,
               attention_seconds: float = 1.0, seed: int = 0, name: str = "unet"):
    super().__init__(name=name)
    _check_shape(hidden=hidden, depth=depth, kernel_size=kernel_size, stride=stride,
                 growth=growth, max_hidden=max_hidden, attention_heads=attention_heads,
                 attention_layers=attention_layers, level_seconds=level_seconds,
                 attention_seconds=attention_seconds)
    self.stride, self.depth, self.causal = stride, depth, causal
    self.sample_rate, self.kernel_size = sample_rate, kernel_size
    self.lookahead, self.tflite_transform = (0 if causal else None), None  # (no STFT)
    # A causal model's windows: samples of its level, bottleneck frames of its attention
    # (None: everything so far).
    self.level_samples = max(1, int(round(level_seconds * sample_rate))) if (
        causal and level_seconds) else None
    self.attention_frames = max(1, int(round(attention_seconds * sample_rate
                                             / stride ** depth))) if (
                                                 causal and attention_seconds) else None
    self.sliding_level = level.SlidingMean(self.level_samples)
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
      self.bottleneck = [attention.AttentionBlock(channels, attention_heads, causal=causal,
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
    return tf.sqrt(self.sliding_level(tf.square(signal))) + RMS_FLOOR

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

  def keeping(self, noisy, keep_input, keep_presence) -> tf.Tensor:
    """The output `[batch, time]` (float32) with shares of the input kept through the
    causal residual filter (`kept_input.ResidualFilter`)."""
    return kept_input.ResidualFilter(self.sample_rate, keep_input, keep_presence)(
        self(noisy), noisy)

  def stream_step(self, *, keep_input=kept_input.KEEP, keep_presence=kept_input.PRESENCE_KEEP,
                  transform=None) -> "UNetStep":
    """The stream of this causal U-Net (`transform`: for models with an STFT; None)."""
    if transform is not None:
      raise ValueError(f"transform={transform!r}: a U-Net has no STFT to compute.")
    return UNetStep(self, keep_input=keep_input, keep_presence=keep_presence)


class UNetStep(streaming.StreamStep):
  """`stride ** depth` samples (one bottleneck frame) of a causal `UNet` per call: each
  layer's step with its state (the level's window, each convolution's history and overlap
  tail, each attention block's key/value cache) and the kept input's filter history.

  Its latency is that block less one sample (the block's first sample waits
  for its last); nothing leads.
  """

  def __init__(self, model: UNet, *, keep_input, keep_presence):
    if model.level_samples is None or model.attention_frames is None:
      raise ValueError("This causal U-Net attends to, and normalises by, everything so far, "
                       "so its stream's state would grow without bound: train it with "
                       "--level_seconds and --attention_seconds above 0 (the defaults).")
    self.model = model
    self._keep = kept_input.ResidualFilter(model.sample_rate, keep_input, keep_presence)
    self.hop, self.lead = model.time_multiple, 0
    self.latency = self.hop - 1
    self._set_state_shapes(
        model.sliding_level.state_shapes + [self._keep.state_shape]
        + [conv.state_shape for conv, _ in model.encoder]
        + [upsample.state_shape for _, upsample in model.decoder]
        + [shape for block in model.bottleneck for shape in block.state_shapes])

  def __call__(self, samples: tf.Tensor, state: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
    model, depth = self.model, self.model.depth
    squares, seen, kept, *parts = self._unpack(state)
    histories, tails, caches = parts[:depth], parts[depth:2 * depth], parts[2 * depth:]
    mean_square, squares, seen = model.sliding_level.step(tf.square(samples), squares, seen)
    rms = tf.sqrt(mean_square) + RMS_FLOOR
    x, skips = (samples / rms)[:, None], []
    for i, (conv, mix) in enumerate(model.encoder):
      x, histories[i] = conv.step(x, histories[i])
      x = layers.glu(mix(tf.nn.relu(x)[None])[0])
      skips.append(x)
    for i, block in enumerate(model.bottleneck):
      x, caches[3 * i:3 * i + 3] = block.step(x, *caches[3 * i:3 * i + 3])
    for i, (mix, upsample) in enumerate(model.decoder):
      x, tails[i] = upsample.step(layers.glu(mix((x + skips.pop())[None])[0]), tails[i])
      if i < depth - 1:
        x = tf.nn.relu(x)
    enhanced = (samples / rms + x[:, 0]) * rms
    out, kept = self._keep.step(enhanced, samples, kept)
    return out, self._pack([squares, seen, kept, *histories, *tails, *caches])
