"""Checkpoints in training: a manager that resumes from the newest intact one (trainer.run_dir reads them), and saves with a clear error when the disk refuses."""

import os
from typing import Optional

from absl import logging
import tensorflow as tf

from common import files
from trainer import run_dir

def manager(checkpoint: tf.train.Checkpoint, model_dir: str, *, max_to_keep: int = 3,
            save_dir: Optional[str] = None) -> tf.train.CheckpointManager:
  """A manager saving to `save_dir/checkpoints` (default model_dir), after restoring
  the newest intact checkpoint in `model_dir/checkpoints` if there is one.

  Multi-worker runs restore every worker from the chief's model_dir and let
  the other workers save (saves are collective) to private directories.
  """
  restored = run_dir.restore_run(checkpoint, model_dir)
  if restored:
    logging.info("Restored %s", restored)
  return tf.train.CheckpointManager(
      checkpoint, os.path.join(save_dir or model_dir, run_dir.CHECKPOINT_DIR), max_to_keep=max_to_keep)


def save(checkpoints: tf.train.CheckpointManager, step: int) -> str:
  """Saves checkpoint `step` unless the newest one already is step `step` (the same
  weights: the step counts every attempted step); returns its path.

  On a write failure it removes the partial files and raises CheckpointError
  naming the directory and the cause.
  """
  latest = checkpoints.latest_checkpoint
  if latest is not None and latest.endswith(f"-{step}"):
    return latest
  try:
    return checkpoints.save(checkpoint_number=step)
  except (tf.errors.OpError, OSError) as e:
    for partial in tf.io.gfile.glob(os.path.join(checkpoints.directory, f"*-{step}_temp*")):
      tf.io.gfile.rmtree(partial) if tf.io.gfile.isdir(partial) else tf.io.gfile.remove(partial)
    kept = (f"; the last good one, {checkpoints.latest_checkpoint}, is intact"
            if checkpoints.latest_checkpoint else "")
    raise run_dir.CheckpointError(
        f"Could not write checkpoint {step} in {checkpoints.directory} ({files.reason(e)}): "
        f"free space or make it writable{kept}.") from e
