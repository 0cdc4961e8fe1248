"""Benchmark: this project's training step vs tf_keras `model.fit`, same model, data and strategy.

Cases, each on MirroredStrategy over 2 logical CPU devices and on one device:
  this step, steps_per_loop=1 / 20; tf_keras fit, steps_per_execution=20.
The model is a small tf_keras Conv1D stack (so host overhead shows), trained
with AdamW and an L1 loss on in-memory data. XLA is on where fit can use it
(one device) and off where it cannot (mirrored) for both loops alike; one more
row shows this step with XLA on under the mirrored strategy too.

Needs tf-keras of the installed TensorFlow's minor version, installed by hand
(pip install 'tf-keras~=2.17.0' beside TF 2.17): not an extra, since tf-keras
requires the `tensorflow` distribution and would put a second TensorFlow beside
tensorflow-cpu. Keras 3's fit cannot stand in: with steps_per_execution under
MirroredStrategy it fails on its first call ("You must feed a value for
placeholder tensor ... multi_step_on_iterator"; Keras 3.10 and 3.15, measured
here).
Run: python -m bench.loop [--runs 5] [--steps 200]
"""

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # pylint: disable=g-import-not-at-top
import tensorflow as tf  # pylint: disable=g-import-not-at-top

from bench import timing  # pylint: disable=g-import-not-at-top
from trainer import optim  # pylint: disable=g-import-not-at-top
from trainer import step as step_lib  # pylint: disable=g-import-not-at-top

TIME, PER_REPLICA_BATCH = 1024, 8


def build_model():
  import tf_keras  # pylint: disable=g-import-not-at-top
  model = tf_keras.Sequential([
      tf_keras.layers.Reshape((TIME, 1), input_shape=(TIME,)),
      tf_keras.layers.Conv1D(16, 9, padding="same", activation="relu"),
      tf_keras.layers.Conv1D(16, 9, padding="same", activation="relu"),
      tf_keras.layers.Conv1D(1, 9, padding="same"),
      tf_keras.layers.Reshape((TIME,))])
  return model


def data():
  rng = np.random.default_rng(0)
  clean = rng.normal(size=[256, TIME]).astype(np.float32)
  return clean + 0.3 * rng.normal(size=[256, TIME]).astype(np.float32), clean


def this_step(strategy, steps_per_loop, jit_compile, accumulate_steps=1, ema_decay=0.0):
  """Returns `run(steps)` for this project's step (`steps` micro-batches)."""
  with strategy.scope():
    model = build_model()
    optimizer = optim.AdamW(1e-3, weight_decay=0.01)
    ema = optim.ExponentialMovingAverage(ema_decay) if ema_decay else None
  l1 = lambda clean, enhanced: tf.reduce_mean(tf.abs(clean - enhanced), axis=-1)
  train = step_lib.make_train_step(
      model, l1, optimizer, strategy,
      global_batch_size=PER_REPLICA_BATCH * strategy.num_replicas_in_sync,
      steps_per_loop=steps_per_loop, jit_compile=jit_compile,
      accumulate_steps=accumulate_steps, ema=ema)
  noisy, clean = data()
  dataset_fn = lambda _: tf.data.Dataset.from_tensor_slices(  # pylint: disable=g-long-lambda
      {"noisy": noisy, "clean": clean}).repeat().batch(PER_REPLICA_BATCH).prefetch(4)
  iterator = iter(strategy.distribute_datasets_from_function(dataset_fn))

  def run(steps):
    for _ in range(steps // (steps_per_loop * accumulate_steps)):
      train(iterator)["loss"].numpy()

  return run


def keras_fit(strategy, steps_per_execution):
  """Returns `run(steps)` for tf_keras model.fit.

  fit's jit_compile wraps the function around strategy.run and fails under
  MirroredStrategy ("Trying to access resource ... replica_1 ... from device
  CPU:0", measured here), so XLA is on for one device only.
  """
  import tf_keras  # pylint: disable=g-import-not-at-top
  jit = not isinstance(strategy, tf.distribute.MirroredStrategy)
  with strategy.scope():
    model = build_model()
    model.compile(optimizer=tf_keras.optimizers.AdamW(1e-3, weight_decay=0.01), loss="mae",
                  steps_per_execution=steps_per_execution, jit_compile=jit)
  noisy, clean = data()
  dataset = tf.data.Dataset.from_tensor_slices((noisy, clean)).repeat().batch(
      PER_REPLICA_BATCH * strategy.num_replicas_in_sync).prefetch(4)
  options = tf.data.Options()
  options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
  dataset = dataset.with_options(options)
  return lambda steps: model.fit(dataset, epochs=1, steps_per_epoch=steps, verbose=0)


def main():
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument("--runs", type=int, default=5)
  parser.add_argument("--steps", type=int, default=200)
  args = parser.parse_args()
  cpu = tf.config.list_physical_devices("CPU")[0]
  tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
  strategies = {"2 logical CPU replicas": tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]),
                "1 device": tf.distribute.OneDeviceStrategy("/cpu:0")}
  keras_jit = lambda s: not isinstance(s, tf.distribute.MirroredStrategy)  # pylint: disable=g-long-lambda
  cases = {"this step, steps_per_loop=1": lambda s: this_step(s, 1, keras_jit(s)),
           "this step, steps_per_loop=20": lambda s: this_step(s, 20, keras_jit(s)),
           "this step, steps_per_loop=20, XLA on": lambda s: this_step(s, 20, True),
           "this step, steps_per_loop=5, accumulate_steps=4": lambda s: this_step(
               s, 5, keras_jit(s), accumulate_steps=4),
           "this step, steps_per_loop=20, EMA 0.999": lambda s: this_step(
               s, 20, keras_jit(s), ema_decay=0.999),
           "tf_keras fit, steps_per_execution=20": lambda s: keras_fit(s, 20)}
  rows = []
  for strategy_name, strategy in strategies.items():
    built = {name: make(strategy) for name, make in cases.items()}
    for run in built.values():
      run(20)  # compile and warm up
    times = {name: [] for name in built}
    for _ in range(args.runs):  # interleaved, so drift hits every case alike
      for name, run in built.items():
        start = time.perf_counter()
        run(args.steps)
        times[name].append(time.perf_counter() - start)
    examples = args.steps * PER_REPLICA_BATCH * strategy.num_replicas_in_sync
    rates = {name: examples / statistics.median(t) for name, t in times.items()}
    keras = rates["tf_keras fit, steps_per_execution=20"]
    for name, rate in rates.items():
      rows.append((strategy_name, name, rate, rate / keras,
                   rate / rates["this step, steps_per_loop=1"]))
  print(f"Training loop throughput, tiny Conv1D model, {PER_REPLICA_BATCH} examples per "
        f"replica x {TIME} samples, {args.steps} steps, medians of {args.runs} interleaved "
        f"runs; {timing.machine()}")
  print(timing.table(["strategy", "loop", "examples/s", "x keras fit", "x steps_per_loop=1"],
                     rows))
  print("targets: this step >= 1.0x keras fit; steps_per_loop=20 >= 1.2x steps_per_loop=1; "
        "accumulating 4 micro-batches (20 per call) >= 1/1.1 = 0.91x the micro-batches/s of "
        "steps_per_loop=20; EMA costs at most 5% (>= 0.95x steps_per_loop=20)")


if __name__ == "__main__":
  main()
