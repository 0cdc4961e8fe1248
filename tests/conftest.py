"""Test-process setup: two logical CPU devices, so multi-replica code runs without GPUs."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # pylint: disable=g-import-not-at-top

_cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    _cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

# absltest helpers (create_tempdir, ...) read flags; pytest does not parse them.
from absl import flags  # pylint: disable=g-import-not-at-top

flags.FLAGS.mark_as_parsed()
