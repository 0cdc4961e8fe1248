"""Exports a trained denoiser as a SavedModel with a `denoise(waveform[batch, time]) -> waveform` signature.

Run: python -m trainer.export --model_dir=runs/cpu --output=exported/cpu
"""

import json
import os
import shutil
import sys

from absl import app
from absl import flags
import tensorflow as tf

from trainer import denoiser
from trainer import mask_denoiser

CONFIG_FILE = "config.json"


class ExportedDenoiser(tf.Module):
  """What the SavedModel holds: the model, its sample rate and the `denoise` function."""

  def __init__(self, model, sample_rate: int):
    super().__init__()
    self.model = model
    self.sample_rate = tf.Variable(sample_rate, dtype=tf.int32, trainable=False)

  @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32, name="waveform")])
  def denoise(self, waveform):
    """Enhanced float32 audio at `sample_rate`, same shape as the input."""
    return self.model(waveform)


def build_model(description: dict) -> tf.Module:
  """The model described by a model_dir's config.json (written before "architecture"
  existed, it describes a U-Net)."""
  if description.get("architecture", "unet") == "mask":
    return mask_denoiser.MaskDenoiser(**description["model"], seed=description["seed"],
                                      sample_rate=description["sample_rate"])
  return denoiser.Denoiser(**description["model"], seed=description["seed"])


def read_description(model_dir: str) -> dict:
  path = os.path.join(model_dir, CONFIG_FILE)
  if not os.path.exists(path):
    raise FileNotFoundError(f"{path} is missing: is {model_dir} a trainer.main model_dir?")
  with open(path) as f:
    return json.load(f)


def restore_model(model_dir: str):
  """`(model, sample_rate)` with the latest checkpoint's weights."""
  description = read_description(model_dir)
  model = build_model(description)
  latest = tf.train.latest_checkpoint(os.path.join(model_dir, "checkpoints"))
  if latest is None:
    raise FileNotFoundError(f"No checkpoint in {model_dir}/checkpoints: train first.")
  tf.train.Checkpoint(model=model).restore(latest).expect_partial()
  return model, description["sample_rate"]


def export(model_dir: str, output: str) -> str:
  """Writes the SavedModel to `output` (via a temporary directory); returns `output`."""
  model, sample_rate = restore_model(model_dir)
  module = ExportedDenoiser(model, sample_rate)
  tmp = output.rstrip("/") + ".tmp"
  shutil.rmtree(tmp, ignore_errors=True)
  tf.saved_model.save(module, tmp, signatures={"denoise": module.denoise})
  shutil.rmtree(output, ignore_errors=True)
  os.replace(tmp, output)
  return output


FLAGS = flags.FLAGS


def main(argv):
  del argv
  try:
    path = export(FLAGS.model_dir, FLAGS.output)
  except (FileNotFoundError, ValueError) as e:
    sys.exit(f"trainer.export: {e}")
  print(f"Exported to {path}")


if __name__ == "__main__":
  flags.DEFINE_string("model_dir", None, "A trainer.main model_dir.")
  flags.DEFINE_string("output", None, "SavedModel directory to write.")
  flags.mark_flags_as_required(["model_dir", "output"])
  app.run(main)
