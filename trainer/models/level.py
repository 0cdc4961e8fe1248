"""The sliding level both causal models normalise by: each value's mean with the ones before it, over the latest `window` (all so far if None), offline over a clip and step by step over a stream."""

from typing import List, Optional, Tuple

import tensorflow as tf


class SlidingMean:
  """Means of a causal window over time.

  Args:
    window: how many of the latest values (the current one included) each mean
      covers, fewer at the start; None: every value so far.
  """

  def __init__(self, window: Optional[int]):
    self.window = window

  def __call__(self, values: tf.Tensor) -> tf.Tensor:
    """`[batch, time]` float32 -> each value's mean with those before it in the window."""
    count = tf.range(1, tf.shape(values)[-1] + 1)
    if self.window is None:
      total = tf.cumsum(values, axis=-1)
    else:  # a difference of running sums, in float64 so that a loud past costs no precision
      total = tf.cumsum(tf.cast(values, tf.float64), axis=-1)
      before = tf.pad(total, [[0, 0], [self.window, 0]])[:, :tf.shape(total)[-1]]
      total = tf.cast(total - before, tf.float32)
      count = tf.minimum(count, self.window)
    return total / tf.cast(count, tf.float32)

  @property
  def state_shapes(self) -> List[list]:
    """The step's state: the window's earlier values (their sum if the window is
    everything so far) and how many values there have been, capped at the window."""
    return [[self.window - 1] if self.window else [], []]

  def step(self, values: tf.Tensor, earlier: tf.Tensor,
           seen: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """The means for the next `values` `[n]`; returns `(means [n], earlier, seen)`."""
    n = values.shape[0]
    counts = seen + tf.range(1.0, n + 1.0)
    if self.window is None:
      totals = earlier + tf.cumsum(values)
      return totals / counts, totals[-1], seen + n
    extended = tf.concat([earlier, values], 0)
    if n == 1:  # one value (a frame of a stream): the window's sum
      sums = tf.reduce_sum(extended, keepdims=True)
    else:
      total = tf.cumsum(extended)
      before = tf.concat([[0.0], total[:n - 1]], 0)  # what precedes each window
      sums = total[self.window - 1:self.window - 1 + n] - before
    means = sums / tf.minimum(counts, float(self.window))
    return means, extended[n:], tf.minimum(seen + n, float(self.window))
