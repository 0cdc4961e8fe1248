"""Export: a run's checkpoint as a SavedModel with a `denoise(waveform[batch, time]) -> waveform` signature (the command: trainer.export)."""

import os
import re
import uuid

from absl import logging
import tensorflow as tf

from common import checks
from common import files
from trainer import optim
from trainer import run_dir
from trainer.models import card as card_lib
from trainer.models import contract
from trainer.serving import kept_input
from trainer.serving import stream


WAVEFORM = tf.TensorSpec([None, None], tf.float32, name="waveform")


class ExportedDenoiser(tf.Module):
  """What the SavedModel holds: the model, its sample rate, the share of the input it keeps
  (`keep_input`, `keep_presence`: trainer.serving.kept_input) and two functions:
  `denoise(waveform)` keeps those shares, `denoise_keeping(waveform, keep_input,
  keep_presence)` the shares given. A causal model's also holds `stream_step`
  (trainer.serving.stream, with the stored shares; its `info` output: hop, lead,
  latency) and `state_size`."""

  def __init__(self, model, sample_rate: int, *, keep_input: float = kept_input.KEEP,
               keep_presence: float = kept_input.PRESENCE_KEEP):
    super().__init__()
    kept_input.check(keep_input, keep_presence)
    self.model = model
    self.sample_rate = tf.Variable(sample_rate, dtype=tf.int32, trainable=False)
    self.keep_input = tf.Variable(keep_input, dtype=tf.float32, trainable=False)
    self.keep_presence = tf.Variable(keep_presence, dtype=tf.float32, trainable=False)
    self._rate = sample_rate
    self.streams = getattr(model, "causal", False)
    if self.streams:
      try:
        step = stream.step_for(model, keep_input=self.keep_input,
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
    return kept_input.enhance(self.model, waveform, self._rate, keep_input, keep_presence)

  def signatures(self) -> dict:
    functions = {"denoise": self.denoise, "denoise_keeping": self.denoise_keeping}
    return dict(functions, stream_step=self.stream_step) if self.streams else functions


WEIGHTS = ("auto", "ema", "raw")


def restore_model(model_dir: str, weights: str = "auto", checkpoint: str = "latest"):
  """`(model, sample_rate, weights used)` from a checkpoint of the run in `model_dir`.

  `weights`: ema (the moving average; an error if the run kept none), raw (the
  trained weights), or auto (the average if there is one). `checkpoint`: latest
  (the newest intact one), best (model_dir/best/, kept by --keep_best), or the
  path of a checkpoint (e.g. runs/x/checkpoints/ckpt-2000). Every variable of
  the model must be in the checkpoint.
  """
  checks.one_of("weights", weights, WEIGHTS)
  card = card_lib.ModelCard.read(model_dir)
  model = card.build()
  restored = _restore(model, model_dir, checkpoint)
  has_average = any(name.startswith("ema/") for name, _ in tf.train.list_variables(restored))
  if weights == "ema" and not has_average:
    raise ValueError(f"--weights=ema, but {restored} holds no weight average: train with "
                     "--ema_decay, or export --weights=raw.")
  if has_average and weights != "raw":
    variables = contract.tf_variables(model)
    ema = optim.ExponentialMovingAverage(0.5)
    ema.build(variables)
    run_dir.restore(tf.train.Checkpoint(ema=ema), restored, partial=True)
    ema.copy_to(variables)
    return model, card.sample_rate, "ema"
  return model, card.sample_rate, "raw"


def _restore(model: tf.Module, model_dir: str, checkpoint: str) -> str:
  """Restores `checkpoint` (latest | best | a path) of `model_dir` into `model`; its path."""
  state = tf.train.Checkpoint(model=model)
  if checkpoint not in ("latest", "best"):
    path = checkpoint_prefix(checkpoint)
    missing = missing_variables(model, path)
    if missing:
      total = len(model.trainable_variables)
      raise run_dir.CheckpointError(
          f"--checkpoint={checkpoint} lacks {len(missing)} of the model's {total} variables "
          f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}): it is not a "
          f"checkpoint of the model in {model_dir}. Pass one of that run's checkpoints.")
    try:
      run_dir.restore(state, path, partial=True)
    except run_dir.UNREADABLE as e:
      raise run_dir.CheckpointError(f"--checkpoint={checkpoint} cannot be restored "
                                        f"({files.reason(e)}).") from None
    return path
  directory = os.path.join(model_dir, run_dir.BEST_DIR if checkpoint == "best"
                           else run_dir.CHECKPOINT_DIR)
  restored = run_dir.restore_newest_intact(state, directory, partial=True)
  if restored is None:
    hint = "train with --keep_best=METRIC" if checkpoint == "best" else "train first"
    raise FileNotFoundError(f"No checkpoint in {directory}: {hint}.")
  return restored


