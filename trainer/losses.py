"""The training objective: waveform L1 or -SI-SDR, plus a multi-resolution STFT loss with resolutions in seconds, an intelligibility (STOI-like) term and an over-suppression term."""

from typing import Sequence, Tuple

import numpy as np

import tensorflow as tf

from common import checks
from ops import spectral
from trainer.evaluation import metrics

# (window, hop) in seconds: Demucs' (240, 50), (600, 120), (1200, 240) samples at 16 kHz,
# so 16 kHz and 48 kHz audio see the same time-frequency trade-offs.
RESOLUTIONS = ((0.015, 0.003125), (0.0375, 0.0075), (0.075, 0.015))


def l1(clean, enhanced):
  """Per-example mean absolute error `[batch]`."""
  return tf.reduce_mean(tf.abs(clean - enhanced), axis=-1)


def negative_si_sdr(clean, enhanced):
  """Per-example -SI-SDR in dB `[batch]`: scale-free, so quiet and loud examples count alike."""
  return -metrics.si_sdr(clean, enhanced)


WAVEFORM_LOSSES = {"l1": l1, "si_sdr": negative_si_sdr}


class Intelligibility:
  """`1 - ` a differentiable short-time objective intelligibility, per example `[batch]`.

  The measure of STOI (Taal et al., 2011), without its resampling to 10 kHz and
  its removal of silent frames: 25.6 ms Hann frames every 12.8 ms, 15 one-third
  octave bands from 150 Hz, band envelopes over 384 ms segments (30 frames, every
  frame); the estimate's envelope is scaled to the clean one's energy and clipped
  at 15 dB above it, then correlated with it. 0 for a perfect estimate, up to 2.
  """

  def __init__(self, sample_rate: int, *, bands: int = 15, lowest_hz: float = 150.0,
               segment_frames: int = 30):
    self.window = int(round(0.0256 * sample_rate))
    self.hop = self.window // 2
    self.fft = spectral.fft_length(self.window)
    frequencies = np.arange(self.fft // 2 + 1) * sample_rate / self.fft
    centres = lowest_hz * 2.0 ** (np.arange(bands) / 3.0)
    centres = centres[centres * 2 ** (1 / 6) <= sample_rate / 2]
    self.bands = tf.constant(np.stack(
        [(frequencies >= c * 2 ** (-1 / 6)) & (frequencies < c * 2 ** (1 / 6)) for c in centres],
        axis=1).astype(np.float32))  # [bins, bands]
    self.segment_frames = segment_frames

  def __call__(self, clean, enhanced):
    clean, enhanced = tf.cast(clean, tf.float32), tf.cast(enhanced, tf.float32)

    def envelopes(x):  # [batch, segments, bands, segment_frames]
      power = tf.square(spectral.stft_magnitude(x, self.window, self.hop))
      bands = tf.sqrt(tf.einsum("btf,fk->btk", power, self.bands) + 1e-10)
      segments = tf.signal.frame(bands, self.segment_frames, 1, axis=1)
      return tf.transpose(segments, [0, 1, 3, 2])

    x, y = envelopes(clean), envelopes(enhanced)
    scale = tf.norm(x, axis=-1, keepdims=True) / (tf.norm(y, axis=-1, keepdims=True) + 1e-10)
    y = tf.minimum(y * scale, x * (1.0 + 10.0 ** (15.0 / 20.0)))
    x -= tf.reduce_mean(x, axis=-1, keepdims=True)
    y -= tf.reduce_mean(y, axis=-1, keepdims=True)
    correlation = tf.reduce_sum(x * y, axis=-1) / (
        tf.norm(x, axis=-1) * tf.norm(y, axis=-1) + 1e-10)
    return 1.0 - tf.reduce_mean(correlation, axis=[1, 2])


def over_suppression(target, estimate, compression: float = 0.3):
  """Speech the estimate removed, per example `[batch]`: the energy of the compressed
  magnitudes (`|X| ** compression`, as in VoiceFilter-Lite's asymmetric loss) by which
  `estimate` falls short of `target`, over the target's; residual noise (an estimate
  above the target) costs nothing. 0 when nothing was taken away, at most 1."""
  compress = lambda m: tf.pow(tf.square(m) + 1e-12, compression / 2.0)
  shortfall = tf.nn.relu(compress(target) - compress(estimate))
  return (tf.reduce_sum(tf.square(shortfall), axis=[-2, -1])
          / (tf.reduce_sum(tf.square(compress(target)), axis=[-2, -1]) + 1e-10))


class DenoiseLoss:
  """`waveform loss + stft_weight * mean over resolutions of (spectral convergence +
  log-magnitude L1) + suppression_weight * mean over resolutions of over_suppression +
  intelligibility_weight * (1 - STOI-like correlation)`; the waveform loss is L1 or
  -SI-SDR (dB)."""

  def __init__(self, sample_rate: int, *, stft_weight: float = 0.01, waveform_loss: str = "l1",
               resolutions: Sequence[Tuple[float, float]] = RESOLUTIONS,
               intelligibility_weight: float = 0.0, suppression_weight: float = 0.0):
    checks.one_of("waveform_loss", waveform_loss, sorted(WAVEFORM_LOSSES))
    checks.at_least("stft_weight", stft_weight, 0.0)
    checks.at_least("intelligibility_weight", intelligibility_weight, 0.0)
    checks.at_least("suppression_weight", suppression_weight, 0.0)
    self.stft_weight, self.waveform = stft_weight, WAVEFORM_LOSSES[waveform_loss]
    self.suppression_weight = suppression_weight
    self.intelligibility_weight = intelligibility_weight
    self.intelligibility = Intelligibility(sample_rate) if intelligibility_weight else None
    self.frames = [(max(2, round(w * sample_rate)), max(1, round(h * sample_rate)))
                   for w, h in resolutions]

  def __call__(self, clean, enhanced):
    """Per-example loss `[batch]`, computed in float32."""
    clean, enhanced = tf.cast(clean, tf.float32), tf.cast(enhanced, tf.float32)
    loss = self.waveform(clean, enhanced)
    if self.intelligibility is not None:
      loss += self.intelligibility_weight * self.intelligibility(clean, enhanced)
    if not (self.stft_weight or self.suppression_weight):
      return loss
    for window, hop in self.frames:
      target = spectral.stft_magnitude(clean, window, hop)
      estimate = spectral.stft_magnitude(enhanced, window, hop)
      if self.stft_weight:
        convergence = (tf.norm(target - estimate, axis=[-2, -1])
                       / (tf.norm(target, axis=[-2, -1]) + 1e-7))
        log_magnitude = tf.reduce_mean(
            tf.abs(tf.math.log(target + 1e-7) - tf.math.log(estimate + 1e-7)), axis=[-2, -1])
        loss += self.stft_weight * (convergence + log_magnitude) / len(self.frames)
      if self.suppression_weight:
        loss += self.suppression_weight * over_suppression(target, estimate) / len(self.frames)
    return loss
