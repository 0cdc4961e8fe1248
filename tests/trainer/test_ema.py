"""Tests for optim.ExponentialMovingAverage in the step: values against a hand computation, skipped steps left out, two replicas, swap and checkpoint."""

import numpy as np
import tensorflow as tf

from tests import helpers
from trainer import optim


def build_with_ema(strategy, decay=0.9, warmup=True):
  with strategy.scope():
    ema = optim.ExponentialMovingAverage(decay, warmup=warmup)
  model, train = helpers.build(strategy, jit_compile=False, ema=ema)
  return model, train, ema


class EmaTest(tf.test.TestCase):

  def test_averages_follow_the_hand_computation_and_skip_non_finite_steps(self):
    strategy = tf.distribute.get_strategy()
    model, train, ema = build_with_ema(strategy)
    examples = helpers.data(8 * 5)
    examples["noisy"][16:24] = np.nan  # the third step is skipped
    iterator = helpers.iterator(strategy, examples, 8)
    want = helpers.weights(model)  # the averages start at the initial weights
    applied = 0
    for step in range(5):
      before = helpers.weights(model)
      out = train(iterator, 1)
      after = helpers.weights(model)
      if step == 2:
        self.assertEqual(float(out["applied_steps"]), 0.0)
        for x, y in zip(before, after):
          self.assertAllEqual(x, y)
      else:
        applied += 1
        decay = min(0.9, (1 + applied) / (10 + applied))
        want = [decay * a + (1 - decay) * w for a, w in zip(want, after)]
      for average, expected in zip(ema.average, want):
        self.assertAllClose(average, expected, rtol=1e-6, atol=1e-7)
    self.assertEqual(int(ema.updates.numpy()), 4)
    self.assertNotAllClose(ema.average[0], helpers.weights(model)[0])

  def test_two_replicas_average_like_one_device(self):
    examples = helpers.data()
    averages = []
    for strategy, per_replica in ((helpers.mirrored(), 4), (helpers.one_device(), 8)):
      _, train, ema = build_with_ema(strategy, warmup=False)
      train(helpers.iterator(strategy, examples, per_replica), 3)
      averages.append([a.numpy() for a in ema.average])
    for x, y in zip(*averages):
      self.assertAllClose(x, y, rtol=1e-6)

  def test_swapped_weights_are_restored_and_the_average_is_checkpointed(self):
    strategy = tf.distribute.get_strategy()
    model, train, ema = build_with_ema(strategy)
    train(helpers.iterator(strategy, helpers.data(), 8), 3)
    raw = helpers.weights(model)
    with ema.swapped(train.model.trainable_variables):
      for got, average in zip(helpers.weights(model), ema.average):
        self.assertAllEqual(got, average)
    for x, y in zip(helpers.weights(model), raw):
      self.assertAllEqual(x, y)
    path = tf.train.Checkpoint(ema=ema).save(self.create_tempdir().full_path + "/c")
    restored = optim.ExponentialMovingAverage(0.5)
    restored.build([tf.Variable(tf.zeros_like(v)) for v in raw])
    tf.train.Checkpoint(ema=restored).restore(path).assert_existing_objects_matched()
    for x, y in zip(restored.average, ema.average):
      self.assertAllEqual(x, y)
    self.assertEqual(int(restored.updates.numpy()), 3)

  def test_bad_decay_is_named(self):
    with self.assertRaisesRegex(ValueError, r"ema_decay=1.0 must be in \(0, 1\)"):
      optim.ExponentialMovingAverage(1.0)


if __name__ == "__main__":
  tf.test.main()
