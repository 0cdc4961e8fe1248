"""Atomic writes: write under a temporary name, rename when complete, so no reader sees half a file."""

import json
import os
import uuid

import tensorflow as tf


def write_bytes(path: str, data: bytes) -> str:
  """Writes `data` to `path` (any tf.io.gfile filesystem) via a unique temporary name beside
  it, renamed when complete and removed if anything fails; returns `path`."""
  directory = os.path.dirname(path)
  if directory:
    tf.io.gfile.makedirs(directory)
  tmp = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4().hex[:8]}.tmp")
  try:
    with tf.io.gfile.GFile(tmp, "wb") as f:
      f.write(data)
    tf.io.gfile.rename(tmp, path, overwrite=True)
  finally:
    if tf.io.gfile.exists(tmp):
      tf.io.gfile.remove(tmp)
  return path


def write_text(path: str, text: str) -> str:
  """Writes `text` to `path` atomically; returns `path`."""
  return write_bytes(path, text.encode())


def write_json(path: str, value) -> str:
  """Writes `value` as indented JSON to `path` atomically; returns `path`."""
  return write_text(path, json.dumps(value, indent=2) + "\n")
