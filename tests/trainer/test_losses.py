"""Tests for trainer.losses: the training objective's terms (waveform, multi-resolution STFT, intelligibility, over-suppression)."""

import numpy as np
import tensorflow as tf

from input import speech
from ops import spectral
from trainer import losses
from trainer.evaluation import metrics
from trainer.evaluation import perceptual


class LossTest(tf.test.TestCase):

  def test_zero_for_a_perfect_estimate_and_positive_otherwise(self):
    clean = tf.random.normal([3, 4000])
    loss = losses.DenoiseLoss(16000)
    self.assertAllClose(loss(clean, clean), tf.zeros([3]), atol=1e-6)
    self.assertAllGreater(loss(clean, clean + 0.1 * tf.random.normal([3, 4000])), 0.0)
    self.assertAllClose(losses.DenoiseLoss(16000, stft_weight=0)(clean, 0.5 * clean),
                        losses.l1(clean, 0.5 * clean))

  def test_si_sdr_waveform_loss_is_scale_free(self):
    clean = tf.random.normal([3, 4000])
    estimate = clean + 0.3 * tf.random.normal([3, 4000])
    loss = losses.DenoiseLoss(16000, stft_weight=0, waveform_loss="si_sdr")
    self.assertAllClose(loss(clean, 5.0 * estimate), loss(clean, estimate), rtol=1e-4)
    self.assertAllClose(loss(clean, estimate), -metrics.si_sdr(clean, estimate))
    self.assertAllLess(loss(clean, clean), -60.0)
    with self.assertRaisesRegex(ValueError, "waveform_loss=l2 must be one of l1, si_sdr"):
      losses.DenoiseLoss(16000, waveform_loss="l2")

  def test_resolutions_are_in_seconds(self):
    low, high = losses.DenoiseLoss(16000), losses.DenoiseLoss(48000)
    self.assertEqual(low.frames, [(240, 50), (600, 120), (1200, 240)])
    self.assertEqual(high.frames, [(3 * w, 3 * h) for w, h in low.frames])

  def test_gradient_is_finite_for_silence(self):
    silence = tf.zeros([2, 1000])
    with tf.GradientTape() as tape:
      estimate = tf.Variable(tf.zeros([2, 1000]))
      loss = tf.reduce_sum(losses.DenoiseLoss(16000)(silence, estimate))
    self.assertTrue(np.isfinite(tape.gradient(loss, estimate).numpy()).all())


class IntelligibilityTest(tf.test.TestCase):

  def test_it_follows_stoi_is_scale_free_and_has_a_finite_gradient(self):
    clean = 0.3 * speech.utterance(np.random.default_rng(0), 32000, 16000)
    rng = np.random.default_rng(1)
    noise = rng.normal(size=clean.shape) * np.sqrt(np.mean(clean**2))
    noisy = np.stack([clean + noise / 10 ** (snr / 20) for snr in (-5, 0, 5, 10)])
    measure = losses.Intelligibility(16000)
    approximation = 1 - measure(np.repeat(clean[None], 4, 0).astype(np.float32),
                                noisy.astype(np.float32)).numpy()
    reference = [perceptual.stoi(clean, x, 16000) for x in noisy]  # pystoi
    self.assertAllClose(approximation, reference, atol=0.07)  # it keeps silent frames
    self.assertAllEqual(np.argsort(approximation), range(4))
    clean32 = clean[None].astype(np.float32)
    self.assertAllClose(measure(clean32, 3 * clean32), [0.0], atol=1e-5)
    with tf.GradientTape() as tape:
      estimate = tf.Variable(noisy[:1].astype(np.float32))
      loss = losses.DenoiseLoss(16000, intelligibility_weight=10.0)(clean32, estimate)
    self.assertTrue(np.isfinite(tape.gradient(loss, estimate).numpy()).all())
    self.assertAllGreater(loss - losses.DenoiseLoss(16000)(clean32, estimate), 0.0)


class OverSuppressionTest(tf.test.TestCase):

  def test_it_costs_removed_speech_not_residual_noise(self):
    clean = tf.constant(0.3 * speech.utterance(np.random.default_rng(0), 8000, 16000)[None],
                        tf.float32)
    noise = 0.05 * tf.random.stateless_normal(clean.shape, seed=(0, 1))
    term = lambda estimate: float(losses.over_suppression(  # pylint: disable=g-long-lambda
        spectral.stft_magnitude(clean, 512, 128),
        spectral.stft_magnitude(estimate, 512, 128))[0])
    self.assertAllClose(term(clean), 0.0, atol=1e-6)
    self.assertAllClose(term(3.0 * clean), 0.0, atol=1e-6)  # louder: nothing taken away
    self.assertGreater(term(tf.zeros_like(clean)), 0.9)  # all taken away (1 but for a floor)
    # Halving every bin takes away (1 - 0.5 ** 0.3) of each compressed magnitude.
    self.assertAllClose(term(0.5 * clean), (1 - 0.5**0.3) ** 2, rtol=1e-2)
    self.assertLess(term(clean + noise), 0.02)  # noise left in: (almost) free
    self.assertGreater(term(0.1 * clean), 10 * term(clean + noise))

  def test_the_loss_adds_it_with_its_weight_and_a_finite_gradient(self):
    clean = tf.random.stateless_normal([2, 4000], seed=(1, 2))
    estimate = 0.5 * clean
    plain = losses.DenoiseLoss(16000, stft_weight=0.1)
    weighted = losses.DenoiseLoss(16000, stft_weight=0.1, suppression_weight=4.0)
    added = np.mean([losses.over_suppression(*(spectral.stft_magnitude(x, w, h)
                                                 for x in (clean, estimate)))
                     for w, h in plain.frames], axis=0)
    self.assertAllClose(weighted(clean, estimate) - plain(clean, estimate), 4.0 * added,
                        rtol=1e-4)
    self.assertAllClose(losses.DenoiseLoss(16000, stft_weight=0, suppression_weight=1.0)(
        clean, 3.0 * clean), losses.l1(clean, 3.0 * clean), rtol=1e-5)
    with tf.GradientTape() as tape:
      variable = tf.Variable(tf.zeros([2, 4000]))
      loss = tf.reduce_sum(losses.DenoiseLoss(16000, suppression_weight=1.0)(clean, variable))
    self.assertTrue(np.isfinite(tape.gradient(loss, variable).numpy()).all())
    with self.assertRaisesRegex(ValueError, "suppression_weight"):
      losses.DenoiseLoss(16000, suppression_weight=-1.0)


if __name__ == "__main__":
  tf.test.main()
