"""Bare flagfile names: `--flagfile=a100.flags` means `flags/a100.flags` of this repository when no such file is here."""

import os
from typing import List

REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FLAGS_DIR = os.path.join(REPOSITORY, "flags")


def resolve(argv: List[str]) -> List[str]:
  """`argv` with each `--flagfile` that names no existing file but a file in FLAGS_DIR
  pointed there; everything else (including paths that exist) is left as it is."""
  resolved = list(argv)
  for i, arg in enumerate(resolved):
    if arg.startswith("--flagfile="):
      resolved[i] = "--flagfile=" + _in_flags_dir(arg[len("--flagfile="):])
    elif arg == "--flagfile" and i + 1 < len(resolved):
      resolved[i + 1] = _in_flags_dir(resolved[i + 1])
  return resolved


def _in_flags_dir(path: str) -> str:
  if os.path.exists(path) or os.path.dirname(path):
    return path
  candidate = os.path.join(FLAGS_DIR, path)
  return candidate if os.path.exists(candidate) else path
