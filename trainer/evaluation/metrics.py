"""Evaluation metrics on waveforms: scale-invariant SDR and its improvement."""

import tensorflow as tf


def si_sdr(reference, estimate, eps: float = 1e-8):
  """Scale-invariant signal-to-distortion ratio in dB, per example `[batch]`."""
  reference = tf.cast(reference, tf.float32)
  estimate = tf.cast(estimate, tf.float32)
  reference -= tf.reduce_mean(reference, axis=-1, keepdims=True)
  estimate -= tf.reduce_mean(estimate, axis=-1, keepdims=True)
  alpha = (tf.reduce_sum(estimate * reference, axis=-1, keepdims=True)
           / (tf.reduce_sum(tf.square(reference), axis=-1, keepdims=True) + eps))
  target = alpha * reference
  residual = estimate - target
  ratio = (tf.reduce_sum(tf.square(target), axis=-1) + eps) / (
      tf.reduce_sum(tf.square(residual), axis=-1) + eps)
  return 10.0 * tf.math.log(ratio) / tf.math.log(10.0)
