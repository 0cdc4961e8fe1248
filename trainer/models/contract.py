"""What the step, the eval and export need to know of any model, this package's tf.Modules and Keras 3 models alike, without importing Keras."""

import tensorflow as tf


def is_keras(model) -> bool:
  """Keras models take `training=` and collect regularisation `losses` (told apart by their
  classes, so the core never imports Keras)."""
  return any(c.__module__.split(".")[0] == "keras" for c in type(model).__mro__)


def tf_variables(module) -> list:
  """The tf.Variables behind `module.trainable_variables` (Keras 3 wraps them in `.value`)."""
  return [v if isinstance(v, tf.Variable) else v.value for v in module.trainable_variables]
