"""Denoising losses: waveform L1 or -SI-SDR, plus a multi-resolution STFT loss with resolutions in seconds."""

from typing import Sequence, Tuple

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


class DenoiseLoss:
  """`waveform loss + stft_weight * mean over resolutions of (spectral convergence +
  log-magnitude L1)`; the waveform loss is L1 or -SI-SDR (dB)."""

  def __init__(self, sample_rate: int, *, stft_weight: float = 0.01, waveform_loss: str = "l1",
               resolutions: Sequence[Tuple[float, float]] = RESOLUTIONS):
    checks.one_of("waveform_loss", waveform_loss, sorted(WAVEFORM_LOSSES))
    checks.at_least("stft_weight", stft_weight, 0.0)
    self.stft_weight, self.waveform = stft_weight, WAVEFORM_LOSSES[waveform_loss]
    self.frames = [(max(2, round(w * sample_rate)), max(1, round(h * sample_rate)))
                   for w, h in resolutions]

  def __call__(self, clean, enhanced):
    """Per-example loss `[batch]`, computed in float32."""
    clean, enhanced = tf.cast(clean, tf.float32), tf.cast(enhanced, tf.float32)
    loss = self.waveform(clean, enhanced)
    if not self.stft_weight:
      return loss
    spectral_loss = 0.0
    for window, hop in self.frames:
      target = spectral.stft_magnitude(clean, window, hop)
      estimate = spectral.stft_magnitude(enhanced, window, hop)
      convergence = (tf.norm(target - estimate, axis=[-2, -1])
                     / (tf.norm(target, axis=[-2, -1]) + 1e-7))
      log_magnitude = tf.reduce_mean(
          tf.abs(tf.math.log(target + 1e-7) - tf.math.log(estimate + 1e-7)), axis=[-2, -1])
      spectral_loss += convergence + log_magnitude
    return loss + self.stft_weight * spectral_loss / len(self.frames)
