"""Tests for trainer.step on 2 logical CPU replicas: equivalences, loss scaling, bf16, Keras, metrics."""

import keras
import numpy as np
import tensorflow as tf

import ops
from ops import stateless
from tests import helpers
from trainer import loss_scale as loss_scale_lib
from trainer import optim
from trainer import step as step_lib
from trainer.models import contract

class StepEquivalenceTest(tf.test.TestCase):

  def test_the_default_strategy_trains_and_equals_one_device(self):
    examples = helpers.data()
    default = tf.distribute.get_strategy()
    default_model, default_step = helpers.build(default, steps_per_loop=3)
    single_model, single = helpers.build(helpers.one_device(), steps_per_loop=3)
    out = default_step(helpers.iterator(default, examples, 8))
    single(helpers.iterator(helpers.one_device(), examples, 8))
    self.assertEqual(int(out["global_step"]), 3)
    self.assertAllEqual(out["replica_examples"], [24.0])
    for x, y in zip(helpers.weights(default_model), helpers.weights(single_model)):
      self.assertAllClose(x, y, rtol=1e-6)

  def test_two_replicas_equal_one_device_on_the_same_global_batches(self):
    examples = helpers.data()
    mirrored_model, mirrored = helpers.build(helpers.mirrored(), steps_per_loop=3)
    single_model, single = helpers.build(helpers.one_device(), steps_per_loop=3)
    a = mirrored(helpers.iterator(helpers.mirrored(), examples, 4))
    b = single(helpers.iterator(helpers.one_device(), examples, 8))
    for x, y in zip(helpers.weights(mirrored_model), helpers.weights(single_model)):
      self.assertAllClose(x, y, rtol=1e-5, atol=1e-7)
    self.assertAllClose(a["loss"], b["loss"], rtol=1e-5)
    self.assertAllClose(a["grad_norm"], b["grad_norm"], rtol=1e-5)
    self.assertNotAllClose(helpers.weights(mirrored_model)[0], helpers.Tiny().kernel.numpy())

  def test_steps_per_loop_4_equals_4_calls_of_1(self):
    strategy, examples = helpers.mirrored(), helpers.data()
    looped_model, looped = helpers.build(strategy, steps_per_loop=4)
    single_model, single = helpers.build(strategy, steps_per_loop=1)
    looped(helpers.iterator(strategy, examples, 4))
    it = helpers.iterator(strategy, examples, 4)
    for _ in range(4):
      single(it)
    for x, y in zip(helpers.weights(looped_model), helpers.weights(single_model)):
      self.assertAllClose(x, y, rtol=1e-6, atol=1e-7)
    self.assertEqual(int(looped.global_step.numpy()), 4)

  def test_jit_on_equals_jit_off(self):
    strategy, examples = helpers.mirrored(), helpers.data()
    jit_model, jit = helpers.build(strategy, steps_per_loop=3, jit_compile=True)
    eager_model, no_jit = helpers.build(strategy, steps_per_loop=3, jit_compile=False)
    jit(helpers.iterator(strategy, examples, 4))
    no_jit(helpers.iterator(strategy, examples, 4))
    for x, y in zip(helpers.weights(jit_model), helpers.weights(eager_model)):
      self.assertAllClose(x, y, rtol=1e-5, atol=1e-5)

  def test_num_steps_override_does_not_retrace(self):
    strategy = helpers.mirrored()
    _, train = helpers.build(strategy, steps_per_loop=2)
    it = helpers.iterator(strategy, helpers.data(), 4)
    train(it)
    train(it, num_steps=3)
    self.assertEqual(int(train.global_step.numpy()), 5)
    self.assertEqual(train._loop.experimental_get_tracing_count(), 1)  # pylint: disable=protected-access


