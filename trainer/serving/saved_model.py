"""The SavedModel of a trained run: what it holds (`denoise(waveform[batch, time]) -> waveform` and, for a causal model, its stream step), writing it without losing anything, and loading it back (the command: trainer.export)."""

import os
import uuid

from absl import logging
import tensorflow as tf

from common import files
from ops import kept_input
from trainer import run_dir
from trainer.models import card
from trainer.models import contract
from trainer.serving import streamer


WAVEFORM = tf.TensorSpec([None, None], tf.float32, name="waveform")


class ExportedDenoiser(tf.Module):
  """What the SavedModel holds: the model, its sample rate, the share of the input it keeps
  (`keep_input`, `keep_presence`: ops.kept_input), where its weights came from (`source`:
  which weights of which checkpoint) and two functions:
  `denoise(waveform)` keeps those shares, `denoise_keeping(waveform, keep_input,
  keep_presence)` the shares given. A causal model's also holds `stream_step`
  (the model's own, with the stored shares; its `info` output: hop, lead,
  latency) and `state_size`."""

  def __init__(self, model: contract.Denoiser, sample_rate: int, *,
               keep_input: float = kept_input.KEEP,
               keep_presence: float = kept_input.PRESENCE_KEEP, source: str = ""):
    super().__init__()
    kept_input.check(keep_input, keep_presence)
    self.model = model
    self.sample_rate = tf.Variable(sample_rate, dtype=tf.int32, trainable=False)
    self.keep_input = tf.Variable(keep_input, dtype=tf.float32, trainable=False)
    self.keep_presence = tf.Variable(keep_presence, dtype=tf.float32, trainable=False)
    self.source = tf.Variable(source, dtype=tf.string, trainable=False)
    self._rate = sample_rate
    self.streams = model.causal
    if self.streams:
      try:
        step = streamer.step_for(model, keep_input=self.keep_input,
                                 keep_presence=self.keep_presence)
      except ValueError as e:  # e.g. a causal U-Net attending to everything so far
        logging.warning("The export will not stream: %s", e)
        self.streams = False
    if self.streams:
      self.state_size = tf.Variable(step.state_size, dtype=tf.int32, trainable=False)
      self.stream_step = step.signature()

  @tf.function(input_signature=[WAVEFORM])
  def denoise(self, waveform):
    """Enhanced float32 audio at `sample_rate`, same shape as the input, with the stored
    share of the input kept."""
    return self.denoise_keeping(waveform, self.keep_input, self.keep_presence)

  @tf.function(input_signature=[WAVEFORM, tf.TensorSpec([], tf.float32, name="keep_input"),
                                tf.TensorSpec([], tf.float32, name="keep_presence")])
  def denoise_keeping(self, waveform, keep_input, keep_presence):
    """As `denoise`, keeping `keep_presence` of the input in the presence band and
    `keep_input` elsewhere (each in [0, 1]; 0 and 0: the model's output alone)."""
    return self.model.keeping(waveform, keep_input, keep_presence)

  def signatures(self) -> dict:
    functions = {"denoise": self.denoise, "denoise_keeping": self.denoise_keeping}
    return dict(functions, stream_step=self.stream_step) if self.streams else functions


# What tf.saved_model.save writes: a directory holding only these is an earlier export.
SAVED_MODEL_ENTRIES = {"saved_model.pb", "variables", "assets", "fingerprint.pb"}


def check_output(model_dir: str, output: str, *, overwrite: bool):
  """Raises unless writing `output` can lose nothing: it is not, nor contains, nor lies inside
  the model_dir, and it is new, empty, or (with `overwrite`) an earlier export."""
  ancestor = os.path.dirname(os.path.abspath(output))
  while not tf.io.gfile.exists(ancestor) and os.path.dirname(ancestor) != ancestor:
    ancestor = os.path.dirname(ancestor)
  if not tf.io.gfile.isdir(ancestor):
    raise ValueError(f"output {output} lies under {ancestor}, which is a file: choose a "
                     "directory path for the export.")
  if files.inside(output, model_dir) or files.inside(model_dir, output):
    raise ValueError(f"output {output} overlaps the model_dir {model_dir}: an export is "
                     "written apart from the run it comes from (e.g. exported/<name>).")
  if not tf.io.gfile.exists(output) or (tf.io.gfile.isdir(output)
                                        and not tf.io.gfile.listdir(output)):
    return
  entries = ({e.rstrip("/") for e in tf.io.gfile.listdir(output)}
             if tf.io.gfile.isdir(output) else set())
  if "saved_model.pb" not in entries or not entries <= SAVED_MODEL_ENTRIES:
    raise FileExistsError(f"output {output} exists and is not an earlier export; nothing "
                          "was changed. Choose a new or empty directory.")
  if not overwrite:
    raise FileExistsError(f"output {output} holds an earlier export; pass overwrite "
                          "(--overwrite) to replace it.")


