"""Tests for ops.stateless: identical bits under XLA, sound statistics, independent streams."""

import numpy as np
import tensorflow as tf

from ops import stateless


class RandomTest(tf.test.TestCase):

  def test_xla_and_eager_draw_the_same_numbers(self):
    draw = lambda seed: (stateless.uniform([1000], seed),  # pylint: disable=g-long-lambda
                         stateless.uniform([7, 3], seed, -1.0, 1.0, tf.float32),
                         stateless.split(seed, 4), stateless.fold_in(seed, 12))
    seed = tf.constant([123, 456], tf.int64)
    for eager, compiled in zip(draw(seed), tf.function(draw, jit_compile=True)(seed)):
      self.assertAllEqual(eager, compiled)

  def test_uniform_statistics(self):
    for dtype in (tf.float32, tf.float64):
      u = stateless.uniform([200000], [5, 6], 2.0, 4.0, dtype).numpy()
      self.assertEqual(u.dtype, dtype.as_numpy_dtype)
      self.assertGreaterEqual(u.min(), 2.0)
      self.assertLess(u.max(), 4.0)
      self.assertAllClose(u.mean(), 3.0, atol=0.01)
      self.assertAllClose(u.var(), 4.0 / 12, atol=0.01)
      self.assertLess(abs(np.corrcoef(u[1:], u[:-1])[0, 1]), 0.01)
      counts = np.histogram(u, bins=20, range=(2, 4))[0]
      self.assertLess(np.abs(counts / counts.mean() - 1).max(), 0.05)

  def test_seeds_and_derived_seeds_differ(self):
    a = stateless.uniform([64], [1, 2]).numpy()
    self.assertAllEqual(a, stateless.uniform([64], [1, 2]))
    self.assertNotAllClose(a, stateless.uniform([64], [2, 1]))
    seeds = stateless.split([1, 2], 8).numpy()
    self.assertLen({tuple(s) for s in seeds}, 8)
    folded = {tuple(stateless.fold_in([1, 2], step).numpy()) for step in range(50)}
    self.assertLen(folded, 50)

  def test_bad_seed_and_dtype(self):
    with self.assertRaisesRegex(ValueError, r"seed must have shape \[2\]"):
      stateless.uniform([3], [1, 2, 3])
    with self.assertRaisesRegex(ValueError, "float32 or float64"):
      stateless.uniform([3], [1, 2], dtype=tf.int32)


if __name__ == "__main__":
  tf.test.main()
