"""Tests for trainer.serving.tflite: a causal model's stream step (mask model or U-Net) as builtin-only TFLite, equal to the model at 16 and 48 kHz, float or int8, exported from a run without losing anything."""

import json
import os
import re
from unittest import mock

from absl.testing import parameterized
import numpy as np
import pytest
import tensorflow as tf

from input import speech
from ops import kept_input
from tests import helpers
from trainer.evaluation import metrics
from trainer.models import card as card_lib
from trainer.models import mask
from trainer.models import unet
from trainer.serving import file_denoising
from trainer.serving import streamer as streamer_lib
from trainer.serving import tflite
from trainer.serving import tflite_runtime


def description(causal=True):
  """config.json of a small mask model with the current defaults."""
  return card_lib.ModelCard.create("mask", sample_rate=16000, hidden=8, depth=3,
                                   causal=causal, seed=4).to_json()


def run_dir(directory, causal=True):
  """A model_dir holding a (causal) mask model's card and a checkpoint."""
  with open(os.path.join(directory, card_lib.CONFIG_FILE), "w") as f:
    json.dump(description(causal), f)
  model = card_lib.ModelCard.from_json(description(causal)).build()
  tf.train.Checkpoint(model=model).save(os.path.join(directory, "checkpoints", "ckpt"))
  return model


def builtin_only(path):
  """The ops of a .tflite file that are not TFLite builtins (Flex or custom)."""
  ops = {op["op_name"] for op in tflite_runtime.interpreter(path)._get_ops_details()}  # pylint: disable=protected-access
  return sorted(op for op in ops if op.startswith("Flex") or op == "CUSTOM")


def level_gate(model):
  """Sets a mask model to close its gain on frames quieter than its level (and pass louder
  ones): a model whose output shows where its level stands."""
  for block in model.blocks:  # each block passes its input on
    block.conv.kernel.assign(tf.zeros_like(block.conv.kernel))
    block.conv.bias.assign(tf.zeros_like(block.conv.bias))
  bins, hidden = model.project_in.kernel.shape[1:]
  model.project_in.kernel.assign(tf.fill(model.project_in.kernel.shape, -10.0 / bins))
  model.project_in.bias.assign(tf.zeros([hidden]))  # channels: how far below the level
  model.project_out.kernel.assign(tf.fill(model.project_out.kernel.shape, -4.0 / hidden))
  model.project_out.bias.assign(tf.fill([bins], 4.0))
  return model


def documented_driver():
  """The `enhance(run, signal)` docs/realtime.md shows for driving a TFLite file."""
  with open(os.path.join(helpers.REPO, "docs", "realtime.md")) as f:
    blocks = re.findall(r"```python\n(.*?)```", f.read(), flags=re.S)
  namespace = {}
  exec(next(b for b in blocks if "def enhance(run, signal)" in b), namespace)  # pylint: disable=exec-used
  return namespace["enhance"]


