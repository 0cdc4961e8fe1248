"""Tests for trainer.export and trainer.denoise: SavedModel round trip, chunked enhancement, files."""

import json
import os
from unittest import mock

import numpy as np
import tensorflow as tf

from input import audio
from trainer import denoise
from trainer import export
from trainer.models import card as card_lib

DESCRIPTION = dict(model=dict(hidden=8, depth=2, kernel_size=8, stride=4, growth=2,
                              max_hidden=10000, causal=False, attention_heads=2,
                              attention_layers=1), sample_rate=8000, seed=3)  # no
# "architecture": as config.json files were written before it existed (a U-Net).
MASK_DESCRIPTION = dict(architecture="mask", model=dict(hidden=8, depth=2, kernel_size=3,
                                                        causal=False),
                        sample_rate=8000, seed=3)


class ExportTest(tf.test.TestCase):

  description = DESCRIPTION

  def setUp(self):
    super().setUp()
    self.model_dir = self.create_tempdir().full_path
    with open(os.path.join(self.model_dir, card_lib.CONFIG_FILE), "w") as f:
      json.dump(self.description, f)
    self.model = card_lib.ModelCard.from_json(self.description).build()
    for variable in self.model.trainable_variables:  # not the init: a "trained" model
      variable.assign(variable * 1.5)
    tf.train.Checkpoint(model=self.model).save(os.path.join(self.model_dir, "checkpoints",
                                                            "ckpt"))
    self.out_dir = self.create_tempdir().full_path
    self.saved = export.export(self.model_dir, os.path.join(self.out_dir, "exported"))

  def test_saved_model_matches_the_model(self):
    loaded = tf.saved_model.load(self.saved)
    x = tf.random.normal([2, 1234])
    self.assertAllClose(loaded.denoise(x), self.model(x), rtol=1e-5, atol=1e-6)
    self.assertEqual(int(loaded.sample_rate.numpy()), 8000)
    signature = tf.saved_model.load(self.saved).signatures["denoise"]
    self.assertAllClose(signature(waveform=x)["output_0"], self.model(x), atol=1e-6)

  def test_denoise_file_keeps_length_and_rate(self):
    rate, seconds = 16000, 2.3
    t = np.arange(int(rate * seconds)) / rate
    noisy = (0.3 * np.sin(2 * np.pi * 440 * t)
             + 0.05 * np.random.default_rng(0).normal(size=t.size)).astype(np.float32)
    input_path = os.path.join(self.out_dir, "noisy.wav")
    tf.io.write_file(input_path, tf.audio.encode_wav(noisy[:, None], rate))
    output_path = os.path.join(self.out_dir, "enhanced.wav")
    samples = denoise.denoise_file(self.saved, input_path, output_path, chunk_seconds=1.0,
                                   overlap_seconds=0.25)
    enhanced, enhanced_rate = audio.load(output_path)
    self.assertEqual((samples, len(enhanced), enhanced_rate), (len(noisy), len(noisy), rate))
    self.assertGreater(np.abs(enhanced).max(), 0.01)
    self.assertEqual(sorted(os.listdir(self.out_dir)),
                     ["enhanced.wav", "exported", "noisy.wav"])  # no temporaries left

  def test_denoise_loses_no_file(self):
    input_path = os.path.join(self.out_dir, "noisy.wav")
    tf.io.write_file(input_path, tf.audio.encode_wav(tf.zeros([800, 1]) + 0.1, 8000))
    original = tf.io.read_file(input_path).numpy()
    with self.assertRaisesRegex(ValueError, "is the input file, which would be replaced"):
      denoise.denoise_file(self.saved, input_path, input_path, overwrite=True)
    with self.assertRaisesRegex(ValueError, "is a directory: name the .wav file"):
      denoise.denoise_file(self.saved, input_path, self.out_dir)
    existing = os.path.join(self.out_dir, "existing.wav")
    with open(existing, "wb") as f:
      f.write(b"mine")
    with self.assertRaisesRegex(FileExistsError, "exists; pass overwrite"):
      denoise.denoise_file(self.saved, input_path, existing)
    with open(existing, "rb") as f:
      self.assertEqual(f.read(), b"mine")
    self.assertEqual(tf.io.read_file(input_path).numpy(), original)
    with self.assertRaisesRegex(ValueError, "is a trainer.main model_dir, not an export: "
                                "run python -m trainer.export --model_dir="):
      denoise.denoise_file(self.model_dir, input_path, existing, overwrite=True)
    with self.assertRaisesRegex(ValueError, "holds no SavedModel"):
      denoise.denoise_file(self.out_dir, input_path, existing, overwrite=True)
    denoise.denoise_file(self.saved, input_path, existing, overwrite=True)
    self.assertEqual(audio.load(existing)[1], 8000)
    self.assertEqual(sorted(os.listdir(self.out_dir)),
                     ["existing.wav", "exported", "noisy.wav"])

  def test_never_writes_into_over_or_around_the_model_dir(self):
    before = sorted(os.walk(self.model_dir))
    for output in (self.model_dir, os.path.join(self.model_dir, "exported"),
                   os.path.dirname(self.model_dir)):
      with self.assertRaisesRegex(ValueError, "overlaps the model_dir"):
        export.export(self.model_dir, output, overwrite=True)
    self.assertEqual(sorted(os.walk(self.model_dir)), before)

  def test_a_folder_of_other_files_is_refused_even_with_overwrite(self):
    folder = os.path.join(self.out_dir, "mine")
    os.makedirs(folder)
    with open(os.path.join(folder, "notes.txt"), "w") as f:
      f.write("keep me")
    with self.assertRaisesRegex(FileExistsError, "is not an earlier export; nothing was "
                                "changed"):
      export.export(self.model_dir, folder, overwrite=True)
    self.assertEqual(os.listdir(folder), ["notes.txt"])

  def test_an_earlier_export_is_replaced_only_with_overwrite(self):
    with self.assertRaisesRegex(FileExistsError, "holds an earlier export; pass overwrite"):
      export.export(self.model_dir, self.saved)
    stamp = os.path.getmtime(os.path.join(self.saved, "saved_model.pb"))
    export.export(self.model_dir, self.saved, overwrite=True)
    self.assertGreaterEqual(os.path.getmtime(os.path.join(self.saved, "saved_model.pb")), stamp)
    self.assertEqual(sorted(os.listdir(self.out_dir)), ["exported"])  # no temporaries left
    tf.saved_model.load(self.saved)

  def test_a_failed_replacement_keeps_the_earlier_export(self):
    saved_model_pb = os.path.join(self.saved, "saved_model.pb")
    with open(saved_model_pb, "rb") as f:
      before = f.read()
    real_rename = tf.io.gfile.rename

    def rename(source, target, overwrite=False):
      if source.endswith(".tmp") and target == self.saved:  # the new export's move into place
        raise tf.errors.PermissionDeniedError(None, None, "Permission denied")
      return real_rename(source, target, overwrite)

    with mock.patch.object(export.tf.io.gfile, "rename", rename):
      with self.assertRaisesRegex(OSError, "Could not write the export .*Permission denied"):
        export.export(self.model_dir, self.saved, overwrite=True)
    with open(saved_model_pb, "rb") as f:
      self.assertEqual(f.read(), before)
    self.assertEqual(sorted(os.listdir(self.out_dir)), ["exported"])  # nothing else left
    tf.saved_model.load(self.saved)

  def test_missing_checkpoint_is_explained(self):
    empty = self.create_tempdir().full_path
    with self.assertRaisesRegex(FileNotFoundError, "config.json is missing"):
      export.export(empty, os.path.join(self.out_dir, "out"))


