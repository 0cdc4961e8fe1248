"""A run's model_dir as serving reads it: where its checkpoints and its best checkpoint live, and restoring one (the newest intact, or a named one, every variable matched)."""

import os
from typing import Callable, Optional

from absl import logging
import tensorflow as tf

from common import files

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
