"""The training program's flags, one module per concern: each a frozen dataclass whose fields are the flags.

A field is described once - name, type, default, help (and choices or a
parser) - and `define` makes the absl flag from it; `from_flags` reads the
parsed flags back into the dataclass. Defaults are the small, safe values that
run anywhere in minutes (the synthetic corpus at 16 kHz, a small model);
flags/*.flags hold the real setups. Values are checked where they are used, in
the libraries, which name the argument; the program reports it as `--name`.
"""

import dataclasses
import typing
from typing import Callable, Optional, Sequence

from absl import flags

from common import checks


def flag(default, help_text: str, *, choices: Optional[Sequence[str]] = None,
         parse: Optional[Callable[[Optional[str]], object]] = None) -> dataclasses.Field:
  """A dataclass field that is also a flag: an enum with `choices`, a string turned into the
  field's value by `parse`, else a flag of the field's type (bool, int, float, str)."""
  return dataclasses.field(default=default,
                           metadata=dict(help=help_text, choices=choices, parse=parse))


def parse_pair(name: str, cast: Callable[[str], object], form: str, default=None) -> Callable:
  """A parser of a flag's "A,B" text into `(cast(A), cast(B))` (`default` when the flag is
  unset); `form` names the parts for the error, e.g. "LO,HI (two numbers, e.g. -5,20)"."""

  def parse(text: Optional[str]):
    if not text:
      return default
    try:
      first, second = (cast(part) for part in text.split(","))
    except ValueError:
      raise checks.ArgumentError(name, repr(text), f"must be {form}.") from None
    return first, second

  return parse


def _flag_type(annotation):
  """`int` for `int` and `Optional[int]`, and so on."""
  arguments = [a for a in typing.get_args(annotation) if a is not type(None)]
  return arguments[0] if typing.get_origin(annotation) is typing.Union else annotation


_DEFINE = {bool: flags.DEFINE_bool, int: flags.DEFINE_integer, float: flags.DEFINE_float,
           str: flags.DEFINE_string}


def define(cls):
  """Class decorator: defines one absl flag per field of the dataclass `cls`."""
  hints = typing.get_type_hints(cls)
  for field in dataclasses.fields(cls):
    meta = field.metadata
    if meta["choices"]:
      flags.DEFINE_enum(field.name, field.default, list(meta["choices"]), meta["help"])
    elif meta["parse"]:
      flags.DEFINE_string(field.name, None, meta["help"])
    else:
      _DEFINE[_flag_type(hints[field.name])](field.name, field.default, meta["help"])
  return cls


def from_flags(cls, **overrides):
  """An instance of dataclass `cls` from the parsed flags (parsers applied); `overrides`
  replace fields the caller derives otherwise."""
  values = {}
  for field in dataclasses.fields(cls):
    if field.name in overrides:
      continue
    value = getattr(flags.FLAGS, field.name)
    values[field.name] = field.metadata["parse"](value) if field.metadata["parse"] else value
  return cls(**values, **overrides)