def export(model_dir: str, output: str, *, overwrite: bool = False,
           weights: str = "auto", checkpoint: str = "latest",
           keep_input: float = kept_input.KEEP,
           keep_presence: float = kept_input.PRESENCE_KEEP) -> str:
  """Writes the SavedModel to `output`; returns `output`.

  It is written under a temporary name beside `output` and renamed into place
  when complete; an earlier export is replaced only with `overwrite`, and
  nothing else (least of all the model_dir) is ever removed. `weights` and
  `checkpoint`: see `run_dir.restore_model`; `keep_input`, `keep_presence`: the shares
  of the input its `denoise` and `stream_step` keep.
  """
  kept_input.check(keep_input, keep_presence)
  check_output(model_dir, output, overwrite=overwrite)
  model, sample_rate, used, restored = run_dir.restore_model(model_dir, weights, checkpoint)
  logging.info("Exporting the %s weights of %s (%s).", used, model_dir, restored)
  module = ExportedDenoiser(model, sample_rate, keep_input=keep_input,
                            keep_presence=keep_presence, source=f"{used} weights of {restored}")
  output = output.rstrip("/")
  parent = os.path.dirname(output) or "."
  tf.io.gfile.makedirs(parent)
  tmp = os.path.join(parent, f".{os.path.basename(output)}.{uuid.uuid4().hex[:8]}.tmp")
  previous = tmp + ".previous"
  try:
    tf.saved_model.save(module, tmp, signatures=module.signatures())
    if overwrite and tf.io.gfile.isdir(output) and tf.io.gfile.listdir(output):
      _replace(tmp, output, previous)
    else:
      _create(tmp, output)
  except FileExistsError:
    raise
  except (tf.errors.OpError, OSError) as e:
    raise OSError(f"Could not write the export to {output} ({files.reason(e)}): free space "
                  "or make it writable.") from e
  finally:
    if tf.io.gfile.exists(tmp):
      tf.io.gfile.rmtree(tmp)
  return output


def _create(new: str, output: str):
  """Puts directory `new` at `output`, which must be new or an empty directory when it
  happens: one rename, which fails if anything (another export finishing first) is there.

  Raises:
    FileExistsError: `output` holds something by then; nothing was replaced.
  """
  try:
    if "://" in output:  # no atomic rename there: the file system's own check
      tf.io.gfile.rename(new, output, overwrite=False)
    else:
      os.rename(new, output)  # atomic, and refused onto a directory that is not empty
  except (tf.errors.AlreadyExistsError, OSError) as e:
    if isinstance(e, OSError) and not tf.io.gfile.exists(output):
      raise
    raise FileExistsError(f"output {output} was written by another export while this one "
                          "ran; it was not replaced. Export again to another path, or pass "
                          "overwrite (--overwrite) to replace it.") from None


def _replace(new: str, output: str, previous: str):
  """Puts directory `new` at `output` in place of an earlier export, which is moved to
  `previous` first and removed only once `new` is in place; if that fails, it is moved
  back."""
  tf.io.gfile.rename(output, previous)
  try:
    tf.io.gfile.rename(new, output)
  except (tf.errors.OpError, OSError):
    tf.io.gfile.rename(previous, output)
    raise
  tf.io.gfile.rmtree(previous)


def load_export(saved_model: str):
  """The exported module; a clear error naming `saved_model` for a directory that is not a
  trainer.export output, a damaged one, or one written before exports kept a share of the
  input."""
  if not tf.io.gfile.exists(os.path.join(saved_model, "saved_model.pb")):
    if saved_model.endswith(".tflite") and not tf.io.gfile.isdir(saved_model):
      raise ValueError(f"{saved_model} is a TFLite file: the commands take a SavedModel "
                       "(python -m trainer.export --output=DIR), which carries the sample "
                       "rate they resample to. Run the .tflite file with "
                       "trainer.serving.streamer.Streamer.from_tflite, or from C++ or Kotlin "
                       "as docs/realtime.md describes.")
    if tf.io.gfile.exists(os.path.join(saved_model, card.CONFIG_FILE)):
      raise ValueError(f"{saved_model} is a trainer.main model_dir, not an export: run "
                       f"python -m trainer.export --model_dir={saved_model} "
                       "--output=exported/<name> and pass that directory.")
    raise ValueError(f"{saved_model} holds no SavedModel (saved_model.pb): pass a directory "
                     "written by python -m trainer.export.")
  try:
    module = tf.saved_model.load(saved_model)
  except Exception as e:  # pylint: disable=broad-except  (protobuf, OpError, ValueError, ...)
    raise ValueError(f"{saved_model} is a damaged export: TensorFlow cannot load it "
                     f"({type(e).__name__}: {' '.join(str(e).split())[:200]}). Export the run "
                     "again (python -m trainer.export --overwrite).") from None
  if "denoise_keeping" not in module.signatures:
    raise ValueError(f"{saved_model} was exported before exports kept a share of the input "
                     "(it has no denoise_keeping): export the run again with python -m "
                     "trainer.export --overwrite.")
  return module
