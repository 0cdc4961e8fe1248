"""Tests for trainer.serving.file_denoising: chunks cross-faded back to the whole, no silence padding, a file streamed a segment at a time."""

import os
import types
from unittest import mock

import numpy as np
import tensorflow as tf

from input import audio
from tests import helpers
from trainer.serving import file_denoising


class EnhanceTest(tf.test.TestCase):

  def test_chunks_cross_fade_back_to_the_whole(self):
    signal = np.random.default_rng(1).normal(size=10007).astype(np.float32)
    halve = lambda x: 0.5 * x.numpy()
    for chunk, overlap in ((1000, 0), (1000, 250), (4096, 1000), (20000, 100)):
      out = file_denoising.enhance(halve, signal, chunk=chunk, overlap=overlap, batch_size=3)
      self.assertAllClose(out, 0.5 * signal, atol=1e-6)

  def test_the_model_never_sees_silence_padding(self):
    signal = np.random.default_rng(2).normal(size=10007).astype(np.float32)  # no exact zeros
    seen = []

    def record(pieces):
      seen.append(pieces.numpy())
      return pieces

    for chunk in (1000, 3000, 10007, 50000):
      seen.clear()
      out = file_denoising.enhance(record, signal, chunk=chunk, overlap=100)
      self.assertAllClose(out, signal, atol=1e-6)
      self.assertTrue(all(np.all(p != 0) for p in seen), chunk)
      self.assertEqual({p.shape[1] for p in seen}, {min(chunk, len(signal))})

  def test_a_file_is_streamed_segment_by_segment_back_to_the_whole(self):
    rate = 8000
    signal = np.random.default_rng(3).uniform(-0.5, 0.5, size=7 * rate + 123).astype(np.float32)
    path = os.path.join(self.create_tempdir().full_path, "long.wav")
    helpers.write_audio(path, signal, rate, "float")
    halve = types.SimpleNamespace(sample_rate=tf.constant(rate),
                                  denoise_keeping=lambda x, *shares: 0.5 * x.numpy())
    read = []
    source = audio.AudioFile(path)
    real_read = source.read
    source.read = lambda start, stop: read.append((start, stop)) or real_read(start, stop)
    with mock.patch.object(file_denoising, "SEGMENT_SECONDS", 2.0):
      blocks = list(file_denoising.denoise_stream(halve, source, chunk_seconds=0.5,
                                                  overlap_seconds=0.25, keep_input=0.0,
                                                  keep_presence=0.0))
    self.assertAllClose(np.concatenate(blocks), 0.5 * signal, atol=1e-6)
    self.assertLen(read, 4)  # 2 s segments overlapping by 0.25 s: never the whole file
    self.assertTrue(all(stop - start <= 2 * rate for start, stop in read))
    self.assertLessEqual(max(len(b) for b in blocks), 2 * rate)

  def test_bad_overlap(self):
    with self.assertRaisesRegex(ValueError, "overlap"):
      file_denoising.enhance(lambda x: x, np.zeros(10), chunk=100, overlap=100)


if __name__ == "__main__":
  tf.test.main()
