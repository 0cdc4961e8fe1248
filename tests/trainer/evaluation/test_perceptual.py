"""Tests for trainer.evaluation.perceptual: PESQ-WB and STOI against known values, and the missing-package path."""

import sys
from unittest import mock

import numpy as np
import tensorflow as tf

from input import speech
from trainer.evaluation import perceptual

RATE = 16000


def talk(seconds=3.0, rate=RATE):
  return (0.3 * speech.utterance(np.random.default_rng(0), int(seconds * rate), rate)
          ).astype(np.float32)


def with_noise(clean, snr_db, seed=0):
  noise = np.random.default_rng(seed).normal(size=len(clean))
  noise *= np.sqrt(np.mean(clean**2) / np.mean(noise**2)) / 10 ** (snr_db / 20)
  return (clean + noise).astype(np.float32)


class PerceptualTest(tf.test.TestCase):

  def test_identical_signals_score_the_scale_maxima(self):
    clean = talk()
    self.assertAllClose(perceptual.pesq_wb(clean, clean, RATE), 4.644, atol=0.01)
    self.assertAllClose(perceptual.stoi(clean, clean, RATE), 1.0, atol=1e-6)

  def test_scores_fall_with_the_snr(self):
    clean = talk()
    scores = [perceptual.scores(clean, with_noise(clean, snr), RATE) for snr in (20, 5, -5)]
    pesq = [s["pesq"] for s in scores]
    stoi = [s["stoi"] for s in scores]
    self.assertTrue(pesq[0] > pesq[1] > pesq[2] >= 1.0, pesq)
    self.assertTrue(stoi[0] > stoi[1] > stoi[2] > 0.0, stoi)
    self.assertLess(pesq[2], 1.5)  # -5 dB white noise is "bad" on the MOS scale

  def test_other_rates_are_resampled_for_pesq(self):
    clean16, clean48 = talk(rate=RATE), talk(rate=48000)
    at16 = perceptual.pesq_wb(clean16, with_noise(clean16, 10), RATE)
    at48 = perceptual.pesq_wb(clean48, with_noise(clean48, 10), 48000)
    self.assertAllClose(at16, at48, atol=0.25)

  def test_silence_is_nan_not_an_error(self):
    silence = np.zeros(RATE, np.float32)
    self.assertTrue(np.isnan(perceptual.pesq_wb(silence, silence, RATE)))
    self.assertTrue(np.isnan(perceptual.stoi(silence, silence, RATE)))

  def test_missing_packages_are_named_with_the_install_command(self):
    self.assertIsNone(perceptual.missing())
    try:
      with mock.patch.dict(sys.modules, {"pesq": None}):
        perceptual.missing.cache_clear()
        message = perceptual.missing()
    finally:
      perceptual.missing.cache_clear()
    self.assertTrue(message.startswith("pesq not installed: "), message)
    self.assertIn("pip install -e '.[metrics]'", message)


if __name__ == "__main__":
  tf.test.main()
