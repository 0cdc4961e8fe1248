"""A multi-worker job for tests: trains the tiny model on fixed per-replica batches, saves weights.

Run under trainer.program.launch_local (MultiWorkerMirroredStrategy from TF_CONFIG), or
with `--mirrored` in one process over 2 logical CPUs: replica r of step k
always gets batch (k, r), so both must end with the same weights.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # pylint: disable=g-import-not-at-top
import tensorflow as tf  # pylint: disable=g-import-not-at-top

STEPS, PER_REPLICA, REPLICAS = 6, 4, 2


def main(output, mirrored):
  if mirrored:
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
  else:
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
  from tests import helpers  # pylint: disable=g-import-not-at-top
  from trainer.models import contract  # pylint: disable=g-import-not-at-top
  examples = helpers.data(STEPS * PER_REPLICA * REPLICAS, seed=5)
  # batches[k, r]: what replica r trains on at step k.
  batches = {key: value.reshape(STEPS, REPLICAS, PER_REPLICA, -1)
             for key, value in examples.items()}

  def dataset_fn(context):
    if context.num_input_pipelines == REPLICAS:  # one pipeline per worker/replica
      replicas = [context.input_pipeline_id]
    else:  # one pipeline feeding both replicas in turn
      replicas = list(range(REPLICAS))
    ordered = {k: v[:, replicas].reshape(-1, PER_REPLICA, v.shape[-1])
               for k, v in batches.items()}
    return tf.data.Dataset.from_tensor_slices(ordered)

  model, train = helpers.build(strategy, steps_per_loop=STEPS,
                                 global_batch_size=PER_REPLICA * REPLICAS)
  train(iter(strategy.distribute_datasets_from_function(dataset_fn)))
  weights = [strategy.experimental_local_results(v)[0].numpy()
             for v in contract.tf_variables(model)]
  task = strategy.cluster_resolver.task_id if not mirrored else 0
  np.savez(f"{output}-{task}.npz", *weights)


if __name__ == "__main__":
  main(sys.argv[1], "--mirrored" in sys.argv[2:])
