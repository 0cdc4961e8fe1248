"""The program's configuration: one frozen bundle of every flag module's config, read from the parsed flags and checked together (importing it defines every flag)."""

import dataclasses

from trainer.program.config import combinations
from trainer.program.config import data as data_config
from trainer.program.config import model as model_config
from trainer.program.config import optimization as optimization_config
from trainer.program.config import run as run_config


def flag_groups():
  """`(title, flag names)` of each concern, for the program's --help."""
  return [(module.__doc__.split("\n")[0].rstrip("."),
           [f.name for f in dataclasses.fields(cls)])
          for module, cls in ((run_config, run_config.RunConfig),
                              (data_config, data_config.DataConfig),
                              (model_config, model_config.ModelConfig),
                              (optimization_config, optimization_config.OptimizationConfig))]


@dataclasses.dataclass(frozen=True)
class Configs:
  """What to run (`run`), on which data (`data`), which model (`model`) and how it is
  optimised (`optimization`)."""
  run: run_config.RunConfig
  data: data_config.DataConfig
  model: model_config.ModelConfig
  optimization: optimization_config.OptimizationConfig

  @classmethod
  def from_flags(cls) -> "Configs":
    """The configs of the parsed flags.

    Raises:
      ArgumentError: naming a bad flag, or the first combination of flags that cannot run.
    """
    configs = cls(run=run_config.from_flags(), data=data_config.from_flags(),
                  model=model_config.from_flags(),
                  optimization=optimization_config.from_flags())
    combinations.check(configs.run, configs.data, configs.model)
    return configs
