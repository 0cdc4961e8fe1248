"""State every replica shares in a cross-replica update: a shared variable or step counter, and the decision all replicas agreed on."""

import tensorflow as tf


def shared_variable(initial, dtype: tf.DType, name: str) -> tf.Variable:
  """A non-trainable variable with one value on every replica, written in cross-replica
  context (make it under the strategy's scope)."""
  return tf.Variable(initial, dtype=dtype, trainable=False, name=name,
                     synchronization=tf.VariableSynchronization.ON_WRITE,
                     aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)


def counter(name: str) -> tf.Variable:
  """A scalar int64 counter starting at 0 (see `shared_variable`)."""
  return shared_variable(0, tf.int64, name)


def agreed(strategy: tf.distribute.Strategy, per_replica) -> tf.Tensor:
  """A value every replica computed the same (e.g. the finite check of the all-reduced
  gradients), as one tensor for cross-replica code."""
  return strategy.experimental_local_results(per_replica)[0]
