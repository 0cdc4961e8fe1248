"""How much of the unprocessed input goes back into a denoiser's output, by frequency: the shares and the filters that keep them, in the graph, so every export gives what trainer.denoise gives.

Keeping a share `k` of the input (`enhanced + k * (input - enhanced)`)
limits the attenuation to about `20 log10(k)` dB and restores speech that the
model removed. The share depends on frequency: more is kept in the presence
band (3-5 kHz), where consonant cues live and where the default model, faced
with noise that is strong there (white, pink), removes most of the speech's
envelope; less is kept elsewhere, where the model is reliable. The share
ramps linearly in log frequency between the two (PRESENCE_HZ).

Each model applies its own rule (its `keeping` and stream step): a model
with a gain per STFT bin floors it at `G + k (1 - G)` with `GainFloor`, exact
in its STFT and no later than the model, so a stream keeps it too, and keeps
the presence band's larger share only as far as the frame holds speech by
the model's own gain (noise in pauses goes down to `keep`); any other
adds the residual (input less output) back through `ResidualFilter`, a short
minimum-phase filter whose gain is the share: causal too, so its stream keeps
it with no added latency.
"""

import numpy as np
import tensorflow as tf

from common import checks

KEEP = 0.15  # share of the input kept outside the presence band (about -16.5 dB at most)
PRESENCE_KEEP = 0.5  # share kept in the presence band (about -6 dB at most)
# (start of the ramp up, presence band start, presence band end, end of the ramp down), Hz.
PRESENCE_HZ = (1500.0, 3000.0, 5000.0, 7000.0)
SPEECH_HZ = (300.0, 3000.0)  # where a gain per bin tells how much of a frame is speech
FILTER_SECONDS = 0.004  # length of the residual filter of a model without a gain per bin
DESIGN_OVERSAMPLING = 16  # the filter is designed on a grid this many times its length
SHARE_FLOOR = 1e-4  # shares are designed at least this much of the largest (-80 dB)


def check(keep_input: float, keep_presence: float):
  """Raises ArgumentError unless both shares are in [0, 1]."""
  checks.probability("keep_input", keep_input)
  checks.probability("keep_presence", keep_presence)


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


def filter_taps(rate: int) -> int:
  """How many taps `residual_filter` has at `rate`."""
  return max(2, int(round(FILTER_SECONDS * rate)))


def residual_filter(rate: int, keep, presence_keep) -> tf.Tensor:
  """The minimum-phase FIR `[taps]` (FILTER_SECONDS) whose gain at each frequency is its
  share: causal, so a stream keeps the input no later than the model's output. Designed
  by the real cepstrum on a DESIGN_OVERSAMPLING times longer grid; shares below
  SHARE_FLOOR of the largest are that floor."""
  taps = filter_taps(rate)
  size = DESIGN_OVERSAMPLING * taps
  peak = tf.maximum(tf.cast(keep, tf.float32), tf.cast(presence_keep, tf.float32))
  gains = shares(np.arange(size // 2 + 1) * rate / size, keep, presence_keep)
  cepstrum = tf.signal.irfft(tf.complex(tf.math.log(tf.maximum(
      gains / tf.maximum(peak, 1e-12), SHARE_FLOOR)), 0.0), [size])
  fold = np.zeros(size, np.float32)  # keeps c[0] and c[N/2], doubles the rest of one half
  fold[0] = fold[size // 2] = 1.0
  fold[1:size // 2] = 2.0
  minimum_phase = tf.exp(tf.signal.rfft(cepstrum * fold, [size]))
  return peak * tf.signal.irfft(minimum_phase, [size])[:taps]


class ResidualFilter:
  """Adds the residual `signal - enhanced` back through `residual_filter`: offline over
  `[batch, time]`, or step by step over a stream with the residual's latest samples as
  state. The filter is designed once, on construction."""

  def __init__(self, rate: int, keep, presence_keep):
    self.taps = residual_filter(rate, keep, presence_keep)
    self.state_shape = [filter_taps(rate) - 1]

  def __call__(self, enhanced: tf.Tensor, signal: tf.Tensor) -> tf.Tensor:
    """`enhanced` `[batch, time]` with the filtered residual added (float32)."""
    enhanced = tf.cast(enhanced, tf.float32)
    return enhanced + filter_causally(tf.cast(signal, tf.float32) - enhanced, self.taps)

  def step(self, enhanced: tf.Tensor, signal: tf.Tensor, history: tf.Tensor):
    """The next samples `[n]` of a stream; returns `(output [n], new history)`."""
    residual = signal - enhanced
    out = enhanced + filter_causally(residual[None], self.taps, history[None])[0]
    return out, tf.concat([history, residual], 0)[residual.shape[0]:]


def filter_causally(signal: tf.Tensor, taps: tf.Tensor, history=None) -> tf.Tensor:
  """`sum_k taps[k] signal[t - k]` for each `t` of `signal` `[batch, time]`; before it,
  `history` `[batch, len(taps) - 1]` (zeros if None)."""
  if history is None:
    history = tf.zeros([tf.shape(signal)[0], tf.shape(taps)[0] - 1])
  padded = tf.concat([history, signal], 1)[:, :, None]
  return tf.nn.conv1d(padded, tf.reverse(taps, [0])[:, None, None], 1, "VALID")[:, :, 0]


class GainFloor:
  """The floor a model with a gain per STFT bin puts on its gain `G`: `G + k (1 - G)`,
  where `k` is `keep` outside the presence band and, inside it, rises towards
  `presence_keep` as far as the frame holds speech: in proportion to the model's own
  mean gain over SPEECH_HZ in that frame (its speech activity, 0-1). So a pause keeps
  only `keep` of the noise in the presence band, and speech keeps its consonant cues
  as before; PESQ hears the first, STOI counts only the second.

  Args:
    fft_length: the STFT's length.
    rate: its sample rate.
    keep: share kept outside the presence band.
    presence_keep: share kept in the presence band in frames the model keeps whole.
  """

  def __init__(self, fft_length: int, rate: int, keep, presence_keep):
    frequencies = np.arange(fft_length // 2 + 1) * rate / fft_length
    self.keep = tf.cast(keep, tf.float32)
    self.presence_extra = (tf.cast(presence_keep, tf.float32) - self.keep) * presence(
        frequencies)
    speech = ((frequencies >= SPEECH_HZ[0]) & (frequencies < SPEECH_HZ[1])).astype(np.float32)
    self.speech_weights = tf.constant(speech / max(speech.sum(), 1.0))

  def __call__(self, gain: tf.Tensor) -> tf.Tensor:
    """`gain` `[..., bins]` floored."""
    activity = tf.reduce_sum(gain * self.speech_weights, -1, keepdims=True)
    share = self.keep + self.presence_extra * activity
    return gain + share * (1.0 - gain)
