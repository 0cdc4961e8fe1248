"""The program's configs from a command line as trainer.main reads it (bare flagfile names included), for tests."""

from absl import flags

from trainer import main  # defines every flag of the program
from trainer.program import flagfiles


def configs(*argv) -> main.Configs:
  """Parses `argv` into the flags (from scratch) and returns their Configs."""
  flags.FLAGS.unparse_flags()
  flags.FLAGS(flagfiles.resolve(["trainer.main", *argv]))
  return main.Configs()
