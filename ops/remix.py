"""Remix augmentation: each clean signal meets another example's noise at a fresh SNR, on the device inside the step."""

from typing import Callable, Tuple

import tensorflow as tf

from common import checks
from ops import stateless
from ops.mix import rms

Range = Tuple[float, float]
Augment = Callable[[tf.Tensor, tf.Tensor, tf.Tensor], Tuple[tf.Tensor, tf.Tensor]]


class Remix(tf.Module):
  """Swaps an example's noise for another example's, at a new signal-to-noise ratio.

  Call it as `noisy, clean = remix(noisy, clean, seed)` with `[batch, time]`
  float signals and a `[2]` integer seed. The noise is `noisy - clean`; with
  probability `proba` an example gets instead the noise of the example
  `shift` places on in the batch (one `shift` in [1, batch) per call), scaled
  to an SNR drawn uniformly from `snr_db`. Over many epochs each clean
  signal then meets many noises rather than the one it was stored with (the
  "dynamic mixing" of speech separation training); the targets never change.
  """

  def __init__(self, *, proba: float = 0.5, snr_db: Range = (-5.0, 20.0), name: str = None):
    super().__init__(name=name)
    self.proba = checks.probability("proba", proba)
    self.snr_db = checks.interval("snr_db", snr_db)

  def __call__(self, noisy: tf.Tensor, clean: tf.Tensor, seed) -> Tuple[tf.Tensor, tf.Tensor]:
    dtype = clean.dtype  # the draws and the mixing run in float32 whatever the signals' dtype
    noisy, clean = tf.cast(noisy, tf.float32), tf.cast(clean, tf.float32)
    batch = tf.shape(clean)[0]
    seeds = stateless.split(seed, 3)
    draw = lambda i, shape, lo, hi: tf.cast(  # pylint: disable=g-long-lambda
        stateless.uniform(shape, seeds[i], lo, hi), tf.float32)
    shift = 1 + tf.cast(tf.floor(draw(0, [1], 0.0, 1.0)[0]
                                 * tf.cast(tf.maximum(batch - 1, 1), tf.float32)), tf.int32)
    other = tf.roll(noisy - clean, shift=shift, axis=0)
    snr_db = draw(1, tf.reshape(batch, [1]), *self.snr_db)
    apply = draw(2, tf.reshape(batch, [1]), 0.0, 1.0) < self.proba
    gain = rms(clean) / (rms(other) * 10.0 ** (snr_db / 20.0))
    remixed = clean + other * gain[:, None]
    return tf.cast(tf.where(apply[:, None], remixed, noisy), dtype), tf.cast(clean, dtype)


def chain(*augments: Augment) -> Augment:
  """One augmentation running `augments` in order, each with its own seed from the call's
  (a single augmentation is returned as it is, so its draws do not change)."""
  if len(augments) == 1:
    return augments[0]

  def augment(noisy, clean, seed):
    for i, each in enumerate(augments):
      noisy, clean = each(noisy, clean, stateless.fold_in(seed, i))
    return noisy, clean

  return augment
