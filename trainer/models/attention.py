"""The U-Net's self-attention block, offline over a clip and, with a window, step by step over a stream with a key/value cache."""

import math
from typing import List, Optional, Tuple

import tensorflow as tf

from trainer.models import layers


class AttentionBlock(tf.Module):
  """Pre-activation multi-head self-attention + feed-forward, both residual.

  Causal with a `window` (frames), each frame attends to itself and the
  `window - 1` before it, with a penalty on the logits growing with the
  distance, one slope per head (no absolute positions, so a stream never
  meets a position it was not trained at); otherwise sinusoidal positions are
  added to the input and a causal block attends to every frame so far.
  """

  def __init__(self, channels: int, heads: int, *, causal: bool,
               window: Optional[int] = None, seed: int, name=None):
    super().__init__(name=name)
    self.heads, self.causal, self.channels = heads, causal, channels
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
    return self._finish(x, tf.reshape(tf.transpose(attended, [0, 2, 1, 3]),
                                      [batch, frames, channels]))

  def _finish(self, x, attended):
    """The block's output from its input and the heads' attended values `[b, f, c]`."""
    x = x + self.out(attended)
    return x + self.ff2(tf.nn.relu(self.ff1(x)))

  @property
  def state_shapes(self) -> List[list]:
    """The step's state: the keys and values of the `window - 1` frames before, and how
    many of those are real (zeros before the first frame)."""
    if self.window is None:
      raise ValueError("Only a causal block with a window steps: attending to every frame so "
                       "far would grow its state without bound.")
    return [[self.window - 1, self.channels]] * 2 + [[]]

  def step(self, x, keys, values, filled) -> Tuple[tf.Tensor, List[tf.Tensor]]:
    """The block on the next frames `x` `[frames, c]` after the cached `keys` and `values`
    (`filled` of them real); returns its output and the new cache."""
    frames, cached = x.shape[0], self.window - 1
    per_head = self.channels // self.heads
    q, k, v = tf.split(self.qkv(x[None])[0], 3, axis=-1)
    keys, values = tf.concat([keys, k], 0), tf.concat([values, v], 0)
    split = lambda t: tf.transpose(tf.reshape(t, [-1, self.heads, per_head]), [1, 0, 2])  # pylint: disable=g-long-lambda
    logits = tf.matmul(split(q), split(keys), transpose_b=True) / math.sqrt(per_head)
    # Each new frame's distance to every cached and new frame; the cache's unfilled start
    # and later frames are unseen.
    distance = (tf.range(frames, dtype=tf.float32)[:, None] + cached
                - tf.range(cached + frames, dtype=tf.float32)[None, :])
    unseen = ((distance < 0) | (distance >= self.window)
              | (tf.range(cached + frames, dtype=tf.float32)[None, :] < cached - filled))
    logits -= self.slopes[:, None, None] * distance
    logits += tf.cast(unseen, tf.float32) * -1e9
    attended = tf.matmul(tf.nn.softmax(logits), split(values))  # [heads, frames, per_head]
    attended = tf.reshape(tf.transpose(attended, [1, 0, 2]), [1, frames, self.channels])
    out = self._finish(x[None], attended)[0]
    return out, [keys[frames:], values[frames:], tf.minimum(filled + frames, float(cached))]


def _positions(frames, channels):
  """Sinusoidal position encodings `[frames, channels]` (float32)."""
  position = tf.cast(tf.range(frames), tf.float32)[:, None]
  rates = tf.exp(-math.log(10000.0) * tf.range(0, channels, 2, tf.float32) / channels)
  angles = position * rates[None]
  return tf.reshape(tf.stack([tf.sin(angles), tf.cos(angles)], axis=-1),
                    [frames, -1])[:, :channels]
