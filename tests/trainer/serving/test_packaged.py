"""trainer.serving.packaged: the trained exports that ship in the package load and enhance, and a copy without them says what to pass instead."""

import os
from unittest import mock

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from input import synthetic
from trainer.evaluation import metrics
from trainer.serving import file_denoising
from trainer.serving import packaged
from trainer.serving import saved_model
from trainer.serving import streamer


# Clips each export enhances: one clip at -5 dB SNR in fast-changing noise can come out a
# little worse from a good model (the default's at 44.1 kHz does: -0.2 dB), so the mean.
CLIPS = 4


class PackagedTest(tf.test.TestCase, parameterized.TestCase):

  @parameterized.parameters((packaged.DEFAULT, 16000), (packaged.DEFAULT, 44100),
                            (packaged.STREAMING, 48000))
  def test_a_packaged_export_enhances_a_noisy_clip_at_any_rate(self, name, rate):
    module = saved_model.load_export(packaged.path(name))
    gains = []
    for index in range(CLIPS):
      noisy, clean = (x.astype(np.float32) for x in synthetic.example(
          seed=123, index=index, num_samples=2 * rate, sample_rate=rate))
      enhanced = file_denoising.denoise_signal(module, noisy, rate)
      self.assertEqual(enhanced.shape, noisy.shape)
      self.assertTrue(np.all(np.isfinite(enhanced)))
      gains.append(float(metrics.si_sdr(clean[None], enhanced[None])[0]
                         - metrics.si_sdr(clean[None], noisy[None])[0]))
    self.assertGreater(np.mean(gains), 0.0)  # trained weights: untrained ones make it worse

  def test_the_streaming_export_streams(self):
    module = saved_model.load_export(packaged.path(packaged.STREAMING))
    stream = streamer.Streamer.from_saved_model(module)
    noisy = synthetic.example(seed=123, index=1, num_samples=16000,
                              sample_rate=int(module.sample_rate.numpy()))[0]
    out = np.concatenate([stream.feed(noisy.astype(np.float32)), stream.flush()])
    self.assertLen(out, len(noisy))

  def test_a_copy_without_them_names_the_flag_to_pass(self):
    with mock.patch.object(packaged, "DIRECTORY", self.create_tempdir().full_path):
      with self.assertRaisesRegex(ValueError, "no packaged default model in .*pass "
                                  "--saved_model=<a trainer.export directory>"):
        packaged.path(packaged.DEFAULT)

  def test_they_are_small(self):
    for name in (packaged.DEFAULT, packaged.STREAMING):
      size = sum(os.path.getsize(os.path.join(d, f))
                 for d, _, fs in os.walk(packaged.path(name)) for f in fs)
      self.assertLess(size, 8 * 2**20, name)  # package data: a few MB each


if __name__ == "__main__":
  tf.test.main()
