"""Atomic writes (temporary name, renamed when complete, so no reader sees half a file) and file errors in plain words."""

import contextlib
import json
import math
import os
import re
from typing import Dict, Iterator, Optional
import uuid

import tensorflow as tf


@contextlib.contextmanager
def atomic_writer(path: str, *, replace: bool = True) -> Iterator:
  """`with atomic_writer(path) as f:` writes a binary file (any tf.io.gfile filesystem; a local
  one is a plain, seekable Python file) under
  a unique temporary name beside `path`, renamed to `path` when the block completes and
  removed if anything fails, so `path` is never half written. Without `replace`, `path` is
  created only if nothing is there by then (atomically on a local disk: a hard link), so
  of two writers racing to one new path the second fails instead of replacing the first.

  Raises:
    FileExistsError: not `replace`, and `path` exists when the file is complete.
    OSError: the file system refused (full, read-only, a directory in the way),
      naming `path` and the cause; `path` is then as it was.
  """
  directory = os.path.dirname(path)
  tmp = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4().hex[:8]}.tmp")
  try:
    if directory:
      tf.io.gfile.makedirs(directory)
    # a local file is a plain (seekable) Python file; other file systems need GFile
    with (open(tmp, "wb") if "://" not in path else tf.io.gfile.GFile(tmp, "wb")) as f:
      yield f
    if replace:
      tf.io.gfile.rename(tmp, path, overwrite=True)
    else:
      _create(tmp, path)
  except FileExistsError:
    raise
  except (tf.errors.OpError, OSError) as e:
    raise OSError(f"Could not write {path} ({reason(e)}); it is unchanged.") from e
  finally:
    if tf.io.gfile.exists(tmp):
      tf.io.gfile.remove(tmp)


def _create(tmp: str, path: str):
  """Gives the complete file `tmp` the name `path` unless something has it (FileExistsError)."""
  try:
    try:
      os.link(tmp, path)  # atomic: fails if `path` exists
    except OSError as e:  # another file system, or one without hard links
      if isinstance(e, FileExistsError):
        raise
      tf.io.gfile.rename(tmp, path, overwrite=False)  # the file system's own check
  except (tf.errors.AlreadyExistsError, FileExistsError):
    raise FileExistsError(f"{path} was written by another process while this one ran; it "
                          "was not replaced. Write to another path, or pass overwrite "
                          "(--overwrite) to replace it.") from None


def write_bytes(path: str, data: bytes, *, replace: bool = True) -> str:
  """Writes `data` to `path` atomically (see `atomic_writer`); returns `path`."""
  with atomic_writer(path, replace=replace) as f:
    f.write(data)
  return path


def write_text(path: str, text: str) -> str:
  """Writes `text` to `path` atomically; returns `path`."""
  return write_bytes(path, text.encode())


def write_json(path: str, value) -> str:
  """Writes `value` as indented JSON to `path` atomically; returns `path`."""
  return write_text(path, json.dumps(value, indent=2) + "\n")


class DamagedFileError(ValueError):
  """A file the project wrote and reads back holds something else; the message names it,
  what is wrong and what to do."""


# What a field's type admits (float: any finite number; int: not a bool).
_ADMITS = {
    int: lambda v: isinstance(v, int) and not isinstance(v, bool),
    float: lambda v: (isinstance(v, (int, float)) and not isinstance(v, bool)
                      and math.isfinite(v)),
    str: lambda v: isinstance(v, str), list: lambda v: isinstance(v, list),
    dict: lambda v: isinstance(v, dict)}
_NAMES = {int: "an integer", float: "a finite number", str: "a string", list: "a list",
          dict: "an object"}


def read_json(path: str, fields: Optional[Dict[str, type]] = None, *, fix: str = ""):
  """The JSON value in `path`, or None if there is no such file.

  Args:
    path: the file (any tf.io.gfile filesystem).
    fields: the value must be an object holding these fields, each of its type (int,
      float: a finite number, str, list or dict); others may be there too.
    fix: what the user can do if it is damaged, for the error.

  Raises:
    DamagedFileError: it is not JSON, or not of that shape, naming `path` and the problem.
  """
  if not tf.io.gfile.exists(path):
    return None
  if tf.io.gfile.isdir(path):
    raise DamagedFileError(f"{path} is a directory, not the JSON file it should be"
                           f"{_then(fix)}")
  try:
    with tf.io.gfile.GFile(path, "rb") as f:
      text = f.read().decode("utf-8")
    value = json.loads(text)
  except UnicodeDecodeError as e:
    raise DamagedFileError(f"{path} is not text (byte {e.start}: {e.reason}){_then(fix)}") from None
  except ValueError as e:
    raise DamagedFileError(f"{path} is not valid JSON ({e}){_then(fix)}") from None
  if fields is not None:
    if not isinstance(value, dict):
      raise DamagedFileError(f"{path} holds {type(value).__name__} {text.strip()[:40]}, not "
                             f"an object with {', '.join(fields)}{_then(fix)}")
    for name, kind in fields.items():
      if name not in value:
        raise DamagedFileError(f"{path} has no {name!r}{_then(fix)}")
      if not _ADMITS[kind](value[name]):
        raise DamagedFileError(f"{path} holds {name}={value[name]!r}, not {_NAMES[kind]}"
                               f"{_then(fix)}")
  return value


def _then(fix: str) -> str:
  return f": {fix}" if fix else "."


def inside(path: str, directory: str) -> bool:
  """Whether `path` is `directory` or lies below it (links resolved)."""
  path, directory = os.path.realpath(path), os.path.realpath(directory)
  return path == directory or path.startswith(directory + os.sep)


def reason(error: Exception) -> str:
  """The operating system's words from a Python or TensorFlow file error, e.g. "No space
  left on device" out of a long op message."""
  if isinstance(error, OSError) and error.strerror:
    return error.strerror
  message = getattr(error, "message", None) or str(error)
  found = re.search(r";\s*([^;\[\n]+?)\s*(\[Op:[^\]]*\])?\s*$", message)
  return found.group(1) if found else message.strip().splitlines()[-1]
