"""Tests for trainer.evaluation.metrics: SI-SDR."""

import numpy as np
import tensorflow as tf

from trainer.evaluation import metrics


class SiSdrTest(tf.test.TestCase):

  def test_scale_invariant_and_matches_known_snr(self):
    rng = np.random.default_rng(0)
    clean = rng.normal(size=[1, 16000]).astype(np.float32)
    noise = rng.normal(size=[1, 16000]).astype(np.float32)
    noise -= clean * (noise * clean).sum() / (clean**2).sum()  # orthogonal to clean
    noise *= np.sqrt((clean**2).sum() / (noise**2).sum()) / 10.0  # 20 dB
    self.assertAllClose(metrics.si_sdr(clean, clean + noise), [20.0], atol=0.01)
    self.assertAllClose(metrics.si_sdr(clean, 7.0 * (clean + noise)), [20.0], atol=0.01)
    self.assertGreater(float(metrics.si_sdr(clean, clean)[0]), 60.0)

  def test_silence_is_finite(self):
    self.assertTrue(np.isfinite(metrics.si_sdr(tf.zeros([1, 100]), tf.zeros([1, 100]))).all())


if __name__ == "__main__":
  tf.test.main()