class EndOfDataTest(tf.test.TestCase):

  def test_a_call_stops_at_the_end_of_the_data_without_advancing_the_step(self):
    strategy = helpers.mirrored()
    model, train = helpers.build(strategy, steps_per_loop=3)
    finite = iter(strategy.distribute_datasets_from_function(
        lambda _: tf.data.Dataset.from_tensor_slices(helpers.data(40)).batch(4, drop_remainder=True)))
    counts = [(float(m["steps"]), int(m["global_step"]))  # 10 per-replica batches: 5 steps
              for m in (train(finite), train(finite))]
    self.assertEqual(counts, [(3.0, 3), (2.0, 5)])
    before = helpers.weights(model)
    last = train(finite)
    self.assertEqual((float(last["steps"]), float(last["applied_steps"]),
                      int(last["global_step"]), int(train.optimizer.iterations.numpy())),
                     (0.0, 0.0, 5, 5))
    self.assertTrue(np.isnan(last["loss"]))
    for x, y in zip(before, helpers.weights(model)):
      self.assertAllEqual(x, y)


class SharedGlobalStepTest(tf.test.TestCase):

  def test_a_passed_global_step_is_used_and_continues_the_schedule(self):
    strategy = helpers.mirrored()
    schedule = optim.warmup_cosine(0.01, warmup_steps=10, total_steps=100)
    with strategy.scope():
      model = helpers.Tiny()
      shared = tf.Variable(60, dtype=tf.int64, trainable=False,
                           aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
      optimizer = optim.AdamW(schedule)
    train = step_lib.make_train_step(model, helpers.l1, optimizer, strategy, global_batch_size=8,
                                     global_step=shared, steps_per_loop=2)
    self.assertIs(train.global_step, shared)
    metrics = train(helpers.iterator(strategy, helpers.data(), 4))
    self.assertEqual(int(shared.numpy()), 62)
    self.assertAllClose(metrics["learning_rate"], schedule(61))  # the last step's

  def test_a_global_step_that_is_not_a_scalar_int64_is_refused(self):
    strategy = helpers.mirrored()
    with strategy.scope():
      model, optimizer = helpers.Tiny(), optim.AdamW(0.01)
      wrong = tf.Variable(0.0)
    with self.assertRaisesRegex(ValueError, "global_step must be a scalar int64 tf.Variable, "
                                "got float32"):
      step_lib.make_train_step(model, helpers.l1, optimizer, strategy, global_batch_size=8,
                               global_step=wrong)


class WeightDecayTest(tf.test.TestCase):

  def test_the_step_decays_kernels_but_not_biases(self):
    strategy = helpers.mirrored()
    with strategy.scope():
      model, optimizer = helpers.Tiny(), optim.AdamW(0.1, weight_decay=0.5)
    no_data_gradient = lambda clean, p: 0.0 * tf.reduce_mean(p, axis=-1)  # pylint: disable=g-long-lambda
    train = step_lib.make_train_step(model, no_data_gradient, optimizer, strategy,
                                     global_batch_size=8)
    kernel, bias = model.kernel.numpy(), model.bias.numpy()
    train(helpers.iterator(strategy, helpers.data(), 4))
    self.assertAllClose(model.kernel, kernel * 0.95)
    self.assertAllClose(model.bias, bias)


class MetricsTest(tf.test.TestCase):

  def test_per_replica_metrics_add_up(self):
    strategy = helpers.mirrored()
    _, train = helpers.build(strategy, steps_per_loop=5)
    metrics = train(helpers.iterator(strategy, helpers.data(), 4))
    self.assertAllEqual(metrics["replica_examples"], [20.0, 20.0])
    self.assertAllClose(tf.reduce_sum(metrics["replica_loss_sum"]),
                        metrics["loss"] * 8 * 5, rtol=1e-5)
    self.assertAllEqual(metrics["replica_nonfinite"], [0.0, 0.0])
    self.assertAllGreater(metrics["replica_grad_norm"], 0.0)
    self.assertEqual(int(metrics["global_step"]), 5)
    self.assertAllClose(metrics["learning_rate"], 0.01)

  def test_augment_gets_a_seed_per_replica_and_step(self):
    strategy = helpers.mirrored()
    same = {k: np.repeat(v[:1], 64, axis=0) for k, v in helpers.data().items()}

    def augment(noisy, clean, seed):
      return noisy, clean + stateless.uniform(tf.shape(clean), seed, dtype=tf.float32)

    results = []
    for _ in range(2):
      model, train = helpers.build(strategy, augment=augment, steps_per_loop=2)
      results.append((train(helpers.iterator(strategy, same, 4)), helpers.weights(model)))
    (first, first_weights), (second, second_weights) = results
    losses = first["replica_loss_sum"].numpy()
    self.assertNotAlmostEqual(losses[0], losses[1], places=3)  # replicas drew differently
    self.assertAllEqual(losses, second["replica_loss_sum"])    # and reproducibly
    self.assertAllEqual(first_weights[0], second_weights[0])


class MixStepTest(tf.test.TestCase):

  def sources(self):
    examples = helpers.data()
    return {"clean": examples["clean"], "noise": examples["noisy"] - examples["clean"]}

  def test_the_step_mixes_per_replica_and_step_reproducibly_with_and_without_xla(self):
    strategy = helpers.mirrored()
    same = {k: np.repeat(v[:1], 64, axis=0) for k, v in self.sources().items()}
    results = []
    for jit in (True, True, False):
      model, train = helpers.build(strategy, steps_per_loop=2, jit_compile=jit,
                                   mix=ops.Mix(sample_rate=8000, second_noise_proba=0.5))
      results.append((train(helpers.iterator(strategy, same, 4)), helpers.weights(model)))
    (first, weights), (second, again), (eager, eager_weights) = results
    losses = first["replica_loss_sum"].numpy()
    self.assertNotAlmostEqual(losses[0], losses[1], places=3)  # replicas mixed differently
    self.assertAllEqual(losses, second["replica_loss_sum"])    # and reproducibly
    self.assertAllEqual(weights[0], again[0])
    self.assertAllClose(losses, eager["replica_loss_sum"], rtol=1e-4)
    self.assertAllClose(weights[0], eager_weights[0], rtol=1e-4, atol=1e-6)
    self.assertNotAllClose(weights[0], helpers.Tiny().kernel.numpy())

  def test_batches_and_mix_must_agree(self):
    strategy = helpers.one_device()
    _, train = helpers.build(strategy, mix=ops.Mix(sample_rate=8000))
    with self.assertRaisesRegex(ValueError, "a mix needs batches of clean speech and noise"):
      train(helpers.iterator(strategy, helpers.data(), 8))
    _, train = helpers.build(strategy)
    with self.assertRaisesRegex(ValueError, "separate clean speech and noise need a mix"):
      train(helpers.iterator(strategy, self.sources(), 8))


class AccumulationTest(tf.test.TestCase):
  """K micro-batches per update equal one update on a K-times larger batch of them."""

  def assert_equivalent(self, strategy, per_replica):
    examples = helpers.data(96)
    replicas = strategy.num_replicas_in_sync
    big_model, big = helpers.build(strategy, global_batch_size=3 * per_replica * replicas,
                                   steps_per_loop=4, jit_compile=False)
    small_model, small = helpers.build(strategy, global_batch_size=per_replica * replicas,
                                       steps_per_loop=4, accumulate_steps=3, jit_compile=False)
    want = big(helpers.iterator(strategy, examples, 3 * per_replica))
    got = small(helpers.iterator(strategy, examples, per_replica))
    self.assertEqual((int(got["global_step"]), int(got["steps"])), (4, 4))  # updates
    self.assertAllClose(got["loss"], want["loss"], rtol=1e-6)
    self.assertAllClose(got["grad_norm"], want["grad_norm"], rtol=1e-5)
    self.assertAllEqual(got["replica_examples"], want["replica_examples"])
    for x, y in zip(helpers.weights(small_model), helpers.weights(big_model)):
      self.assertAllClose(x, y, rtol=1e-6, atol=1e-6)
    self.assertNotAllClose(helpers.weights(small_model)[0], helpers.Tiny().kernel.numpy())

  def test_one_device(self):
    self.assert_equivalent(helpers.one_device(), per_replica=4)

  def test_two_replicas(self):
    # Replica r of micro-step m gets batch 2m + r: over an update, the same 12 examples a
    # 3x larger batch splits between the replicas.
    self.assert_equivalent(helpers.mirrored(), per_replica=2)

  def test_the_end_of_the_data_drops_a_partial_update(self):
    strategy = helpers.one_device()
    model, train = helpers.build(strategy, global_batch_size=4, steps_per_loop=5,
                                 accumulate_steps=3, jit_compile=False)
    iterator = iter(strategy.distribute_datasets_from_function(  # 7 micro-batches, no repeat
        lambda _: tf.data.Dataset.from_tensor_slices(helpers.data(28)).batch(4)))
    out = train(iterator)
    self.assertEqual((int(out["steps"]), int(out["global_step"])), (2, 2))
    self.assertEqual(float(out["replica_examples"][0]), 24.0)  # the 7th micro-batch unused
    self.assertEqual(int(train.optimizer.iterations.numpy()), 2)
    del model

  def test_bad_accumulation_is_named(self):
    with self.assertRaisesRegex(ValueError, "accumulate_steps=0 must be >= 1"):
      helpers.build(helpers.one_device(), accumulate_steps=0)


class BatchContractTest(tf.test.TestCase):

  def test_a_batch_that_does_not_make_the_global_batch_is_refused_while_tracing(self):
    strategy = helpers.mirrored()
    model, train = helpers.build(strategy, global_batch_size=8)
    before = helpers.weights(model)
    with self.assertRaisesRegex(ValueError, r"Each replica gets 3 examples per step, x 2 "
                                r"replicas = 6, but global_batch_size=8"):
      train(helpers.iterator(strategy, helpers.data(), 3))
    self.assertEqual(int(train.global_step.numpy()), 0)
    for x, y in zip(before, helpers.weights(model)):
      self.assertAllEqual(x, y)


  def test_a_batch_of_unknown_size_is_checked_when_the_step_runs(self):
    strategy = helpers.mirrored()
    model, train = helpers.build(strategy, global_batch_size=8, jit_compile=False)
    before = helpers.weights(model)

    def batches(per_replica):  # no drop_remainder: the batch size is not static
      return iter(strategy.distribute_datasets_from_function(
          lambda _: tf.data.Dataset.from_tensor_slices(helpers.data()).batch(per_replica)))

    with self.assertRaisesRegex(tf.errors.InvalidArgumentError, r"(?s)A replica.{1,2}s batch .* is "
                                r"not global_batch_size=8 / 2 replicas"):
      train(batches(8))
    for x, y in zip(before, helpers.weights(model)):
      self.assertAllEqual(x, y)
    self.assertEqual(int(train(batches(4))["steps"]), 1)


class LossScaleStepTest(tf.test.TestCase):

  def test_overflow_on_one_replica_skips_the_step_everywhere(self):
    strategy = helpers.mirrored()
    examples = helpers.data(8)
    examples["noisy"][4:] = np.inf  # the second per-replica batch: replica 1 only
    model, train = helpers.build(strategy, loss_scale=lambda: loss_scale_lib.LossScale(
        initial=1024.0, growth_interval=100))
    before = helpers.weights(model)
    metrics = train(helpers.iterator(strategy, examples, 4))
    self.assertAllEqual(metrics["replica_nonfinite"], [0.0, 1.0])
    for variable in contract.tf_variables(model):
      for local in strategy.experimental_local_results(variable):
        self.assertTrue(np.isfinite(local.numpy()).all())
    for x, y in zip(before, helpers.weights(model)):
      self.assertAllEqual(x, y)
    self.assertEqual(float(metrics["loss_scale"]), 512.0)
    self.assertEqual(int(metrics["skipped_steps"]), 1)
    self.assertEqual(int(train.optimizer.iterations.numpy()), 0)
    self.assertEqual(int(train.global_step.numpy()), 1)

  def test_an_overflowing_step_is_left_out_of_the_chunk_averages(self):
    strategy = helpers.mirrored()
    examples = helpers.data(24)
    examples["noisy"][12:16] = np.inf  # step 2 of 3, replica 1 only
    scale = lambda: loss_scale_lib.LossScale(initial=1024.0, growth_interval=100)  # pylint: disable=g-long-lambda
    _, chunked = helpers.build(strategy, steps_per_loop=3, loss_scale=scale)
    metrics = chunked(helpers.iterator(strategy, examples, 4))
    self.assertEqual((int(metrics["global_step"]), int(metrics["skipped_steps"]),
                      float(metrics["applied_steps"]), float(metrics["skipped_in_call"])),
                     (3, 1, 2.0, 1.0))
    _, stepwise = helpers.build(strategy, steps_per_loop=1, loss_scale=scale)
    batches = helpers.iterator(strategy, examples, 4)
    each = [stepwise(batches) for _ in range(3)]
    self.assertEqual([float(m["applied_steps"]) for m in each], [1.0, 0.0, 1.0])
    self.assertTrue(np.isnan(each[1]["loss"]))  # nothing applied: nothing to average
    self.assertAllClose(metrics["loss"], (each[0]["loss"] + each[2]["loss"]) / 2, rtol=1e-5)
    self.assertAllClose(metrics["grad_norm"], (each[0]["grad_norm"] + each[2]["grad_norm"]) / 2,
                        rtol=1e-5)

  def test_dynamic_scale_grows_after_interval_and_fixed_never_moves(self):
    strategy = helpers.mirrored()
    _, dynamic = helpers.build(strategy, steps_per_loop=6, loss_scale=lambda: (
        loss_scale_lib.LossScale(initial=8.0, growth_interval=3)))
    self.assertEqual(float(dynamic(helpers.iterator(strategy, helpers.data(), 4))["loss_scale"]), 32.0)
    _, fixed = helpers.build(strategy, steps_per_loop=6,
                     loss_scale=lambda: loss_scale_lib.LossScale.fixed(128.0))
    metrics = fixed(helpers.iterator(strategy, helpers.data(), 4))
    self.assertEqual(float(metrics["loss_scale"]), 128.0)
    self.assertEqual(int(metrics["skipped_steps"]), 0)

  def test_scaled_and_unscaled_steps_agree(self):
    strategy = helpers.mirrored()
    scaled_model, scaled = helpers.build(strategy, steps_per_loop=3, loss_scale=lambda: (
        loss_scale_lib.LossScale.fixed(2.0**12)))
    plain_model, plain = helpers.build(strategy, steps_per_loop=3)
    scaled(helpers.iterator(strategy, helpers.data(), 4))
    plain(helpers.iterator(strategy, helpers.data(), 4))
    for x, y in zip(helpers.weights(scaled_model), helpers.weights(plain_model)):
      self.assertAllClose(x, y, rtol=1e-5, atol=1e-6)


class PrecisionAndModelsTest(tf.test.TestCase):

  def test_mixed_bfloat16_trains_with_float32_variables(self):
    strategy = helpers.mirrored()
    model, train = helpers.build(strategy, precision="mixed_bfloat16", steps_per_loop=10,
                         learning_rate=0.02)
    it = helpers.iterator(strategy, helpers.data(), 4)
    first = float(train(it)["loss"])
    for _ in range(3):
      last = float(train(it)["loss"])
    self.assertLess(last, 0.8 * first)
    self.assertTrue(all(v.dtype == tf.float32 for v in contract.tf_variables(model)))

  def test_keras3_model_trains_under_two_replicas(self):
    strategy = helpers.mirrored()

    def keras_model():
      model = keras.Sequential([
          keras.layers.Input((helpers.TIME,)), keras.layers.Reshape((helpers.TIME, 1)),
          keras.layers.Conv1D(4, 5, padding="same", activation="tanh"),
          keras.layers.Conv1D(1, 5, padding="same"), keras.layers.Reshape((helpers.TIME,))])
      model(tf.zeros([1, helpers.TIME]))
      return model

    model, train = helpers.build(strategy, model_fn=keras_model, steps_per_loop=10)
    it = helpers.iterator(strategy, helpers.data(), 4)
    first = float(train(it)["loss"])
    for _ in range(3):
      last = float(train(it)["loss"])
    self.assertLess(last, 0.8 * first)
    kernel = contract.tf_variables(model)[0]
    local = strategy.experimental_local_results(kernel)
    self.assertLen(local, 2)
    self.assertAllEqual(local[0], local[1])

  def test_a_keras3_dilated_conv_trains_on_the_stock_cpu_kernels(self):
    # Keras 3's Conv1D dilates by space-to-batch (tf.nn.convolution): no XLA needed, even
    # where oneDNN is off (as in this suite), unlike tf.nn.conv1d(dilations=2).
    def keras_model():
      model = keras.Sequential([
          keras.layers.Input((helpers.TIME,)), keras.layers.Reshape((helpers.TIME, 1)),
          keras.layers.Conv1D(4, 3, dilation_rate=2, padding="same", activation="tanh"),
          keras.layers.Conv1D(1, 3, dilation_rate=4, padding="causal"),
          keras.layers.Reshape((helpers.TIME,))])
      model(tf.zeros([1, helpers.TIME]))
      return model

    strategy = helpers.one_device()
    _, train = helpers.build(strategy, model_fn=keras_model, steps_per_loop=10,
                             jit_compile=False)
    it = helpers.iterator(strategy, helpers.data(), 8)
    first = float(train(it)["loss"])
    for _ in range(3):
      last = float(train(it)["loss"])
    self.assertLess(last, 0.9 * first)


class KerasTrainingModeTest(tf.test.TestCase):

  def test_keras_models_train_in_training_mode_with_their_regularisers(self):
    strategy = helpers.mirrored()
    seen = []

    class Probe(keras.layers.Layer):

      def call(self, x, training=None):
        seen.append(training)
        return x

    with strategy.scope():
      model = keras.Sequential([
          keras.layers.Input((helpers.TIME,)), keras.layers.Reshape((helpers.TIME, 1)), Probe(),
          keras.layers.Conv1D(1, 5, padding="same",
                              kernel_regularizer=keras.regularizers.L2(10.0)),
          keras.layers.Reshape((helpers.TIME,))])
      model(tf.zeros([1, helpers.TIME]))
      optimizer = optim.AdamW(0.01, weight_decay=0.0)
    no_data_gradient = lambda clean, p: 0.0 * tf.reduce_mean(p, axis=-1)  # pylint: disable=g-long-lambda
    train = step_lib.make_train_step(model, no_data_gradient, optimizer, strategy,
                                     global_batch_size=8, jit_compile=False)
    before = helpers.weights(model)[0]
    train(helpers.iterator(strategy, helpers.data(), 4))
    self.assertIn(True, seen)
    self.assertNotIn(False, seen)
    # Only the regulariser has a gradient: Adam moves every kernel weight by ~lr, toward 0.
    after = helpers.weights(model)[0]
    self.assertAllClose(np.abs(after - before), np.full_like(before, 0.01), rtol=0.05)
    self.assertTrue(np.all(np.abs(after) < np.abs(before)))


class KerasPrecisionTest(tf.test.TestCase):

  def test_a_keras_model_computing_in_another_dtype_is_refused(self):
    strategy = helpers.mirrored()
    with strategy.scope():
      model = keras.Sequential([keras.layers.Input((helpers.TIME,)),
                                keras.layers.Dense(helpers.TIME)])
      model(tf.zeros([1, helpers.TIME]))
      optimizer = optim.AdamW(0.01)
    with self.assertRaisesRegex(ValueError, r"precision=mixed_bfloat16 computes in "
                                r"bfloat16, but the Keras model computes in float32: build "
                                r"it after keras.mixed_precision.set_global_policy"):
      step_lib.make_train_step(model, helpers.l1, optimizer, strategy, global_batch_size=8,
                               precision="mixed_bfloat16")


class BadUseTest(tf.test.TestCase):

  def test_batch_not_divisible_by_replicas(self):
    with self.assertRaisesRegex(ValueError, "not divisible by the 2 replicas"):
      helpers.build(helpers.mirrored(), global_batch_size=7)

  def test_unknown_precision(self):
    with self.assertRaisesRegex(ValueError, "precision=float8 must be one of float32"):
      helpers.build(helpers.mirrored(), precision="float8")

  def test_variables_created_outside_the_scope(self):
    strategy = helpers.mirrored()
    model = helpers.Tiny()
    with strategy.scope():
      optimizer = optim.AdamW(0.01)
    with self.assertRaisesRegex(ValueError, "created outside this strategy's scope"):
      step_lib.make_train_step(model, helpers.l1, optimizer, strategy, global_batch_size=8)


if __name__ == "__main__":
  tf.test.main()