class TfliteTest(tf.test.TestCase, parameterized.TestCase):

  def test_the_file_driven_as_the_docs_say_gives_the_streams_output(self):
    model = mask.MaskDenoiser(sample_rate=16000, hidden=8, depth=2, causal=True, seed=2)
    path = os.path.join(self.create_tempdir().full_path, "m.tflite")
    with open(path, "wb") as f:
      f.write(tflite.convert(model))
    signal = (0.1 * np.random.default_rng(4).standard_normal(3037)).astype(np.float32)
    runner = tflite_runtime.interpreter(path).get_signature_runner()
    documented = documented_driver()(runner, signal)
    stream = streamer_lib.Streamer.from_tflite(path)
    self.assertAllClose(documented, np.concatenate([stream.feed(signal), stream.flush()]),
                        atol=1e-7, rtol=0)
    offline = model.keeping(tf.constant(signal[None]), kept_input.KEEP,
                            kept_input.PRESENCE_KEEP)[0]
    self.assertAllClose(documented, offline, atol=1e-5, rtol=0)

  @parameterized.parameters(("mask", 16000), ("mask", 48000), ("mask", 48000, 2048),
                            ("unet", 16000), ("unet", 48000))
  def test_builtin_ops_only_and_the_stream_equals_the_model(self, architecture, rate,
                                                            fft_length=0):
    if architecture == "mask":  # 2048 at 48 kHz: the 1536-sample window zero-padded, RFFT2D
      card = description()
      card["model"]["fft_length"] = fft_length
      model = card_lib.ModelCard.from_json(dict(card, sample_rate=rate)).build()
    else:  # its windows slide within the clip
      model = unet.UNet(sample_rate=rate, hidden=8, depth=3, attention_heads=2, causal=True,
                        level_seconds=0.05, attention_seconds=0.1, seed=4)
    path = os.path.join(self.create_tempdir().full_path, "step.tflite")
    with open(path, "wb") as f:
      f.write(tflite.convert(model))
    self.assertEqual(builtin_only(path), [])
    streamer = streamer_lib.Streamer.from_tflite(path)
    step = streamer_lib.step_for(model)
    self.assertEqual((streamer.hop, streamer.latency), (step.hop, step.latency))
    t = np.arange(rate // 2) / rate
    signal = (0.3 * np.sin(2 * np.pi * 200 * t) + 0.05 * np.random.default_rng(rate)
              .standard_normal(len(t))).astype(np.float32)
    out = np.concatenate([streamer.feed(signal[:777]), streamer.feed(signal[777:]),
                          streamer.flush()])
    offline = model.keeping(tf.constant(signal[None]), kept_input.KEEP,
                            kept_input.PRESENCE_KEEP)[0]
    self.assertAllClose(out, offline, atol=1e-4, rtol=0)

  def test_litert_and_tf_lite_stream_a_file_alike(self):
    if tflite_runtime.name() != tflite_runtime.LITERT:
      self.skipTest("ai-edge-litert is not installed here (pip install -e '.[litert]'), so "
                    "tf.lite's interpreter runs every file in this suite")
    model = card_lib.ModelCard.from_json(description()).build()
    path = os.path.join(self.create_tempdir().full_path, "step.tflite")
    with open(path, "wb") as f:
      f.write(tflite.convert(model))
    signal = np.random.default_rng(5).uniform(-0.5, 0.5, 8000).astype(np.float32)
    outputs = []
    for runtime in (tflite_runtime.LITERT, tflite_runtime.TF_LITE):
      with mock.patch.object(tflite_runtime, "name", lambda runtime=runtime: runtime):
        streamer = streamer_lib.Streamer.from_tflite(path)
        outputs.append(np.concatenate([streamer.feed(signal), streamer.flush()]))
    self.assertAllClose(*outputs, atol=1e-6, rtol=0)
    self.assertGreater(np.abs(outputs[0]).max(), 0.01)

  @parameterized.parameters("mask", "unet")
  def test_dynamic_range_int8_keeps_40_db_and_needs_a_power_of_two_fft(self, architecture):
    model = {"mask": mask.MaskDenoiser, "unet": unet.UNet}[architecture](  # default shapes:
        sample_rate=16000, causal=True, seed=2)  # weights big enough to be quantised
    directory = self.create_tempdir().full_path
    outputs, sizes = [], []
    rng = np.random.default_rng(3)
    noisy = (0.5 * speech.utterance(rng, 32000, 16000)
             + 0.05 * rng.standard_normal(32000)).astype(np.float32)
    for quantize in tflite.QUANTIZE:
      path = os.path.join(directory, f"{quantize}.tflite")
      with open(path, "wb") as f:
        f.write(tflite.convert(model, quantize=quantize))
      self.assertEqual(builtin_only(path), [])
      streamer = streamer_lib.Streamer.from_tflite(path)
      outputs.append(np.concatenate([streamer.feed(noisy), streamer.flush()]))
      sizes.append(os.path.getsize(path))
    float_out, int8_out = outputs
    snr = 10 * np.log10(np.sum(float_out ** 2) / np.sum((float_out - int8_out) ** 2))
    self.assertGreaterEqual(snr, 40.0)
    self.assertLess(snr, 100.0)  # it was quantised
    self.assertLess(sizes[1], sizes[0] / 2)
    with self.assertRaisesRegex(ValueError, "needs a power-of-two FFT length, and this "
                                "48000 Hz model's is not"):
      tflite.convert(mask.MaskDenoiser(sample_rate=48000, hidden=8, depth=1, causal=True),
                     quantize="dynamic")

  @pytest.mark.slow
  @parameterized.parameters("mask", "unet")
  def test_a_ten_minute_stream_keeps_its_state_and_level_and_ends_as_a_file_would(
      self, architecture):
    if architecture == "mask":
      model = level_gate(card_lib.ModelCard.from_json(description()).build())
    else:  # its level and attention: the latest second
      model = unet.UNet(sample_rate=16000, hidden=8, depth=3, attention_heads=2, causal=True,
                        seed=4)
    path = os.path.join(self.create_tempdir().full_path, "step.tflite")
    with open(path, "wb") as f:
      f.write(tflite.convert(model))
    streamer = streamer_lib.Streamer.from_tflite(path, num_threads=1)
    size = np.shape(streamer._state)  # pylint: disable=protected-access
    rng, rate = np.random.default_rng(0), 16000
    minute = speech.utterance(rng, 60 * rate, rate)
    loudness = np.repeat(0.1 * (1 + np.arange(600) % 7), rate)  # changes every second
    clean = (np.tile(minute, 10) * loudness).astype(np.float32)
    noisy = clean + (0.03 * loudness * rng.standard_normal(len(clean))).astype(np.float32)
    out = []
    for second in range(600):
      out.append(streamer.feed(noisy[second * rate:(second + 1) * rate]))
      self.assertTrue(np.isfinite(out[-1]).all())
      self.assertEqual(np.shape(streamer._state), size)  # pylint: disable=protected-access
    streamed = np.concatenate(out + [streamer.flush()])
    self.assertLen(streamed, len(noisy))
    as_file = file_denoising.enhance(  # trainer.denoise at the model's rate: 10 s chunks
        lambda batch: model.keeping(batch, kept_input.KEEP, kept_input.PRESENCE_KEEP), noisy,
        chunk=10 * rate, overlap=rate // 2)
    last = slice(-60 * rate, None)
    scores = [float(metrics.si_sdr(clean[None, last], x[None, last])[0])
              for x in (streamed, as_file, noisy)]
    self.assertLess(abs(scores[0] - scores[1]), 0.2, scores)
    self.assertGreater(abs(scores[0] - scores[2]), 0.2, scores)  # the model did something

  def test_a_run_exports_once_apart_from_it_and_only_a_causal_mask_model(self):
    model_dir, out_dir = self.create_tempdir().full_path, self.create_tempdir().full_path
    model = run_dir(model_dir)
    output = os.path.join(out_dir, "causal.tflite")
    self.assertEqual(tflite.export(model_dir, output), output)
    self.assertEqual(streamer_lib.Streamer.from_tflite(output).hop, model.hop)
    with self.assertRaisesRegex(FileExistsError, "exists; pass overwrite"):
      tflite.export(model_dir, output)
    with self.assertRaisesRegex(ValueError, "must end in .tflite"):
      tflite.export(model_dir, os.path.join(out_dir, "causal"))
    with self.assertRaisesRegex(ValueError, "lies inside the model_dir"):
      tflite.export(model_dir, os.path.join(model_dir, "x.tflite"))
    plain = self.create_tempdir().full_path
    run_dir(plain, causal=False)
    with self.assertRaisesRegex(ValueError, "Only a causal model streams"):
      tflite.export(plain, os.path.join(out_dir, "plain.tflite"))
    self.assertEqual(sorted(os.listdir(out_dir)), ["causal.tflite"])


if __name__ == "__main__":
  tf.test.main()
