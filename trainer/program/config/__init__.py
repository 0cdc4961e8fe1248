"""absl flags of the training program, one module per concern, each validated into a frozen dataclass.

Defaults are the small, safe values that run anywhere in minutes (the
synthetic corpus at 16 kHz, a small model); flags/*.flags hold the real setups.
"""

import dataclasses

from absl import flags


def from_flag_values(cls, **overrides):
  """An instance of dataclass `cls`, each field read from the flag of the same name."""
  values = {f.name: getattr(flags.FLAGS, f.name) for f in dataclasses.fields(cls)
            if f.name not in overrides}
  return cls(**values, **overrides)


def check_at_least(minimum, source, *names):
  """Raises ValueError naming the first flag in `names` whose value is below `minimum`."""
  for name in names:
    value = getattr(source, name)
    if value is not None and value < minimum:
      raise ValueError(f"--{name} must be >= {minimum}, got {value}.")
