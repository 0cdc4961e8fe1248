"""Tests for input.decoders and input.audio.AudioFile: every promised format through each decoder that loads here, both decoders agree, the choice is named and never narrower."""

import os
from unittest import mock

from absl.testing import parameterized
import numpy as np
import pytest
import tensorflow as tf

from input import audio
from input import decoders
from tests import helpers

RATE = 44100
# The smallest step of each kind's samples, so a decoded sine is held to its own precision.
STEP = {"wav8": 2.0**-7, "wav16": 2.0**-15, "wav24": 2.0**-23, "wav32": 2.0**-31,
        "float": 1e-7, "flac": 2.0**-15, "flac24": 2.0**-23}


def available(decoder):
  """Skips the test (saying why) where `decoder` cannot load, as tensorflow-io on TF > 2.17."""
  if decoders.problem(decoder) is not None:
    pytest.skip(f"{decoder} cannot load here: {decoders.problem(decoder)}")


def cases():
  return [(f"{decoder}_{kind}", decoder, kind)
          for decoder in decoders.DECODERS for kind in helpers.AUDIO_KINDS]


class DecoderTest(tf.test.TestCase, parameterized.TestCase):

  def write(self, kind, signal, rate=RATE):
    path = os.path.join(self.create_tempdir().full_path,
                        "x.flac" if kind.startswith("flac") else "x.wav")
    helpers.write_audio(path, signal, rate, kind)
    return path

  @parameterized.named_parameters(*cases())
  def test_every_promised_format_decodes_to_its_precision(self, decoder, kind):
    available(decoder)
    signal = helpers.sine(0.5, RATE, amplitude=0.7)
    stereo = np.stack([signal, -0.5 * signal], axis=1)
    path = self.write(kind, stereo)
    source = audio.AudioFile(path, decoder)
    self.assertEqual((source.rate, source.length), (RATE, len(signal)))
    whole = source.read(0, source.length)
    self.assertEqual(whole.dtype, np.float32)
    self.assertAllClose(whole, 0.25 * signal, atol=STEP[kind])  # channels averaged
    self.assertAllEqual(source.read(1000, 1500), whole[1000:1500])  # a range, not the whole
    self.assertAllEqual(source.read(-5, 10**9), whole)  # clipped to the file

  @parameterized.named_parameters(*((kind, kind) for kind in helpers.AUDIO_KINDS))
  def test_both_decoders_give_the_same_samples(self, kind):
    for decoder in decoders.DECODERS:
      available(decoder)
    signal = np.random.default_rng(0).uniform(-0.9, 0.9, size=[4000, 2])
    path = self.write(kind, signal, 16000)
    tfio_file, soundfile_file = (audio.AudioFile(path, decoder)
                                 for decoder in decoders.DECODERS)
    self.assertEqual(tfio_file.rate, soundfile_file.rate)
    self.assertAllEqual(tfio_file.read(0, 4000), soundfile_file.read(0, 4000))

  @parameterized.named_parameters(*((decoder, decoder) for decoder in decoders.DECODERS))
  def test_a_float_wav_keeps_its_level_and_loses_its_non_finite_samples(self, decoder):
    available(decoder)
    signal = np.full(100, 1.5, np.float32)
    signal[10] = np.nan
    with self.assertLogs("absl", "WARNING") as logs:
      samples = audio.AudioFile(self.write("float", signal, 8000), decoder).read(0, 100)
    self.assertEqual(samples[10], 0.0)
    self.assertAllEqual(np.delete(samples, 10), np.full(99, 1.5, np.float32))
    self.assertIn("1 non-finite sample(s) (NaN/inf) from 0.001 s: replaced by 0",
                  "".join(logs.output))

  @parameterized.named_parameters(*((decoder, decoder) for decoder in decoders.DECODERS))
  def test_a_damaged_file_is_named(self, decoder):
    available(decoder)
    path = self.write("wav16", helpers.sine(0.1, 8000), 8000)
    with open(path, "r+b") as f:
      f.truncate(30)
    with self.assertRaisesRegex(audio.AudioError, f"{path}: it ends inside its WAV header"):
      audio.AudioFile(path, decoder)

  def test_the_choice_prefers_tensorflow_io_and_names_what_it_passed_over(self):
    no_tfio = {decoders.TENSORFLOW_IO: "NotFoundError: undefined symbol", decoders.SOUNDFILE: None}
    for problems, expected in (({d: None for d in decoders.DECODERS}, decoders.TENSORFLOW_IO),
                               (no_tfio, decoders.SOUNDFILE)):
      decoders.chosen.cache_clear()
      try:
        with mock.patch.object(decoders, "problem", problems.get), \
            self.assertLogs("absl", "INFO") as logs:
          self.assertEqual(decoders.chosen(), expected)
      finally:
        decoders.chosen.cache_clear()
      self.assertLen(logs.output, 1)
      self.assertIn(f"Decoding audio with {expected}", logs.output[0])
    self.assertIn("tensorflow-io cannot load (NotFoundError: undefined symbol)", logs.output[0])

  def test_no_decoder_is_an_error_with_each_reason_never_a_narrower_format_set(self):
    reasons = {decoders.TENSORFLOW_IO: "NotFoundError: ops", decoders.SOUNDFILE: "OSError: lib"}
    decoders.chosen.cache_clear()
    try:
      with mock.patch.object(decoders, "problem", reasons.get), self.assertRaisesRegex(
          audio.AudioError, r"No audio decoder works here \(tensorflow-io: NotFoundError: ops; "
          r"soundfile: OSError: lib\)\. Install soundfile"):
        audio.AudioFile("any.wav")
    finally:
      decoders.chosen.cache_clear()

  def test_an_unusable_decoder_asked_for_by_name_is_refused_with_its_reason(self):
    with mock.patch.object(decoders, "problem", lambda decoder: "ImportError: gone"), \
        self.assertRaisesRegex(audio.AudioError, r"x\.wav: the soundfile decoder cannot load "
                               r"here \(ImportError: gone\)"):
      audio.AudioFile("x.wav", decoders.SOUNDFILE)

  def test_an_unknown_decoder_says_which_exist(self):
    self.assertIn("unknown decoder 'sox': use one of tensorflow-io, soundfile",
                  decoders.problem("sox"))

  def test_soundfile_loads_on_every_supported_tensorflow(self):
    self.assertIsNone(decoders.problem(decoders.SOUNDFILE))

  def test_soundfile_reads_through_tensorflow_file_systems(self):
    signal = helpers.sine(0.2, 16000)
    local = self.write("flac24", signal, 16000)
    remote = "ram://test_decoders/x.flac"
    tf.io.gfile.makedirs("ram://test_decoders")
    tf.io.gfile.copy(local, remote, overwrite=True)
    source = audio.AudioFile(remote, decoders.SOUNDFILE)
    self.assertEqual((source.rate, source.length), (16000, len(signal)))
    self.assertAllEqual(source.read(100, 900),
                        audio.AudioFile(local, decoders.SOUNDFILE).read(100, 900))
    with self.assertRaisesRegex(audio.AudioError, "ram://test_decoders/none.wav: cannot "
                                "decode audio"):
      audio.AudioFile("ram://test_decoders/none.wav", decoders.SOUNDFILE)
