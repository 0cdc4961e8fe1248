"""The trained exports that ship inside the package (trainer/pretrained/), used where a command is given no --saved_model."""

import os

DIRECTORY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "pretrained")
DEFAULT = "default"  # the README's first command's recipe (trainer.denoise)
STREAMING = "streaming"  # flags/streaming.flags (trainer.stream)
MAKE = "docs/pretrained.md"  # the commands that made them


def path(name: str) -> str:
  """The packaged export `name` (DEFAULT or STREAMING).

  Raises:
    ValueError: this copy of the package holds no such export.
  """
  where = os.path.join(DIRECTORY, name)
  if not os.path.isfile(os.path.join(where, "saved_model.pb")):
    raise ValueError(f"no packaged {name} model in {where} (this copy of the package was "
                     f"installed without it): pass --saved_model=<a trainer.export "
                     f"directory>, or make it as {MAKE} says.")
  return where