class MaskExportTest(ExportTest):

  description = MASK_DESCRIPTION

  def test_builds_the_mask_model(self):
    self.assertEqual(type(self.model).__name__, "MaskDenoiser")


class EnhanceTest(tf.test.TestCase):

  def test_chunks_cross_fade_back_to_the_whole(self):
    signal = np.random.default_rng(1).normal(size=10007).astype(np.float32)
    halve = lambda x: 0.5 * x.numpy()
    for chunk, overlap in ((1000, 0), (1000, 250), (4096, 1000), (20000, 100)):
      out = denoise.enhance(halve, signal, chunk=chunk, overlap=overlap, batch_size=3)
      self.assertAllClose(out, 0.5 * signal, atol=1e-6)

  def test_the_model_never_sees_silence_padding(self):
    signal = np.random.default_rng(2).normal(size=10007).astype(np.float32)  # no exact zeros
    seen = []

    def record(pieces):
      seen.append(pieces.numpy())
      return pieces

    for chunk in (1000, 3000, 10007, 50000):
      seen.clear()
      out = denoise.enhance(record, signal, chunk=chunk, overlap=100)
      self.assertAllClose(out, signal, atol=1e-6)
      self.assertTrue(all(np.all(p != 0) for p in seen), chunk)
      self.assertEqual({p.shape[1] for p in seen}, {min(chunk, len(signal))})

  def test_bad_overlap(self):
    with self.assertRaisesRegex(ValueError, "overlap"):
      denoise.enhance(lambda x: x, np.zeros(10), chunk=100, overlap=100)


if __name__ == "__main__":
  tf.test.main()
