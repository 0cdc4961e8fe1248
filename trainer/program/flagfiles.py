"""Flagfiles by bare name: `--flagfile=a100.flags` means the flags/a100.flags installed with the package when no such file is in the working directory, and so do the includes inside a flagfile."""

import os
import sys
from typing import List, Optional, Sequence

import trainer
from common import cli
from trainer.program.config import configs

# flags/ is installed as the package data trainer/flags (setup.cfg); an editable install or
# a source checkout reads the repository's flags/ beside trainer/.
_PACKAGE = os.path.dirname(os.path.abspath(trainer.__file__))
FLAGS_DIR = next((d for d in (os.path.join(_PACKAGE, "flags"),
                              os.path.join(os.path.dirname(_PACKAGE), "flags"))
                  if os.path.isdir(d)), os.path.join(_PACKAGE, "flags"))

_DIRECTIVE = "--flagfile"  # also -flagfile: absl takes one dash or two


def parse(argv: Sequence[str]) -> List[str]:
  """trainer.main's flags parser: `resolve`, then `cli.parse_flags` (its --help lists the
  program's flags by concern); flagfiles that include each other end it with one line."""
  try:
    resolved = resolve(argv)
  except ValueError as e:
    sys.exit(f"{os.path.basename(argv[0])}: {e}")
  return cli.parse_flags(resolved, configs.flag_groups())


def resolve(argv: Sequence[str]) -> List[str]:
  """`argv` with each `--flagfile=NAME` (or `-flagfile`) replaced by the flags the file holds, its own
  includes expanded the same way.

  NAME is looked up as given (relative to the working directory, or to the including file
  for an include), then in FLAGS_DIR. A NAME found nowhere is left for absl to report.

  Raises:
    ValueError: flagfiles that include each other.
  """
  return _expand(list(argv), base=os.getcwd(), including=())


def _expand(args: Sequence[str], *, base: str, including: Sequence[str]) -> List[str]:
  expanded, args = [], iter(args)
  for arg in args:
    if arg.startswith(_DIRECTIVE[1:]):  # -flagfile
      arg = "-" + arg
    if arg == _DIRECTIVE:  # --flagfile NAME
      arg = f"{_DIRECTIVE}={next(args, '')}"
    if not arg.startswith(_DIRECTIVE + "="):
      expanded.append(arg)
      continue
    name = arg[len(_DIRECTIVE) + 1:]
    path = find(name, base)
    if path is None:
      expanded.append(arg)
    elif path in including:
      raise ValueError(f"flagfiles include each other: {' -> '.join((*including, path))}. "
                       "Remove one of the --flagfile lines.")
    else:
      expanded += _expand(_lines(path), base=os.path.dirname(path),
                          including=(*including, path))
  return expanded


def find(name: str, base: str = ".") -> Optional[str]:
  """The flagfile `name` means: `base`/`name` if it exists, else FLAGS_DIR/`name`; None if
  neither does."""
  for candidate in (os.path.join(base, name), os.path.join(FLAGS_DIR, name)):
    if os.path.isfile(candidate):
      return os.path.abspath(candidate)
  return None


def _lines(path: str) -> List[str]:
  """A flagfile's flags as absl reads them: one per line; blank lines and lines starting
  with # or // are skipped."""
  with open(path) as f:
    lines = [line.strip() for line in f]
  return [line for line in lines if line and not line.startswith(("#", "//"))]
