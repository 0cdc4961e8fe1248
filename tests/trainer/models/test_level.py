"""Tests for trainer.models.level: the sliding mean both causal models normalise by, step by step over any split equal to the offline mean."""

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from tests.trainer.models import test_layers
from trainer.models import level


class SlidingMeanTest(tf.test.TestCase, parameterized.TestCase):

  @parameterized.parameters(None, 1, 5, 64)
  def test_its_steps_equal_the_mean_offline(self, window):
    mean = level.SlidingMean(window)
    values = tf.random.stateless_uniform([300], [0, window or 0], 0.0, 4.0)
    offline = mean(values[None])[0]
    for sizes in test_layers.feeds(window or 16, 20):
      state = [tf.zeros(shape) for shape in mean.state_shapes]
      step = lambda piece, earlier, seen: (  # pylint: disable=g-long-lambda
          lambda out: (out[0], out[1:]))(mean.step(piece, earlier, seen))
      self.assertAllClose(test_layers.in_steps(step, values, sizes, state), offline,
                          atol=1e-6, rtol=1e-6)

  def test_it_is_the_mean_of_the_latest_window(self):
    values = np.arange(1.0, 11.0, dtype=np.float32)
    self.assertAllClose(level.SlidingMean(3)(values[None])[0],
                        [1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0])
    self.assertAllClose(level.SlidingMean(None)(values[None])[0],
                        np.cumsum(values) / np.arange(1, 11))

  def test_a_loud_past_costs_the_window_no_precision(self):
    values = np.concatenate([np.full(1000, 1e6), np.full(100, 1e-3)]).astype(np.float32)
    self.assertAllClose(level.SlidingMean(10)(values[None])[0, -1], 1e-3, rtol=1e-4)


if __name__ == "__main__":
  tf.test.main()
