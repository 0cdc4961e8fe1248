"""Tests for trainer.optim: AdamW against float64 NumPy, schedules, checkpointing."""

import numpy as np
import tensorflow as tf

from trainer import optim


def numpy_adamw(p, grad_fn, steps, lr_fn, b1=0.9, b2=0.999, eps=1e-8, wd=0.0):
  m, v = np.zeros_like(p), np.zeros_like(p)
  for t in range(1, steps + 1):
    g, lr = grad_fn(p), lr_fn(t - 1)
    p = p * (1 - lr * wd)
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    p = p - lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
  return p


def apply(optimizer, variables, grads, learning_rate, finite=True):
  """One update through the optimizer's contract (the default strategy, cross-replica)."""
  optimizer.apply(tf.distribute.get_strategy(), variables, grads, finite=tf.constant(finite),
                  learning_rate=tf.constant(learning_rate, tf.float32))


class AdamWTest(tf.test.TestCase):

  def train_quadratic(self, dtype):
    a = np.array([0.5, 2.0, 1.0, 3.0])
    c = np.array([1.0, -2.0, 0.5, 0.25])
    grad = lambda p: a * (p - c)
    schedule = optim.warmup_cosine(0.05, warmup_steps=5, total_steps=50, final_fraction=0.1)
    optimizer = optim.AdamW(schedule, weight_decay=0.1, decay_filter=lambda _: True)
    p = tf.Variable(np.zeros(4, dtype))
    optimizer.build([p])
    for step in range(50):
      apply(optimizer, [p], [tf.constant(grad(p.numpy().astype(np.float64)), dtype)],
            schedule(step))
    self.assertEqual(int(optimizer.iterations.numpy()), 50)
    want = numpy_adamw(np.zeros(4), grad, 50, lambda s: float(schedule(s)), wd=0.1)
    self.assertGreater(np.abs(want).min(), 0.05)  # it really moved
    return p.numpy(), want

  def test_matches_float64_numpy_on_a_quadratic(self):
    got, want = self.train_quadratic(np.float64)
    self.assertAllClose(got, want, rtol=1e-6, atol=1e-6)

  def test_float32_variables_stay_within_float32_rounding(self):
    got, want = self.train_quadratic(np.float32)
    self.assertAllClose(got, want, rtol=2e-5, atol=2e-5)

  def test_warmup_cosine_shape(self):
    schedule = optim.warmup_cosine(1.0, warmup_steps=10, total_steps=110, final_fraction=0.1)
    values = [float(schedule(s)) for s in (0, 4, 9, 10, 60, 110, 500)]
    self.assertAllClose(values, [0.1, 0.5, 1.0, 1.0, 0.55, 0.1, 0.1], atol=1e-6)
    self.assertAllClose(optim.constant(0.3)(7), 0.3)
    with self.assertRaisesRegex(ValueError, r"warmup_steps=10 must be in \[0, 10\)"):
      optim.warmup_cosine(1.0, warmup_steps=10, total_steps=10)

  def test_slots_and_iterations_are_checkpointed(self):
    p = tf.Variable([1.0, 2.0])
    optimizer = optim.AdamW(0.1)
    optimizer.build([p])
    apply(optimizer, [p], [tf.constant([1.0, 1.0])], 0.1)
    optimizer.iterations.assign(7)
    path = tf.train.Checkpoint(optimizer=optimizer).save(self.create_tempdir().full_path + "/c")
    restored = optim.AdamW(0.1)
    restored.build([tf.Variable([0.0, 0.0])])
    tf.train.Checkpoint(optimizer=restored).restore(path).assert_existing_objects_matched()
    self.assertEqual(int(restored.iterations.numpy()), 7)
    self.assertAllClose(restored.m[0], optimizer.m[0])
    self.assertAllClose(restored.v[0], optimizer.v[0])

  def test_weight_decay_skips_biases_and_scales_by_default(self):
    kernel, bias = tf.Variable(np.ones([2, 3], np.float32)), tf.Variable(np.ones(3, np.float32))
    optimizer = optim.AdamW(0.1, weight_decay=0.5)
    optimizer.build([kernel, bias])
    self.assertEqual(optimizer.decays, [True, False])
    apply(optimizer, [kernel, bias], [tf.zeros_like(kernel), tf.zeros_like(bias)], 0.1)
    self.assertAllClose(kernel, np.full([2, 3], 0.95))  # zero gradient: decay alone
    self.assertAllClose(bias, np.ones(3))

  def test_a_decay_filter_chooses_what_decays(self):
    optimizer = optim.AdamW(0.1, weight_decay=0.5, decay_filter=lambda v: "gain" not in v.name)
    optimizer.build([tf.Variable([1.0], name="gain"), tf.Variable([1.0], name="offset")])
    self.assertEqual(optimizer.decays, [False, True])

  def test_a_step_that_is_not_finite_changes_nothing(self):
    p = tf.Variable([1.0, 2.0])
    optimizer = optim.AdamW(0.1)
    optimizer.build([p])
    apply(optimizer, [p], [tf.constant([np.nan, 1.0])], 0.1, finite=False)
    self.assertAllEqual(p, [1.0, 2.0])
    self.assertAllEqual(optimizer.m[0], [0.0, 0.0])
    self.assertEqual(int(optimizer.iterations.numpy()), 0)

  def test_rebuilding_for_another_model_is_an_error(self):
    optimizer = optim.AdamW(0.1)
    first = [tf.Variable(1.0)]
    optimizer.build(first)
    optimizer.build(first)  # the same variables again: nothing to do
    with self.assertRaisesRegex(ValueError, "one optimizer per model"):
      optimizer.build([tf.Variable(1.0), tf.Variable(2.0)])
    with self.assertRaisesRegex(ValueError, "one optimizer per model"):
      optimizer.build([tf.Variable(1.0)])  # as many variables, another model's

  def test_bad_hyperparameters_name_the_argument(self):
    for kwargs, pattern in ((dict(beta_1=1.5), r"beta_1=1.5 must be in \[0, 1\)"),
                            (dict(learning_rate=0.0), "learning_rate=0.0 must be a positive"),
                            (dict(weight_decay=-1.0), "weight_decay=-1.0 must be >= 0")):
      with self.assertRaisesRegex(ValueError, pattern):
        optim.AdamW(**kwargs)


if __name__ == "__main__":
  tf.test.main()
