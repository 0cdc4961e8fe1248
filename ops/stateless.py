"""Portable stateless random numbers: the same bits eagerly, in tf.function and under XLA.

`tf.random.stateless_uniform` is deterministic per seed, but its XLA lowering
draws different numbers than the regular TensorFlow kernel (measured with TF
2.17.1: same seed, different values under `jit_compile=True`). Augmentation must
not depend on whether the step is compiled, so these draws come from a
counter-based hash (the MurmurHash3 32-bit finalizer applied to the element's
counter and the seed) written in plain uint32 ops that every backend computes
identically.
"""

import tensorflow as tf

_GOLDEN = 0x9E3779B9  # 2**32 / golden ratio: spreads consecutive counters.


def _u32(value) -> tf.Tensor:
  return tf.constant(value, tf.uint32)


def _mix(x: tf.Tensor) -> tf.Tensor:
  """MurmurHash3's fmix32 avalanche on uint32 values."""
  x = tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, _u32(16)))
  x = x * _u32(0x85EBCA6B)
  x = tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, _u32(13)))
  x = x * _u32(0xC2B2AE35)
  return tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, _u32(16)))


def _key(seed, stream: int) -> tf.Tensor:
  """A uint32 key from a `[2]` integer seed (low 32 bits of each) and a stream id."""
  seed = tf.cast(tf.cast(seed, tf.int64), tf.uint32)
  if seed.shape.rank != 1 or seed.shape[0] != 2:
    raise ValueError(f"seed must have shape [2], got {seed.shape}.")
  key = _mix(tf.bitwise.bitwise_xor(_mix(seed[0] + _u32(_GOLDEN)), seed[1]))
  return _mix(tf.bitwise.bitwise_xor(key, _u32(stream * _GOLDEN % 2**32)))


def random_bits(shape, seed, stream: int = 0) -> tf.Tensor:
  """uint32 random bits of `shape`, a pure function of (`seed`, `stream`, index)."""
  key = _key(seed, stream)
  count = tf.reduce_prod(tf.cast(shape, tf.int64))
  counter = tf.cast(tf.range(count), tf.uint32)
  bits = _mix(_mix(counter * _u32(_GOLDEN) + key) + key)
  return tf.reshape(bits, shape)


def uniform(shape, seed, minval=0.0, maxval=1.0, dtype=tf.float64) -> tf.Tensor:
  """Uniform values in [minval, maxval) with 53 (float64) or 24 (float32) random bits."""
  if dtype == tf.float64:
    high = tf.cast(random_bits(shape, seed, stream=1), tf.float64)
    low = tf.cast(tf.bitwise.right_shift(random_bits(shape, seed, stream=2), _u32(11)),
                  tf.float64)
    unit = (high * 2.0**21 + low) * 2.0**-53
  elif dtype == tf.float32:
    unit = tf.cast(tf.bitwise.right_shift(random_bits(shape, seed, stream=1), _u32(8)),
                   tf.float32) * 2.0**-24
  else:
    raise ValueError(f"uniform draws float32 or float64, not {tf.as_dtype(dtype).name}.")
  return minval + unit * (maxval - minval)


def split(seed, num: int) -> tf.Tensor:
  """`[num, 2]` int64 seeds derived from `seed`, independent of each other."""
  return tf.cast(tf.stack([random_bits([num], seed, stream=3),
                           random_bits([num], seed, stream=4)], axis=1), tf.int64)


def fold_in(seed, data) -> tf.Tensor:
  """A `[2]` int64 seed derived from `seed` and an integer `data` (a step, a replica)."""
  data = tf.cast(tf.cast(data, tf.int64), tf.uint32)
  key = tf.bitwise.bitwise_xor(_key(seed, stream=5), _mix(data + _u32(_GOLDEN)))
  return tf.cast(tf.stack([_mix(key), _mix(key + _u32(1))]), tf.int64)
