"""Tests for trainer.serving.file_denoising and the trainer.denoise command: chunks cross-faded back to the whole, no silence padding, a file streamed a segment at a time, a signal ending it in one line."""

import os
import signal
import subprocess
import sys
import types
from unittest import mock

import numpy as np
import pytest
import tensorflow as tf

from input import audio
from input import wav
from tests import helpers
from trainer.models import mask
from trainer.serving import file_denoising
from trainer.serving import saved_model


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



class DenoiseCommandTest(tf.test.TestCase):

  @pytest.mark.end_to_end
  def test_a_signal_ends_it_in_one_line_and_leaves_nothing_behind(self):
    saved = os.path.join(self.create_tempdir().full_path, "exported")
    module = saved_model.ExportedDenoiser(mask.MaskDenoiser(sample_rate=16000, hidden=8,
                                                            depth=2), 16000)
    tf.saved_model.save(module, saved, signatures=module.signatures())
    directory = self.create_tempdir().full_path
    noisy, output = os.path.join(directory, "noisy.wav"), os.path.join(directory, "out.wav")
    samples = 20 * 60 * 16000  # long enough to be still running when signalled
    with open(noisy, "wb") as f:
      f.write(wav.header(16000, samples) + (np.arange(samples) % 200 * 50).astype(
          "<i2").tobytes())
    for signum in (signal.SIGTERM, signal.SIGINT):
      child = subprocess.Popen(
          [sys.executable, "-m", "trainer.denoise", f"--saved_model={saved}",
           f"--input={noisy}", f"--output={output}"], stderr=subprocess.PIPE,
          env=helpers.env(), cwd=helpers.REPO)
      code, err = helpers.stop_when(  # once it writes its temporary file
          child, lambda: len(os.listdir(directory)) > 1, signum)  # pylint: disable=cell-var-from-loop
      self.assertEqual(code, 128 + signum, err[-2000:])
      self.assertNotIn("Traceback", err)
      self.assertEqual(err.strip().splitlines()[-1], f"trainer.denoise: stopped by "
                       f"{signal.Signals(signum).name}; nothing more was written.")
      self.assertEqual(os.listdir(directory), ["noisy.wav"])


if __name__ == "__main__":
  tf.test.main()
