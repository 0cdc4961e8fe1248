"""One block of a causal U-Net as a stream step (trainer.serving.stream_step): its windowed RMS, each strided convolution's history, each transposed convolution's overlap tail and each attention block's key/value cache, carried as state."""

import math
from typing import Tuple

import tensorflow as tf

from trainer.models import layers
from trainer.models import unet as unet_lib
from trainer.serving import kept_input
from trainer.serving import stream_step


class UNetStep(stream_step.StreamStep):
  """`stride ** depth` samples (one bottleneck frame) of a causal `UNet` per call.

  Its latency is that block less one sample (the block's first sample waits
  for its last); nothing leads. The input it keeps goes through
  `kept_input.residual_filter`, causal too, whose history is state as well.
  """

  def __init__(self, model: unet_lib.UNet, *, keep_input=kept_input.KEEP,
               keep_presence=kept_input.PRESENCE_KEEP):
    if model.level_samples is None or model.attention_frames is None:
      raise ValueError("This causal U-Net attends to, and normalises by, everything so far, "
                       "so its stream's state would grow without bound: train it with "
                       "--level_seconds and --attention_seconds above 0 (the defaults).")
    self.model = model
    # Designed once: the shares are fixed for the stream.
    self._taps = kept_input.residual_filter(model.sample_rate, keep_input, keep_presence)
    self.hop, self.lead = model.time_multiple, 0
    self.latency = self.hop - 1
    shapes = [[model.level_samples - 1], [], [kept_input.filter_taps(model.sample_rate) - 1]]
    for conv, _ in model.encoder:
      shapes.append([conv.kernel_size - 1, conv.kernel.shape[1]])
    for _, upsample in model.decoder:
      shapes.append([upsample.kernel_size - upsample.stride, upsample.kernel.shape[1]])
    channels = model.encoder[-1][1].kernel.shape[-1] // 2
    for _ in model.bottleneck:
      shapes += [[model.attention_frames - 1, channels]] * 2 + [[]]
    self._set_state_shapes(shapes)

  def __call__(self, samples: tf.Tensor, state: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
    model, depth = self.model, len(self.model.encoder)
    squares, seen, residuals, *parts = self._unpack(state)
    histories, tails = parts[:depth], parts[depth:2 * depth]
    caches = parts[2 * depth:]
    rms, squares, seen = self._rms(samples, squares, seen)
    x, new_state = (samples / rms)[None, :, None], []
    skips = []
    for (conv, mix), history in zip(model.encoder, histories):
      seen_frames = tf.concat([history, x[0]], 0)  # what the causal conv sees of its input
      x = layers.glu(mix(tf.nn.relu(_convolve(conv, seen_frames))))
      new_state.append(seen_frames[tf.shape(seen_frames)[0] - history.shape[0]:])
      skips.append(x)
    new_caches = []
    for i, block in enumerate(model.bottleneck):
      x, cache = self._attend(block, x, caches[3 * i:3 * i + 3])
      new_caches += cache
    new_tails = []
    for i, ((mix, upsample), tail) in enumerate(zip(model.decoder, tails)):
      x, tail = _transpose_convolve(upsample, layers.glu(mix(x + skips.pop())), tail)
      new_tails.append(tail)
      if i < depth - 1:
        x = tf.nn.relu(x)
    enhanced = (samples / rms + x[0, :, 0]) * rms
    residual = samples - enhanced
    out = enhanced + kept_input.filter_causally(residual[None], self._taps, residuals[None])[0]
    residuals = tf.concat([residuals, residual], 0)[self.hop:]
    return out, self._pack([squares, seen, residuals, *new_state, *new_tails, *new_caches])

  def _rms(self, samples, squares, seen):
    """`(rms [hop], squares, seen)`: `UNet._rms` over the window of the latest
    `level_samples` (the `squares` of the ones before; `seen`: how many, capped)."""
    window = self.model.level_samples
    extended = tf.concat([squares, tf.square(samples)], 0)
    total = tf.cumsum(extended)
    before = tf.concat([[0.0], total[:self.hop - 1]], 0)
    sums = total[window - 1:window - 1 + self.hop] - before
    count = tf.minimum(seen + tf.range(1.0, self.hop + 1.0), float(window))
    rms = tf.sqrt(sums / count) + unet_lib.RMS_FLOOR
    return rms, extended[self.hop:], tf.minimum(seen + self.hop, float(window))

  def _attend(self, block: unet_lib.AttentionBlock, x, cache):
    """The block on one new frame `x` `[1, 1, c]` with the keys and values of the
    `attention_frames - 1` frames before it (zeros before the first) and how many of
    those are real; returns its output and the new cache."""
    keys, values, filled = cache
    window, heads = self.model.attention_frames, block.heads
    channels = x.shape[-1]
    q, k, v = tf.split(block.qkv(x)[0, 0], 3)
    keys, values = tf.concat([keys, k[None]], 0), tf.concat([values, v[None]], 0)
    per_head = lambda t: tf.reshape(t, [-1, heads, channels // heads])  # pylint: disable=g-long-lambda
    logits = tf.reduce_sum(per_head(q[None]) * per_head(keys), -1) / math.sqrt(
        channels // heads)  # [window, heads]
    distance = tf.range(window - 1.0, -1.0, -1.0)  # of each cached frame from this one
    logits -= distance[:, None] * block.slopes[None]
    logits += tf.cast(distance[:, None] > filled, tf.float32) * -1e9
    weights = tf.nn.softmax(logits, axis=0)
    attended = tf.reduce_sum(weights[:, :, None] * per_head(values), 0)
    out = block.finish(x, tf.reshape(attended, [1, 1, channels]))
    return out, [keys[1:], values[1:], tf.minimum(filled + 1.0, window - 1.0)]


def _convolve(conv: layers.Conv1D, seen_frames):
  """A causal strided conv over frames it has seen whole: `[1, frames, out]`."""
  kernel = tf.cast(conv.kernel, seen_frames.dtype)
  return tf.nn.convolution(seen_frames[None], kernel, conv.stride, "VALID") + conv.bias


def _transpose_convolve(upsample: layers.ConvTranspose1D, x, tail):
  """The causal transposed conv of `x` `[1, frames, in]` with the overlap `tail` of the
  frames before; returns its `frames * stride` samples and the new tail."""
  frames, stride = x.shape[1], upsample.stride
  channels = upsample.kernel.shape[1]
  full = tf.nn.conv1d_transpose(x, upsample.kernel, [1, (frames - 1) * stride +
                                                     upsample.kernel_size, channels],
                                stride, "VALID")[0]
  full += tf.pad(tail, [[0, frames * stride], [0, 0]])
  return (full[:frames * stride] + upsample.bias)[None], full[frames * stride:]