def missing_variables(model: tf.Module, path: str) -> list:
  """The variables of `model` (a tf.Module, saved as `model=`) that the checkpoint at `path`
  does not hold, by their paths in the model."""
  held = {name for name, _ in tf.train.list_variables(path)}
  paths = ["/".join(map(str, where)) for where, _ in model._flatten(  # pylint: disable=protected-access
      predicate=lambda v: isinstance(v, tf.Variable), with_path=True)]
  return [p for p in paths if f"model/{p}/.ATTRIBUTES/VARIABLE_VALUE" not in held]


def checkpoint_prefix(path: str) -> str:
  """The checkpoint prefix `path` names: itself, or without the `.index` / `.data-*` file
  ending a user may pass (said in the log).

  Raises:
    CheckpointError: there is no checkpoint at that prefix.
  """
  prefix = re.sub(r"\.(index|data-\d+-of-\d+)$", "", path)
  if prefix != path:
    logging.info("--checkpoint=%s is a file of checkpoint %s: exporting that checkpoint.",
                 path, prefix)
  if not tf.io.gfile.exists(prefix + ".index"):
    raise run_dir.CheckpointError(
        f"--checkpoint={path} is not a checkpoint (there is no {prefix}.index): pass latest, "
        "best, or a checkpoint prefix such as runs/x/checkpoints/ckpt-2000.")
  return prefix


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
  `checkpoint`: see `restore_model`; `keep_input`, `keep_presence`: the shares
  of the input its `denoise` and `stream_step` keep.
  """
  kept_input.check(keep_input, keep_presence)
  check_output(model_dir, output, overwrite=overwrite)
  model, sample_rate, used = restore_model(model_dir, weights, checkpoint)
  logging.info("Exporting the %s weights of %s.", used, model_dir)
  module = ExportedDenoiser(model, sample_rate, keep_input=keep_input,
                            keep_presence=keep_presence)
  output = output.rstrip("/")
  parent = os.path.dirname(output) or "."
  tf.io.gfile.makedirs(parent)
  tmp = os.path.join(parent, f".{os.path.basename(output)}.{uuid.uuid4().hex[:8]}.tmp")
  previous = tmp + ".previous"
  try:
    tf.saved_model.save(module, tmp, signatures=module.signatures())
    _replace(tmp, output, previous)
  except (tf.errors.OpError, OSError) as e:
    raise OSError(f"Could not write the export to {output} ({files.reason(e)}): free space "
                  "or make it writable.") from e
  finally:
    if tf.io.gfile.exists(tmp):
      tf.io.gfile.rmtree(tmp)
  return output


def _replace(new: str, output: str, previous: str):
  """Puts directory `new` at `output`. An earlier export there is moved to `previous` first
  and removed only once `new` is in place; if that fails, it is moved back."""
  if not tf.io.gfile.isdir(output):
    tf.io.gfile.rename(new, output)
    return
  tf.io.gfile.rename(output, previous)
  try:
    tf.io.gfile.rename(new, output)
  except (tf.errors.OpError, OSError):
    tf.io.gfile.rename(previous, output)
    raise
  tf.io.gfile.rmtree(previous)
