"""Argument checks shared by every library: one rule each, raising an ArgumentError that names the argument.

Library parameters carry the names of the program's flags, so a program
reports a library's refusal as the flag to fix by adding `--`
(`trainer.main: --global_batch_size=12 is not divisible by the 8 replicas`).
Where a library's name differs from the flag's (`ops.RevEcho(proba=)` is
`--reverb_proba`), the caller wraps the call in `renamed(proba="reverb_proba")`.
"""

import contextlib
import math
from typing import Sequence


class ArgumentError(ValueError):
  """A bad argument value; `str()` is `"<argument>=<value> <problem>"`."""

  def __init__(self, argument: str, value, problem: str):
    self.argument, self.value, self.problem = argument, value, problem
    super().__init__(f"{argument}={value} {problem}")

  def flag(self) -> str:
    """The message as the program's flag: `--<argument>=<value> <problem>`."""
    return f"--{self}"


@contextlib.contextmanager
def renamed(**names: str):
  """Re-raises ArgumentErrors of the arguments named as keys under the names given as values."""
  try:
    yield
  except ArgumentError as e:
    if e.argument not in names:
      raise
    raise ArgumentError(names[e.argument], e.value, e.problem) from None


def at_least(argument: str, value, minimum):
  """`value`, if it is a number >= `minimum` (None passes: unset)."""
  if value is not None and not value >= minimum:  # also refuses NaN
    raise ArgumentError(argument, value, f"must be >= {minimum}.")
  return value


def positive(argument: str, value):
  """`value`, if it is a finite number > 0."""
  if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
    raise ArgumentError(argument, value, "must be a positive number.")
  return value


def probability(argument: str, value) -> float:
  """`value` as a float, if it lies in [0, 1]."""
  if not 0.0 <= value <= 1.0:  # also refuses NaN
    raise ArgumentError(argument, value, "must be in [0, 1].")
  return float(value)


def one_of(argument: str, value, choices: Sequence):
  """`value`, if it is one of `choices`."""
  if value not in choices:
    raise ArgumentError(argument, value, f"must be one of {', '.join(map(str, choices))}.")
  return value


def interval(argument: str, value, *, low: float = -math.inf):
  """`(lo, hi)` as finite floats, if `low <= lo <= hi`."""
  lo, hi = (float(v) for v in value)
  if not (math.isfinite(lo) and math.isfinite(hi) and low <= lo <= hi):
    bound = f"{low:g} <= " if low > -math.inf else ""
    raise ArgumentError(argument, f"({lo:g}, {hi:g})",
                        f"must be (lo, hi), finite numbers with {bound}lo <= hi.")
  return lo, hi
