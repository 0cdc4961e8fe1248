"""What a user does first, through the command-line tools, on whichever TensorFlow this environment has: a tiny causal run, its SavedModel and TFLite exports, a 24-bit FLAC at 44.1 kHz prepared and denoised, and a WAV piped through the stream and through the packaged streaming model."""

import os
import subprocess
import sys

import numpy as np
import pytest
from scipy.io import wavfile
import soundfile
import tensorflow as tf

from input import decoders
from input import records
from tests import helpers


@pytest.mark.end_to_end
@pytest.mark.slow
class FirstUseTest(tf.test.TestCase):

  def run_tool(self, module, *args, **kwargs):
    result = helpers.run_module(module, *args, **kwargs)
    self.assertEqual(result.returncode, 0, f"{module}: {result.stderr[-3000:]}")
    return result

  def test_train_export_prepare_denoise_and_stream(self):
    root = self.create_tempdir().full_path
    run, saved, tflite = (os.path.join(root, name) for name in
                          ("run", "exported", "step.tflite"))
    self.run_tool("trainer.main", *helpers.TINY, "--causal", "--train_steps=10",
                  f"--synthetic_dir={root}/synthetic", f"--model_dir={run}")
    self.run_tool("trainer.export", f"--model_dir={run}", f"--output={saved}")
    self.run_tool("trainer.export", f"--model_dir={run}", "--format=tflite",
                  f"--output={tflite}")
    self.assertGreater(os.path.getsize(tflite), 1000)

    rate = 44100
    signal = 0.5 * helpers.sine(1.5, rate) + 0.05 * np.random.default_rng(0).standard_normal(
        int(1.5 * rate))
    for kind in ("noisy", "clean"):
      helpers.write_audio(os.path.join(root, kind, "a.flac"), signal, rate, "flac24")
    self.assertEqual(soundfile.info(os.path.join(root, "noisy", "a.flac")).subtype, "PCM_24")
    prepared = self.run_tool("input.prepare", f"--noisy_dir={root}/noisy",
                             f"--clean_dir={root}/clean", f"--output_dir={root}/data",
                             "--sample_rate=8000", "--segment_seconds=0.5", "--num_shards=1")
    # which decoder (tensorflow-io on TF 2.17, soundfile where its ops cannot load), once
    self.assertIn(f"Decoding audio with {decoders.chosen()}", prepared.stderr)
    self.assertEqual(prepared.stderr.count("Decoding audio with"), 1)
    self.assertEqual(records.read_manifest(f"{root}/data", "train").num_examples, 3)

    enhanced = os.path.join(root, "enhanced.wav")
    self.run_tool("trainer.denoise", f"--saved_model={saved}",
                  f"--input={root}/noisy/a.flac", f"--output={enhanced}")
    self.assertEqual(wavfile.read(enhanced)[0], rate)
    self.assertLen(wavfile.read(enhanced)[1], len(signal))

    with open(enhanced, "rb") as f:
      streamed = subprocess.run(
          [sys.executable, "-m", "trainer.stream", f"--saved_model={saved}"], stdin=f,
          capture_output=True, timeout=600, env=helpers.env(), cwd=helpers.REPO)
    self.assertEqual(streamed.returncode, 0, streamed.stderr[-3000:])
    out = os.path.join(root, "streamed.wav")
    with open(out, "wb") as f:
      f.write(streamed.stdout)
    self.assertEqual(soundfile.info(out).samplerate, rate)
    self.assertEqual(len(streamed.stdout) - 44, 2 * len(signal))  # header + 16-bit samples

    # no --saved_model: the streaming model that ships in the package
    packaged = os.path.join(root, "packaged.wav")
    self.run_tool("trainer.stream", f"--input={enhanced}", f"--output={packaged}")
    self.assertEqual(wavfile.read(packaged)[0], rate)
    self.assertLen(wavfile.read(packaged)[1], len(signal))
