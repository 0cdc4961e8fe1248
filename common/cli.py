"""Command-line tools end an error in one line: a refused argument as its flag, any other expected error in its own words."""

import contextlib
import sys
from typing import Type

from common import checks


@contextlib.contextmanager
def one_line_errors(program: str, *errors: Type[Exception]):
  """`with one_line_errors("trainer.export", CheckpointError):` exits non-zero with one line
  for an ArgumentError (`program: --flag=value problem`), or a ValueError, OSError or one of
  `errors` (`program: message`); anything else is a bug and keeps its traceback."""
  try:
    yield
  except checks.ArgumentError as e:
    sys.exit(f"{program}: {e.flag()}")
  except (ValueError, OSError, *errors) as e:
    sys.exit(f"{program}: {e}")
