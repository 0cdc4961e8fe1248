"""Atomic writes: write under a temporary name, rename when complete, so no reader sees half a file."""

import json
import os

import tensorflow as tf


def write_text(path: str, text: str) -> str:
  """Writes `text` to `path` (any tf.io.gfile filesystem) via `path.tmp`; returns `path`."""
  directory = os.path.dirname(path)
  if directory:
    tf.io.gfile.makedirs(directory)
  with tf.io.gfile.GFile(path + ".tmp", "w") as f:
    f.write(text)
  tf.io.gfile.rename(path + ".tmp", path, overwrite=True)
  return path


def write_json(path: str, value) -> str:
  """Writes `value` as indented JSON to `path` atomically; returns `path`."""
  return write_text(path, json.dumps(value, indent=2) + "\n")
