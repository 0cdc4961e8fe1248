"""Denoises an audio file of any length and sample rate with an exported SavedModel.

Run: python -m trainer.denoise --saved_model=exported/cpu --input=noisy.wav --output=enhanced.wav

The file is decoded and resampled to the model's rate with tensorflow-io,
enhanced in overlapping chunks (memory stays bounded whatever the length),
cross-faded back together, resampled to the file's rate and written as 16-bit
WAV of the same length.
"""

import os
import sys

from absl import app
from absl import flags
import numpy as np
import tensorflow as tf

from common import files
from input import audio
from trainer.models import card


def enhance(denoise_fn, signal: np.ndarray, *, chunk: int, overlap: int,
            batch_size: int = 4) -> np.ndarray:
  """Runs `denoise_fn([batch, chunk]) -> [batch, chunk]` over `signal` in cross-faded chunks.

  No chunk is padded with silence (digital silence is not what the model was
  trained on, and it skews the model's level normalisation): a signal shorter
  than `chunk` is one chunk of its own length, and the last chunk of a longer
  one ends at the signal's end, overlapping its neighbour by more.
  """
  if not 0 <= overlap < chunk:
    raise ValueError(f"Need 0 <= overlap ({overlap}) < chunk ({chunk}) samples.")
  if len(signal) <= chunk:
    return np.asarray(denoise_fn(tf.constant(signal[None], tf.float32)))[0]
  hop = chunk - overlap
  starts = list(range(0, len(signal) - chunk, hop)) + [len(signal) - chunk]
  ramp = np.minimum(1.0, np.minimum(np.arange(1, chunk + 1), np.arange(chunk, 0, -1))
                    / (overlap + 1))
  out, weight = np.zeros(len(signal)), np.zeros(len(signal))
  for first in range(0, len(starts), batch_size):
    group = starts[first:first + batch_size]
    pieces = np.stack([signal[start:start + chunk] for start in group]).astype(np.float32)
    enhanced = np.asarray(denoise_fn(tf.constant(pieces)))
    for row, start in enumerate(group):
      out[start:start + chunk] += enhanced[row] * ramp
      weight[start:start + chunk] += ramp
  return (out / weight).astype(np.float32)


def denoise_signal(module, signal: np.ndarray, rate: int, *, chunk_seconds: float = 10.0,
                   overlap_seconds: float = 0.5) -> np.ndarray:
  """`signal` (mono float32 at `rate`) enhanced by a loaded SavedModel; same rate and length."""
  model_rate = int(module.sample_rate.numpy())
  at_model_rate = audio.resample(signal, rate, model_rate, name="input")
  enhanced = enhance(module.denoise, at_model_rate, chunk=int(chunk_seconds * model_rate),
                     overlap=int(overlap_seconds * model_rate))
  enhanced = audio.resample(enhanced, model_rate, rate, name="output")
  return np.pad(enhanced, (0, max(0, len(signal) - len(enhanced))))[:len(signal)]


def load(saved_model: str):
  """The exported module; a clear error for a directory that is not a trainer.export output."""
  if not tf.io.gfile.exists(os.path.join(saved_model, "saved_model.pb")):
    if tf.io.gfile.exists(os.path.join(saved_model, card.CONFIG_FILE)):
      raise ValueError(f"{saved_model} is a trainer.main model_dir, not an export: run "
                       f"python -m trainer.export --model_dir={saved_model} "
                       "--output=exported/<name> and pass that directory.")
    raise ValueError(f"{saved_model} holds no SavedModel (saved_model.pb): pass a directory "
                     "written by python -m trainer.export.")
  return tf.saved_model.load(saved_model)


def _same_file(a: str, b: str) -> bool:
  try:
    return os.path.samefile(a, b)
  except OSError:  # not both local files: compare the names
    return os.path.normpath(a) == os.path.normpath(b)


def check_output(input_path: str, output_path: str, *, overwrite: bool):
  """Raises unless writing `output_path` loses nothing: it is not a directory, not the input
  file, and new (or `overwrite`)."""
  if tf.io.gfile.isdir(output_path):
    raise ValueError(f"output {output_path} is a directory: name the .wav file to write.")
  if not tf.io.gfile.exists(output_path):
    return
  if _same_file(output_path, input_path):
    raise ValueError(f"output {output_path} is the input file, which would be replaced: "
                     "write the enhanced audio to another file.")
  if not overwrite:
    raise FileExistsError(f"output {output_path} exists; pass overwrite (--overwrite) to "
                          "replace it.")


def denoise_file(saved_model: str, input_path: str, output_path: str, *,
                 chunk_seconds: float = 10.0, overlap_seconds: float = 0.5,
                 overwrite: bool = False) -> int:
  """Writes the enhanced `input_path` to `output_path`; returns its number of samples.

  The WAV is written under a temporary name beside `output_path` and renamed
  when complete; an existing output is replaced only with `overwrite`, the
  input never.
  """
  check_output(input_path, output_path, overwrite=overwrite)
  module = load(saved_model)
  signal, rate = audio.load(input_path)
  enhanced = denoise_signal(module, signal, rate, chunk_seconds=chunk_seconds,
                            overlap_seconds=overlap_seconds)
  wav = tf.audio.encode_wav(np.clip(enhanced, -1.0, 32767 / 32768)[:, None], rate)
  files.write_bytes(output_path, wav.numpy())
  return len(enhanced)


FLAGS = flags.FLAGS


def main(argv):
  del argv
  try:
    samples = denoise_file(FLAGS.saved_model, FLAGS.input, FLAGS.output,
                           chunk_seconds=FLAGS.chunk_seconds,
                           overlap_seconds=FLAGS.overlap_seconds,
                           overwrite=FLAGS.overwrite)
  except (ValueError, OSError) as e:
    sys.exit(f"trainer.denoise: {e}")
  print(f"Wrote {FLAGS.output} ({samples} samples)")


if __name__ == "__main__":
  flags.DEFINE_string("saved_model", None, "A directory written by trainer.export.")
  flags.DEFINE_string("input", None, "Noisy audio file (WAV or FLAC, any rate).")
  flags.DEFINE_string("output", None, "Enhanced 16-bit WAV to write (not the input).")
  flags.DEFINE_bool("overwrite", False, "Replace --output if it exists.")
  flags.DEFINE_float("chunk_seconds", 10.0, "Audio enhanced per model call.")
  flags.DEFINE_float("overlap_seconds", 0.5, "Cross-faded overlap between chunks.")
  flags.mark_flags_as_required(["saved_model", "input", "output"])
  app.run(main)
