"""Tests for trainer.serving.tflite: a causal mask model's stream step as builtin-only TFLite, equal to the model at 16 and 48 kHz, exported from a run without losing anything."""

import json
import os

from absl.testing import parameterized
import numpy as np
import pytest
import tensorflow as tf

from trainer.models import card as card_lib
from trainer.serving import stream
from trainer.serving import tflite


def description(causal=True):
  return dict(architecture="mask", model=dict(hidden=8, depth=3, kernel_size=3,
                                              causal=causal), sample_rate=16000, seed=4)


def run_dir(directory, causal=True):
  """A model_dir holding a (causal) mask model's card and a checkpoint."""
  with open(os.path.join(directory, card_lib.CONFIG_FILE), "w") as f:
    json.dump(description(causal), f)
  model = card_lib.ModelCard.from_json(description(causal)).build()
  tf.train.Checkpoint(model=model).save(os.path.join(directory, "checkpoints", "ckpt"))
  return model


class TfliteTest(tf.test.TestCase, parameterized.TestCase):

  @parameterized.parameters(16000, 48000)
  def test_builtin_ops_only_and_the_stream_equals_the_model(self, rate):
    model = card_lib.ModelCard.from_json(dict(description(), sample_rate=rate)).build()
    path = os.path.join(self.create_tempdir().full_path, "step.tflite")
    with open(path, "wb") as f:
      f.write(tflite.convert(model))
    ops = {op["op_name"] for op in tf.lite.Interpreter(model_path=path)._get_ops_details()}  # pylint: disable=protected-access
    self.assertFalse([op for op in ops if op.startswith("Flex") or op == "CUSTOM"], ops)
    streamer = stream.Streamer.from_tflite(path)
    self.assertEqual((streamer.hop, streamer.latency), (model.hop, model.window - 1))
    t = np.arange(rate // 2) / rate
    signal = (0.3 * np.sin(2 * np.pi * 200 * t) + 0.05 * np.random.default_rng(rate)
              .standard_normal(len(t))).astype(np.float32)
    out = np.concatenate([streamer.feed(signal[:777]), streamer.feed(signal[777:]),
                          streamer.flush()])
    self.assertAllClose(out, model(tf.constant(signal[None]))[0], atol=1e-4, rtol=0)

  @pytest.mark.slow
  def test_a_ten_minute_stream_keeps_its_state_size_and_stays_finite(self):
    model = card_lib.ModelCard.from_json(description()).build()
    path = os.path.join(self.create_tempdir().full_path, "step.tflite")
    with open(path, "wb") as f:
      f.write(tflite.convert(model))
    streamer = stream.Streamer.from_tflite(path, num_threads=1)
    size = np.shape(streamer._state)  # pylint: disable=protected-access
    rng, returned = np.random.default_rng(0), 0
    for second in range(600):
      block = (0.1 * (1 + second % 7) * rng.standard_normal(16000)).astype(np.float32)
      out = streamer.feed(block)
      returned += len(out)
      self.assertTrue(np.isfinite(out).all())
      self.assertEqual(np.shape(streamer._state), size)  # pylint: disable=protected-access
    self.assertEqual(returned + len(streamer.flush()), 600 * 16000)

  def test_a_run_exports_once_apart_from_it_and_only_a_causal_mask_model(self):
    model_dir, out_dir = self.create_tempdir().full_path, self.create_tempdir().full_path
    model = run_dir(model_dir)
    output = os.path.join(out_dir, "causal.tflite")
    self.assertEqual(tflite.export(model_dir, output), output)
    self.assertEqual(stream.Streamer.from_tflite(output).hop, model.hop)
    with self.assertRaisesRegex(FileExistsError, "exists; pass overwrite"):
      tflite.export(model_dir, output)
    with self.assertRaisesRegex(ValueError, "must end in .tflite"):
      tflite.export(model_dir, os.path.join(out_dir, "causal"))
    with self.assertRaisesRegex(ValueError, "lies inside the model_dir"):
      tflite.export(model_dir, os.path.join(model_dir, "x.tflite"))
    plain = self.create_tempdir().full_path
    run_dir(plain, causal=False)
    with self.assertRaisesRegex(ValueError, "Only a causal mask model streams"):
      tflite.export(plain, os.path.join(out_dir, "plain.tflite"))
    self.assertEqual(sorted(os.listdir(out_dir)), ["causal.tflite"])


if __name__ == "__main__":
  tf.test.main()
