"""One MirroredStrategy per test process over the two logical CPUs (see conftest.py).

Several MirroredStrategy instances in one process can collide on collective
instance keys, so every test module shares this one.
"""

import functools

import tensorflow as tf


@functools.lru_cache(maxsize=None)
def mirrored() -> tf.distribute.MirroredStrategy:
  return tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])


@functools.lru_cache(maxsize=None)
def one_device() -> tf.distribute.OneDeviceStrategy:
  return tf.distribute.OneDeviceStrategy("/cpu:0")
