"""Atomic writes (temporary name, renamed when complete, so no reader sees half a file) and file errors in plain words."""

import contextlib
import json
import os
import re
from typing import Iterator
import uuid

import tensorflow as tf


@contextlib.contextmanager
def atomic_writer(path: str) -> Iterator:
  """`with atomic_writer(path) as f:` writes a binary file (any tf.io.gfile filesystem) under
  a unique temporary name beside `path`, renamed to `path` when the block completes and
  removed if anything fails, so `path` is never half written.

  Raises:
    OSError: the file system refused (full, read-only, a directory in the way),
      naming `path` and the cause; `path` is then as it was.
  """
  directory = os.path.dirname(path)
  tmp = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4().hex[:8]}.tmp")
  try:
    if directory:
      tf.io.gfile.makedirs(directory)
    with tf.io.gfile.GFile(tmp, "wb") as f:
      yield f
    tf.io.gfile.rename(tmp, path, overwrite=True)
  except (tf.errors.OpError, OSError) as e:
    raise OSError(f"Could not write {path} ({reason(e)}); it is unchanged.") from e
  finally:
    if tf.io.gfile.exists(tmp):
      tf.io.gfile.remove(tmp)


def write_bytes(path: str, data: bytes) -> str:
  """Writes `data` to `path` atomically (see `atomic_writer`); returns `path`."""
  with atomic_writer(path) as f:
    f.write(data)
  return path


def write_text(path: str, text: str) -> str:
  """Writes `text` to `path` atomically; returns `path`."""
  return write_bytes(path, text.encode())


def write_json(path: str, value) -> str:
  """Writes `value` as indented JSON to `path` atomically; returns `path`."""
  return write_text(path, json.dumps(value, indent=2) + "\n")


def read_json(path: str):
  """The JSON value in `path`, or None if there is no such file."""
  if not tf.io.gfile.exists(path):
    return None
  with tf.io.gfile.GFile(path) as f:
    return json.load(f)


def reason(error: Exception) -> str:
  """The operating system's words from a Python or TensorFlow file error, e.g. "No space
  left on device" out of a long op message."""
  if isinstance(error, OSError) and error.strerror:
    return error.strerror
  message = getattr(error, "message", None) or str(error)
  found = re.search(r";\s*([^;\[\n]+?)\s*(\[Op:[^\]]*\])?\s*$", message)
  return found.group(1) if found else message.strip().splitlines()[-1]
