"""Tests for trainer.serving.saved_model: SavedModel round trip, the run's weights restored, and files written and denoised through an export without losing anything."""

import json
import os
from unittest import mock

import numpy as np
import pytest
import tensorflow as tf

from input import audio
from tests import helpers
from trainer.loop import best
from trainer.models import card as card_lib
from trainer.models import contract
from ops import kept_input
from trainer import optim
from trainer import run_dir
from trainer.serving import file_denoising
from trainer.serving import saved_model

DESCRIPTION = dict(model=dict(hidden=8, depth=2, kernel_size=8, stride=4, growth=2,
                              max_hidden=10000, causal=False, attention_heads=2,
                              attention_layers=1), sample_rate=8000, seed=3)  # no
# "architecture": as config.json files were written before it existed (a U-Net).
MASK_DESCRIPTION = dict(architecture="mask", model=dict(hidden=8, depth=2, kernel_size=3,
                                                        causal=False),
                        sample_rate=8000, seed=3)


def kept(model, x, keep_input=kept_input.KEEP, keep_presence=kept_input.PRESENCE_KEEP):
  """`model`'s output for `x` (at 8 kHz) with the shares of the input an export keeps."""
  return model.keeping(x, keep_input, keep_presence)


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
    self.saved = saved_model.export(self.model_dir, os.path.join(self.out_dir, "exported"))

  def test_saved_model_matches_the_model(self):
    loaded = tf.saved_model.load(self.saved)
    x = tf.random.normal([2, 1234])
    self.assertAllClose(loaded.denoise(x), kept(self.model, x), rtol=1e-5, atol=1e-6)
    self.assertAllClose(loaded.denoise_keeping(x, 0.0, 0.0), self.model(x), rtol=1e-5,
                        atol=1e-6)
    self.assertEqual(int(loaded.sample_rate.numpy()), 8000)
    signatures = tf.saved_model.load(self.saved).signatures
    self.assertAllClose(signatures["denoise"](waveform=x)["output_0"], kept(self.model, x),
                        atol=1e-6)
    self.assertAllClose(signatures["denoise_keeping"](waveform=x, keep_input=0.3,
                                                      keep_presence=0.3)["output_0"],
                        kept(self.model, x, 0.3, 0.3), atol=1e-6)

  def test_the_export_keeps_the_shares_it_was_given_and_the_file_path_follows(self):
    saved = saved_model.export(self.model_dir, os.path.join(self.out_dir, "k"), keep_input=0.05,
                          keep_presence=0.2)
    loaded = tf.saved_model.load(saved)
    self.assertAllClose((loaded.keep_input, loaded.keep_presence), (0.05, 0.2))
    signal = (0.1 * np.random.default_rng(4).normal(size=12000)).astype(np.float32)
    path = os.path.join(self.out_dir, "at_model_rate.wav")
    tf.io.write_file(path, tf.audio.encode_wav(signal[:, None], 8000))
    whole = kept(self.model, tf.constant(audio.read_file(path)[0][None]), 0.05, 0.2)[0]
    file_denoising.denoise_file(saved, path, path + ".out.wav")  # one chunk, at the model's rate
    self.assertAllClose(audio.read_file(path + ".out.wav")[0], whole, atol=2 / 32768)
    with self.assertRaisesRegex(ValueError, r"keep_input=1.2 must be in \[0, 1\]"):
      saved_model.export(self.model_dir, os.path.join(self.out_dir, "bad"), keep_input=1.2)

  def test_an_export_from_before_the_kept_input_is_refused_with_the_fix(self):
    old = tf.Module()
    old.denoise = tf.function(lambda waveform: waveform,
                              input_signature=[tf.TensorSpec([None, None], tf.float32)])
    path = os.path.join(self.out_dir, "old")
    tf.saved_model.save(old, path)
    with self.assertRaisesRegex(ValueError, "exported before exports kept a share of the "
                                "input .* export the run again"):
      saved_model.load_export(path)

  def test_denoise_file_keeps_length_and_rate(self):
    rate, seconds = 16000, 2.3
    t = np.arange(int(rate * seconds)) / rate
    noisy = (0.3 * np.sin(2 * np.pi * 440 * t)
             + 0.05 * np.random.default_rng(0).normal(size=t.size)).astype(np.float32)
    input_path = os.path.join(self.out_dir, "noisy.wav")
    tf.io.write_file(input_path, tf.audio.encode_wav(noisy[:, None], rate))
    output_path = os.path.join(self.out_dir, "enhanced.wav")
    samples = file_denoising.denoise_file(self.saved, input_path, output_path, chunk_seconds=1.0,
                                   overlap_seconds=0.25)
    enhanced, enhanced_rate = audio.read_file(output_path)
    self.assertEqual((samples, len(enhanced), enhanced_rate), (len(noisy), len(noisy), rate))
    self.assertGreater(np.abs(enhanced).max(), 0.01)
    self.assertEqual(sorted(os.listdir(self.out_dir)),
                     ["enhanced.wav", "exported", "noisy.wav"])  # no temporaries left

  def test_a_file_too_short_for_one_sample_at_the_model_rate_keeps_its_length(self):
    for samples, rate in ((1, 48000), (1, 44100), (2, 96000), (5, 48000)):
      path = os.path.join(self.out_dir, f"short_{samples}_{rate}.wav")
      tf.io.write_file(path, tf.audio.encode_wav(np.full([samples, 1], 0.1, np.float32), rate))
      written = file_denoising.denoise_file(self.saved, path, path + ".out.wav")
      enhanced, enhanced_rate = audio.read_file(path + ".out.wav")
      self.assertEqual((written, len(enhanced), enhanced_rate), (samples, samples, rate))
      self.assertTrue(np.all(np.isfinite(enhanced)))

  def test_denoise_loses_no_file(self):
    input_path = os.path.join(self.out_dir, "noisy.wav")
    tf.io.write_file(input_path, tf.audio.encode_wav(tf.zeros([800, 1]) + 0.1, 8000))
    original = tf.io.read_file(input_path).numpy()
    with self.assertRaisesRegex(ValueError, f"is the input file {input_path}, which would be "
                                "replaced"):
      file_denoising.denoise_file(self.saved, input_path, input_path, overwrite=True)
    with self.assertRaisesRegex(ValueError, "is a directory: name the file"):
      file_denoising.denoise_file(self.saved, input_path, self.out_dir)
    existing = os.path.join(self.out_dir, "existing.wav")
    with open(existing, "wb") as f:
      f.write(b"mine")
    with self.assertRaisesRegex(FileExistsError, "exists; pass overwrite"):
      file_denoising.denoise_file(self.saved, input_path, existing)
    with open(existing, "rb") as f:
      self.assertEqual(f.read(), b"mine")
    self.assertEqual(tf.io.read_file(input_path).numpy(), original)
    with self.assertRaisesRegex(ValueError, "is a trainer.main model_dir, not an export: "
                                "run python -m trainer.export --model_dir="):
      file_denoising.denoise_file(self.model_dir, input_path, existing, overwrite=True)
    with self.assertRaisesRegex(ValueError, "holds no SavedModel"):
      file_denoising.denoise_file(self.out_dir, input_path, existing, overwrite=True)
    file_denoising.denoise_file(self.saved, input_path, existing, overwrite=True)
    self.assertEqual(audio.read_file(existing)[1], 8000)
    self.assertEqual(sorted(os.listdir(self.out_dir)),
                     ["existing.wav", "exported", "noisy.wav"])

  def test_denoise_refuses_outputs_it_cannot_honour(self):
    input_path = os.path.join(self.out_dir, "noisy.wav")
    tf.io.write_file(input_path, tf.audio.encode_wav(tf.zeros([800, 1]) + 0.1, 8000))
    before = sorted(os.walk(self.saved))
    with self.assertRaisesRegex(ValueError, "must end in .wav: the enhanced audio is written "
                                "as 16-bit WAV"):
      file_denoising.denoise_file(self.saved, input_path, os.path.join(self.out_dir, "x.flac"))
    with self.assertRaisesRegex(ValueError, "lies inside the SavedModel"):
      file_denoising.denoise_file(self.saved, input_path,
                           os.path.join(self.saved, "saved_model.pb.wav"), overwrite=True)
    for kwargs, pattern in ((dict(chunk_seconds=float("nan")), "chunk_seconds=nan must be a "
                             "positive number"),
                            (dict(overlap_seconds=2.0, chunk_seconds=1.0),
                             r"overlap_seconds=2.0 must be in \[0, chunk_seconds=1\)")):
      with self.assertRaisesRegex(ValueError, pattern):
        file_denoising.denoise_file(self.saved, input_path, os.path.join(self.out_dir, "y.wav"),
                             **kwargs)
    self.assertEqual(sorted(os.walk(self.saved)), before)
    self.assertEqual(sorted(os.listdir(self.out_dir)), ["exported", "noisy.wav"])

  def test_non_finite_and_loud_samples_are_named_not_silently_spread(self):
    rate = 8000
    signal = (0.3 * np.sin(2 * np.pi * 300 * np.arange(3 * rate) / rate)).astype(np.float32)
    signal[rate // 2] = np.nan
    signal[2 * rate:] *= 10.0  # beyond full scale in a float WAV
    input_path = os.path.join(self.out_dir, "damaged.wav")
    helpers.write_audio(input_path, signal, rate, "float")
    output_path = os.path.join(self.out_dir, "enhanced.wav")
    with self.assertLogs(level="WARNING") as logs:
      file_denoising.denoise_file(self.saved, input_path, output_path, chunk_seconds=1.0,
                           overlap_seconds=0.25)
    self.assertTrue(any("1 non-finite sample(s) (NaN/inf) from 0.500 s: replaced by 0" in line
                        for line in logs.output), logs.output)
    self.assertTrue(any("beyond full scale and clipped" in line for line in logs.output))
    enhanced, _ = audio.read_file(output_path)
    self.assertGreater(np.abs(enhanced[:rate]).max(), 0.01)  # the NaN did not silence it

  def test_never_writes_into_over_or_around_the_model_dir(self):
    before = sorted(os.walk(self.model_dir))
    for output in (self.model_dir, os.path.join(self.model_dir, "exported"),
                   os.path.dirname(self.model_dir)):
      with self.assertRaisesRegex(ValueError, "overlaps the model_dir"):
        saved_model.export(self.model_dir, output, overwrite=True)
    self.assertEqual(sorted(os.walk(self.model_dir)), before)

  def test_a_folder_of_other_files_is_refused_even_with_overwrite(self):
    folder = os.path.join(self.out_dir, "mine")
    os.makedirs(folder)
    with open(os.path.join(folder, "notes.txt"), "w") as f:
      f.write("keep me")
    with self.assertRaisesRegex(FileExistsError, "is not an earlier export; nothing was "
                                "changed"):
      saved_model.export(self.model_dir, folder, overwrite=True)
    self.assertEqual(os.listdir(folder), ["notes.txt"])

  def test_an_earlier_export_is_replaced_only_with_overwrite(self):
    with self.assertRaisesRegex(FileExistsError, "holds an earlier export; pass overwrite"):
      saved_model.export(self.model_dir, self.saved)
    stamp = os.path.getmtime(os.path.join(self.saved, "saved_model.pb"))
    saved_model.export(self.model_dir, self.saved, overwrite=True)
    self.assertGreaterEqual(os.path.getmtime(os.path.join(self.saved, "saved_model.pb")), stamp)
    self.assertEqual(sorted(os.listdir(self.out_dir)), ["exported"])  # no temporaries left
    tf.saved_model.load(self.saved)

  def test_the_weight_average_is_exported_when_the_run_kept_one(self):
    with self.assertRaisesRegex(ValueError, "--weights=ema, but .* holds no weight average"):
      saved_model.export(self.model_dir, os.path.join(self.out_dir, "ema"), weights="ema")
    variables = contract.tf_variables(self.model)
    ema = optim.ExponentialMovingAverage(0.5)
    ema.build(variables)
    for average in ema.average:
      average.assign(average * 0.5)
    tf.train.Checkpoint(model=self.model, ema=ema).save(
        os.path.join(self.model_dir, "checkpoints", "ckpt"))
    averaged = card_lib.ModelCard.from_json(self.description).build()
    ema.copy_to(contract.tf_variables(averaged))
    x = tf.random.normal([1, 1234])
    for weights, want in (("auto", averaged), ("ema", averaged), ("raw", self.model)):
      loaded = tf.saved_model.load(saved_model.export(
          self.model_dir, os.path.join(self.out_dir, weights), weights=weights))
      self.assertAllClose(loaded.denoise(x), kept(want, x), rtol=1e-5, atol=1e-6)

  def test_the_best_or_a_named_checkpoint_is_exported(self):
    with self.assertRaisesRegex(FileNotFoundError, "No checkpoint in .*best: train with "
                                "--keep_best=METRIC"):
      saved_model.export(self.model_dir, os.path.join(self.out_dir, "none"), checkpoint="best")
    state = tf.train.Checkpoint(model=self.model)
    first = tf.train.latest_checkpoint(os.path.join(self.model_dir, "checkpoints"))
    for variable in self.model.trainable_variables:
      variable.assign(variable * 2.0)
    best.KeepBest(state, self.model_dir, "si_sdr")(5, dict(si_sdr=10.0))
    x = tf.random.normal([1, 1234])
    loaded = tf.saved_model.load(saved_model.export(self.model_dir, os.path.join(self.out_dir, "b"),
                                               checkpoint="best"))
    scale = float(tf.reduce_max(tf.abs(self.model(x))))  # doubled weights: large outputs
    self.assertAllClose(loaded.denoise(x), kept(self.model, x), atol=1e-5 * scale)
    named = tf.saved_model.load(saved_model.export(self.model_dir, os.path.join(self.out_dir, "n"),
                                              checkpoint=first))
    self.assertNotAllClose(named.denoise(x), kept(self.model, x))

  def test_a_checkpoint_of_another_run_is_refused_unless_its_model_is_this_one(self):
    x = tf.random.normal([1, 1234])
    other_run = os.path.join(self.out_dir, "other")
    description = dict(self.description, model=dict(self.description["model"], causal=True))
    other = card_lib.ModelCard.from_json(description)
    other.write(other_run)
    path = tf.train.Checkpoint(model=other.build()).save(
        os.path.join(other_run, "checkpoints", "ckpt"))
    with self.assertRaisesRegex(run_dir.CheckpointError,
                                f"--checkpoint={path} is a checkpoint of the run in "
                                f"{other_run}, whose model differs .*--causal=True there, "
                                "False here"):
      saved_model.export(self.model_dir, os.path.join(self.out_dir, "x"), checkpoint=path)
    lone = tf.train.Checkpoint(model=self.model).save(os.path.join(self.out_dir, "lone",
                                                                    "ckpt"))
    with self.assertLogs(level="WARNING") as logs:
      exported = tf.saved_model.load(saved_model.export(
          self.model_dir, os.path.join(self.out_dir, "y"), checkpoint=lone))
    self.assertIn(f"--checkpoint={lone} lies outside {self.model_dir} and no model card",
                  "\n".join(logs.output))
    self.assertEqual(exported.source.numpy().decode(), f"raw weights of {lone}")
    self.assertAllClose(exported.denoise(x), kept(self.model, x), rtol=1e-5, atol=1e-6)

  def test_a_checkpoint_file_names_its_checkpoint(self):
    first = tf.train.latest_checkpoint(os.path.join(self.model_dir, "checkpoints"))
    x = tf.random.normal([1, 1234])
    for i, file in enumerate((first + ".index", first + ".data-00000-of-00001")):
      loaded = tf.saved_model.load(saved_model.export(self.model_dir, f"{self.out_dir}/f{i}",
                                                 checkpoint=file))
      self.assertAllClose(loaded.denoise(x), kept(self.model, x), rtol=1e-5, atol=1e-6)
    missing = os.path.join(self.model_dir, "checkpoints", "ckpt-99")
    with self.assertRaisesRegex(run_dir.CheckpointError,
                                f"--checkpoint={missing} is not a checkpoint \\(there is no "
                                f"{missing}.index\\)"):
      saved_model.export(self.model_dir, f"{self.out_dir}/m", checkpoint=missing)

  @pytest.mark.end_to_end
  def test_a_checkpoint_without_the_models_variables_is_refused(self):
    other = "mask" if self.description.get("architecture") != "mask" else "unet"
    other_model = card_lib.ModelCard.create(other, sample_rate=8000, hidden=8, depth=2).build()
    foreign = {
        "another program's": tf.train.Checkpoint(net=tf.Variable([1.0]), step=tf.Variable(3)),
        "another architecture's": tf.train.Checkpoint(model=other_model)}
    total = len(self.model.trainable_variables)
    for name, state in foreign.items():
      path = state.save(os.path.join(self.create_tempdir().full_path, "ckpt"))
      with self.assertRaisesRegex(run_dir.CheckpointError,
                                  f"--checkpoint={path} lacks {total} of the model's {total} "
                                  "variables", msg=name):
        saved_model.export(self.model_dir, f"{self.out_dir}/{name}", checkpoint=path)
    self.assertEqual(sorted(os.listdir(self.out_dir)), ["exported"])
    result = helpers.run_module("trainer.export", f"--model_dir={self.model_dir}",
                                f"--output={self.out_dir}/cli", f"--checkpoint={path}")
    self.assertNotEqual(result.returncode, 0)
    self.assertRegex(result.stderr.strip().splitlines()[-1],
                     f"^trainer.export: --checkpoint={path} lacks {total} of")

  @pytest.mark.end_to_end
  def test_a_damaged_export_is_named_by_every_command(self):
    damaged = os.path.join(self.out_dir, "damaged")
    saved_model.export(self.model_dir, damaged)
    with open(os.path.join(damaged, "saved_model.pb"), "r+b") as f:
      f.truncate(100)
    with self.assertRaisesRegex(ValueError, f"^{damaged} is a damaged export: TensorFlow "
                                "cannot load it .*Export the run again"):
      saved_model.load_export(damaged)
    tflite_file = os.path.join(self.out_dir, "model.tflite")
    with open(tflite_file, "wb") as f:
      f.write(b"TFL3")
    with self.assertRaisesRegex(ValueError, f"^{tflite_file} is a TFLite file: the commands "
                                "take a SavedModel .*Streamer.from_tflite"):
      saved_model.load_export(tflite_file)
    noisy = os.path.join(self.out_dir, "noisy.wav")
    tf.io.write_file(noisy, tf.audio.encode_wav(tf.zeros([800, 1]) + 0.1, 8000))
    for command in (["trainer.denoise", f"--input={noisy}"],
                    ["trainer.stream", f"--input={noisy}"]):
      result = helpers.run_module(*command, f"--saved_model={damaged}",
                                  f"--output={self.out_dir}/out.wav", timeout=300)
      self.assertRegex(result.stderr.strip().splitlines()[-1],
                       f"^{command[0]}: {damaged} is a damaged export")
    self.assertNotIn("out.wav", os.listdir(self.out_dir))

  def test_of_two_exports_to_one_new_path_the_second_to_finish_fails(self):
    output = os.path.join(self.out_dir, "race")
    real_save = tf.saved_model.save

    def save_while_another_finishes(module, path, signatures):
      real_save(module, path, signatures=signatures)
      os.makedirs(output)  # the other export, renamed into place first
      with open(os.path.join(output, "saved_model.pb"), "w") as f:
        f.write("the other export")

    with mock.patch.object(saved_model.tf.saved_model, "save", save_while_another_finishes):
      with self.assertRaisesRegex(FileExistsError, f"output {output} was written by another "
                                  "export while this one ran; it was not replaced"):
        saved_model.export(self.model_dir, output)
    with open(os.path.join(output, "saved_model.pb")) as f:
      self.assertEqual(f.read(), "the other export")
    self.assertEqual(sorted(os.listdir(self.out_dir)), ["exported", "race"])  # no temporary

  def test_a_failed_replacement_keeps_the_earlier_export(self):
    saved_model_pb = os.path.join(self.saved, "saved_model.pb")
    with open(saved_model_pb, "rb") as f:
      before = f.read()
    real_rename = tf.io.gfile.rename

    def rename(source, target, overwrite=False):
      if source.endswith(".tmp") and target == self.saved:  # the new export's move into place
        raise tf.errors.PermissionDeniedError(None, None, "Permission denied")
      return real_rename(source, target, overwrite)

    with mock.patch.object(saved_model.tf.io.gfile, "rename", rename):
      with self.assertRaisesRegex(OSError, "Could not write the export .*Permission denied"):
        saved_model.export(self.model_dir, self.saved, overwrite=True)
    with open(saved_model_pb, "rb") as f:
      self.assertEqual(f.read(), before)
    self.assertEqual(sorted(os.listdir(self.out_dir)), ["exported"])  # nothing else left
    tf.saved_model.load(self.saved)

  def test_an_output_under_a_file_is_refused(self):
    notes = os.path.join(self.out_dir, "notes.txt")
    with open(notes, "w") as f:
      f.write("keep me")
    with self.assertRaisesRegex(ValueError, f"lies under {notes}, which is a file"):
      saved_model.export(self.model_dir, os.path.join(notes, "sub", "export"))
    with open(notes) as f:
      self.assertEqual(f.read(), "keep me")

  def test_missing_checkpoint_is_explained(self):
    empty = self.create_tempdir().full_path
    with self.assertRaisesRegex(FileNotFoundError, "config.json is missing"):
      saved_model.export(empty, os.path.join(self.out_dir, "out"))


class MaskExportTest(ExportTest):

  description = MASK_DESCRIPTION

  def test_builds_the_mask_model(self):
    self.assertEqual(type(self.model).__name__, "MaskDenoiser")


if __name__ == "__main__":
  tf.test.main()
