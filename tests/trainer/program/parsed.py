"""The program's configs from a command line as trainer.main reads it (bare flagfile names included), for tests."""

from absl import flags

from trainer.program import flagfiles
from trainer.program.config import configs as configs_lib  # defines every flag


def configs(*argv) -> configs_lib.Configs:
  """Parses `argv` into the flags (from scratch) and returns their Configs."""
  flags.FLAGS.unparse_flags()
  flags.FLAGS(flagfiles.resolve(["trainer.main", *argv]))
  return configs_lib.Configs.from_flags()
