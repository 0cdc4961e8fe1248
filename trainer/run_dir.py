"""A run's model_dir read back, by training and serving alike: where its checkpoints live, restoring one (the newest intact, the best, or a named one, every variable matched), and the trained model in it (raw or averaged weights) without the optimizer."""

import os
import re
from typing import Callable, Optional, Sequence

from absl import logging
import tensorflow as tf

from common import checks
from common import files
from trainer.models import card as card_lib
from trainer.models import contract

BEST_DIR = "best"  # the best checkpoint by an eval metric (trainer.loop.best keeps it)
CHECKPOINT_DIR = "checkpoints"


class CheckpointError(RuntimeError):
  """No checkpoint could be restored, or one could not be written."""


# What restoring a damaged or vanished checkpoint raises (a truncated data file raises
# IndexError, "Read less bytes than requested").
UNREADABLE = (tf.errors.OpError, ValueError, AssertionError, IndexError, OSError)


def restore_newest_intact(checkpoint: tf.train.Checkpoint, directory: str, *,
                          partial: bool = False,
                          warn: Callable[..., None] = logging.warning) -> Optional[str]:
  """Restores the newest checkpoint in `directory` that reads back whole.

  A newer one that is damaged (truncated or missing files, e.g. the machine
  died while saving) is passed over with a warning, so a crash costs only the
  steps since the checkpoint before it.

  Args:
    checkpoint: what to restore into.
    directory: a tf.train.CheckpointManager directory.
    partial: the checkpoint may hold more than `checkpoint` tracks (e.g. the
      optimizer, when only the model is restored).
    warn: where the warnings go.

  Returns:
    The restored checkpoint's path, or None if `directory` holds none.

  Raises:
    CheckpointError: there are checkpoints, and none can be restored.
  """
  state = tf.train.get_checkpoint_state(directory)
  candidates = list(reversed(state.all_model_checkpoint_paths)) if state else []
  failures = []
  for path in candidates:
    try:
      restore(checkpoint, path, partial=partial)
    except UNREADABLE as e:
      failures.append(f"{os.path.basename(path)}: {files.reason(e)}")
      warn("Checkpoint %s cannot be restored (%s); trying the one before it.", path, files.reason(e))
      continue
    if failures:
      warn("Restored %s, the newest intact checkpoint; training repeats the steps after it.",
           path)
    return path
  if failures:
    raise CheckpointError(f"No checkpoint in {directory} can be restored "
                          f"({'; '.join(failures)}). Move the damaged ones aside, or start "
                          "in a new model_dir.")
  return None


def restore(checkpoint: tf.train.Checkpoint, path: str, *, partial: bool = False):
  """Restores every variable `checkpoint` tracks from the checkpoint at `path`, which may
  hold more (e.g. the optimizer, when only the model is restored) if `partial`.

  Raises:
    CheckpointError: it holds a model of another shape or other variables (it is not
      damaged).
    One of UNREADABLE: it is damaged or gone.
  """
  try:
    status = checkpoint.restore(path)
    if partial:
      status.expect_partial()
    status.assert_existing_objects_matched()
  except UNREADABLE as e:
    if _is_other_model(e):  # an intact checkpoint of another shape: do not fall back
      why = ("some of this model's variables are not in it" if isinstance(e, AssertionError)
             else files.reason(e))
      raise CheckpointError(
          f"The checkpoints in {os.path.dirname(path)} hold a model whose variables do not "
          f"match this one ({os.path.basename(path)}: {why}); they are not "
          "damaged. Use the model flags it was trained with, or a new --model_dir.") from None
    raise


def _is_other_model(error: Exception) -> bool:
  """Whether a restore failed because the checkpoint holds variables of other shapes or
  another set of objects (rather than because its files are damaged)."""
  return isinstance(error, AssertionError) or (
      isinstance(error, ValueError) and "incompatible tensor with shape" in str(error))


def restore_run(checkpoint: tf.train.Checkpoint, model_dir: str) -> Optional[str]:
  """Restores the newest intact checkpoint of the run in `model_dir` (its `checkpoints/`);
  returns its path, or None if there is none."""
  return restore_newest_intact(checkpoint, os.path.join(model_dir, CHECKPOINT_DIR))


