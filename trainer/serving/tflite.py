"""TFLite: a causal model's streaming step as a .tflite file of builtin ops only - one hop and the state vector in, a hop, the state and the stream's (hop, lead, latency) out."""

from absl import logging
import tensorflow as tf

from common import checks
from common import files
from ops import kept_input
from trainer import run_dir
from trainer.models import contract
from trainer.serving import streamer


QUANTIZE = ("none", "dynamic")


def quantizations(model: contract.Denoiser) -> tuple:
  """The `quantize` options for `model`: not int8 where its STFT would be a matrix product,
  which dynamic-range quantisation would quantise with the weights."""
  return ("none",) if model.tflite_transform == "matmul" else QUANTIZE


def convert(model: contract.Denoiser, *, keep_input: float = kept_input.KEEP,
            keep_presence: float = kept_input.PRESENCE_KEEP, quantize: str = "none") -> bytes:
  """The .tflite bytes of a causal model's stream step (`streamer.step_for`), keeping those
  shares of the input. A model's STFT is the transform it names for TFLite
  (`tflite_transform`: TFLite's RFFT2D where the FFT length is a power of two, matrix
  products elsewhere). `quantize`: none (float32), or dynamic (the network's weights as
  int8, activations quantised on the fly; the RFFT stays float).

  Raises:
    ValueError: the model cannot stream (it looks ahead), or `quantize=dynamic`
      for a model whose transform is a matrix product.
  """
  checks.one_of("quantize", quantize, QUANTIZE)
  if quantize not in quantizations(model):
    raise ValueError(
        f"--quantize=dynamic needs a power-of-two FFT length, and this {model.sample_rate} Hz "
        "model's is not: its STFT is a matrix product here, which would be quantised with "
        "the weights and cost the output its precision. Export it unquantised, or train at "
        "a rate where its FFT length is a power of two (the mask model's at 8 or 16 kHz).")
  function = streamer.step_for(model, keep_input=keep_input, keep_presence=keep_presence,
                               transform=model.tflite_transform).signature()
  converter = tf.lite.TFLiteConverter.from_concrete_functions(
      [function.get_concrete_function()], model)
  converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
  if quantize == "dynamic":
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
  return converter.convert()


def export(model_dir: str, output: str, *, overwrite: bool = False, weights: str = "auto",
           checkpoint: str = "latest", keep_input: float = kept_input.KEEP,
           keep_presence: float = kept_input.PRESENCE_KEEP, quantize: str = "none") -> str:
  """Writes the stream step of the run in `model_dir` to the .tflite file `output` (under a
  temporary name, renamed when complete); returns `output`. `weights` and `checkpoint`:
  see `run_dir.restore_model`; `keep_input`, `keep_presence`: the shares of the input
  kept; `quantize`: see `convert`.

  Raises:
    ValueError: `output` is not a new .tflite file apart from the model_dir, or the model
      cannot stream.
    FileExistsError: `output` exists and `overwrite` is not set.
  """
  if not output.endswith(".tflite"):
    raise ValueError(f"output {output} must end in .tflite: the stream step is one file.")
  if files.inside(output, model_dir):
    raise ValueError(f"output {output} lies inside the model_dir {model_dir}: an export is "
                     "written apart from the run it comes from (e.g. exported/<name>.tflite).")
  if tf.io.gfile.exists(output) and not overwrite:
    raise FileExistsError(f"output {output} exists; pass overwrite (--overwrite) to replace "
                          "it.")
  kept_input.check(keep_input, keep_presence)
  model, _, used, restored = run_dir.restore_model(model_dir, weights, checkpoint)
  logging.info("Converting the %s weights of %s (%s) to TFLite.", used, model_dir, restored)
  return files.write_bytes(output, convert(model, keep_input=keep_input,
                                           keep_presence=keep_presence, quantize=quantize),
                           replace=overwrite)
