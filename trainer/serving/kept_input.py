"""How much of the unprocessed input goes back into a denoiser's output, by frequency - in the graph, so every export gives what trainer.denoise gives.

Keeping a share `k` of the input (`enhanced + k * (input - enhanced)`)
limits the attenuation to about `20 log10(k)` dB and restores speech that the
model removed. The share depends on frequency: more is kept in the presence
band (3-5 kHz), where consonant cues live and where the default model, faced
with noise that is strong there (white, pink), removes most of the speech's
envelope; less is kept elsewhere, where the model is reliable. The share
ramps linearly in log frequency between the two (PRESENCE_HZ).

A mask model keeps it as a floor on its gain per bin, `G + k (1 - G)`: exact
in its STFT and no later than the model, so a stream keeps it too. Any other
model has it added back as a zero-phase filter of the residual over the
whole waveform it was given.
"""

import numpy as np
import tensorflow as tf

from trainer.models import mask

KEEP = 0.15  # share of the input kept outside the presence band (about -16.5 dB at most)
PRESENCE_KEEP = 0.5  # share kept in the presence band (about -6 dB at most)
# (start of the ramp up, presence band start, presence band end, end of the ramp down), Hz.
PRESENCE_HZ = (1500.0, 3000.0, 5000.0, 7000.0)
PAD_SECONDS = 0.05  # context each side of a waveform, far longer than the shares' impulse
# response; odd-reflected (value and slope continue)


def presence(frequencies) -> tf.Tensor:
  """How much each frequency (Hz) is in the presence band: 1 inside it, 0 outside the
  ramps, linear in log frequency on them."""
  log_hz = tf.math.log(tf.maximum(tf.cast(frequencies, tf.float32), 1.0))
  knots = np.log(PRESENCE_HZ).astype(np.float32)
  rise = (log_hz - knots[0]) / (knots[1] - knots[0])
  fall = (knots[3] - log_hz) / (knots[3] - knots[2])
  return tf.clip_by_value(tf.minimum(rise, fall), 0.0, 1.0)


def shares(frequencies, keep, presence_keep) -> tf.Tensor:
  """The share of the input kept at each of `frequencies` (Hz): `presence_keep` in the
  presence band, `keep` outside it."""
  keep = tf.cast(keep, tf.float32)
  return keep + (tf.cast(presence_keep, tf.float32) - keep) * presence(frequencies)


def add_back(enhanced: tf.Tensor, signal: tf.Tensor, rate: int, keep,
             presence_keep) -> tf.Tensor:
  """`enhanced` `[batch, time]` with `shares(f)` of `(signal - enhanced)` added back: a
  zero-phase FFT filter over each whole waveform, odd-reflected PAD_SECONDS each side."""
  residual = tf.cast(signal, tf.float32) - tf.cast(enhanced, tf.float32)
  length = tf.shape(residual)[-1]
  edge = tf.maximum(0, tf.minimum(length - 1, int(PAD_SECONDS * rate)))
  first, last = residual[:, :1], residual[:, -1:]
  padded = tf.concat([2.0 * first - tf.reverse(residual[:, 1:edge + 1], [1]), residual,
                      2.0 * last - tf.reverse(residual[:, length - 1 - edge:length - 1], [1])],
                     1)
  size = tf.shape(padded)[-1]
  frequencies = tf.cast(tf.range(size // 2 + 1), tf.float32) * (rate / tf.cast(size,
                                                                             tf.float32))
  gains = tf.complex(shares(frequencies, keep, presence_keep), 0.0)
  kept = tf.signal.irfft(tf.signal.rfft(padded, [size]) * gains, [size])
  return tf.cast(enhanced, tf.float32) + kept[:, edge:edge + length]


def bin_shares(model: mask.MaskDenoiser, keep, presence_keep) -> tf.Tensor:
  """A mask model's share per STFT bin `[bins]`."""
  fft_length = model.fft_length
  return shares(np.arange(fft_length // 2 + 1) * model.sample_rate / fft_length, keep,
                presence_keep)


def enhance(model, waveform: tf.Tensor, sample_rate: int, keep, presence_keep) -> tf.Tensor:
  """`model`'s output `[batch, time]` for `waveform` at `sample_rate`, with `shares(f)` of
  the input kept (`keep` outside the presence band, `presence_keep` in it)."""
  if isinstance(model, mask.MaskDenoiser):
    return model(waveform, keep=bin_shares(model, keep, presence_keep))
  return add_back(model(waveform), waveform, sample_rate, keep, presence_keep)