class WeightAverage(tf.Module):
  """The moving average of a model's weights as a run's checkpoint holds it (under `ema`:
  trainer.optim.ExponentialMovingAverage's `average`, one per variable in order), to read
  it back without the optimizer."""

  def __init__(self, variables: Sequence[tf.Variable]):
    super().__init__()
    self.average = [tf.Variable(tf.zeros_like(v), trainable=False) for v in variables]


WEIGHTS = ("auto", "ema", "raw")


def restore_model(model_dir: str, weights: str = "auto", checkpoint: str = "latest"):
  """`(model, sample_rate, weights used, checkpoint path)` from a checkpoint of the run in
  `model_dir`.

  `weights`: ema (the moving average; an error if the run kept none), raw (the
  trained weights), or auto (the average if there is one). `checkpoint`: latest
  (the newest intact one), best (model_dir/best/, kept by --keep_best), or the
  path of a checkpoint (e.g. runs/x/checkpoints/ckpt-2000; from another run only
  if that run's model is this one, `check_origin`). Every variable of the model must be in
  the checkpoint.
  """
  checks.one_of("weights", weights, WEIGHTS)
  card = card_lib.ModelCard.read(model_dir)
  model = card.build()
  restored = _restore(model, model_dir, checkpoint)
  if checkpoint not in ("latest", "best"):
    check_origin(restored, model_dir, card)
  has_average = any(name.startswith("ema/") for name, _ in tf.train.list_variables(restored))
  if weights == "ema" and not has_average:
    raise ValueError(f"--weights=ema, but {restored} holds no weight average: train with "
                     "--ema_decay, or export --weights=raw.")
  if has_average and weights != "raw":
    variables = contract.tf_variables(model)
    average = WeightAverage(variables)
    restore(tf.train.Checkpoint(ema=average), restored, partial=True)
    for variable, value in zip(variables, average.average):
      variable.assign(value)
    return model, card.sample_rate, "ema", restored
  return model, card.sample_rate, "raw", restored


def check_origin(path: str, model_dir: str, card: card_lib.ModelCard):
  """Refuses a checkpoint from outside `model_dir` whose own run's card (config.json beside
  its checkpoints/ or best/) describes another model than `card`; one with no card is
  exported with a warning naming it (its weights fit the shape; nothing else is known).

  Raises:
    CheckpointError: naming what differs.
  """
  if files.inside(path, model_dir):
    return
  run = os.path.dirname(os.path.dirname(os.path.abspath(path)))
  other = card_lib.ModelCard.stored(run)
  if other is None:
    logging.warning("--checkpoint=%s lies outside %s and no model card (config.json) says "
                    "which run it comes from: exporting it as %s's model, which its "
                    "variables fit; the export records where its weights came from.", path,
                    model_dir, model_dir)
    return
  old, new = other.flat(), card.flat()
  differs = sorted(name for name in set(old) | set(new)
                   if name != "seed" and old.get(name) != new.get(name))
  if differs:
    raise CheckpointError(
        f"--checkpoint={path} is a checkpoint of the run in {run}, whose model differs from "
        f"{model_dir}'s ({', '.join(f'--{n}={old.get(n)} there, {new.get(n)} here' for n in differs)}"
        f"): export it from its own run, --model_dir={run}.")


def _restore(model: tf.Module, model_dir: str, checkpoint: str) -> str:
  """Restores `checkpoint` (latest | best | a path) of `model_dir` into `model`; its path."""
  state = tf.train.Checkpoint(model=model)
  if checkpoint not in ("latest", "best"):
    path = checkpoint_prefix(checkpoint)
    missing = missing_variables(model, path)
    if missing:
      total = len(model.trainable_variables)
      raise CheckpointError(
          f"--checkpoint={checkpoint} lacks {len(missing)} of the model's {total} variables "
          f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}): it is not a "
          f"checkpoint of the model in {model_dir}. Pass one of that run's checkpoints.")
    try:
      restore(state, path, partial=True)
    except UNREADABLE as e:
      raise CheckpointError(f"--checkpoint={checkpoint} cannot be restored "
                                        f"({files.reason(e)}).") from None
    return path
  directory = os.path.join(model_dir, BEST_DIR if checkpoint == "best"
                           else CHECKPOINT_DIR)
  restored = restore_newest_intact(state, directory, partial=True)
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
    raise CheckpointError(
        f"--checkpoint={path} is not a checkpoint (there is no {prefix}.index): pass latest, "
        "best, or a checkpoint prefix such as runs/x/checkpoints/ckpt-2000.")
  return prefix


