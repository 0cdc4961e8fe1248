"""Optimisation flags: AdamW, learning-rate schedule, clipping, precision and loss scaling."""

import dataclasses
from typing import Optional

from absl import flags

from trainer.program import config as config_lib
from trainer import step

flags.DEFINE_float("learning_rate", 2e-3, "Peak learning rate.")
flags.DEFINE_enum("schedule", "cosine", ["constant", "cosine"],
                  "constant, or linear warm-up then cosine decay to --final_lr_fraction.")
flags.DEFINE_integer("warmup_steps", 20, "Linear warm-up steps (cosine schedule).")
flags.DEFINE_float("final_lr_fraction", 0.1, "Learning rate at the end, as a fraction.")
flags.DEFINE_float("weight_decay", 0.0, "Decoupled weight decay of the kernels (biases and "
                   "scales, rank <= 1, are excluded).")
flags.DEFINE_float("beta_1", 0.9, "Adam beta_1.")
flags.DEFINE_float("beta_2", 0.999, "Adam beta_2.")
flags.DEFINE_float("clip_norm", None, "Clip the global gradient norm (unset: no clipping).")
flags.DEFINE_enum("precision", "float32", list(step.PRECISIONS),
                  "Compute precision; variables stay float32.")
flags.DEFINE_enum("loss_scale", "auto", ["auto", "dynamic", "fixed", "none"],
                  "auto: dynamic for mixed_float16, none otherwise.")
flags.DEFINE_float("initial_loss_scale", 2.0**15, "Initial (or fixed) loss scale.")
flags.DEFINE_integer("loss_scale_growth_interval", 2000,
                     "Finite steps before a dynamic loss scale doubles.")

FLAGS = flags.FLAGS


@dataclasses.dataclass(frozen=True)
class OptimizationConfig:
  learning_rate: float
  schedule: str
  warmup_steps: int
  final_lr_fraction: float
  weight_decay: float
  beta_1: float
  beta_2: float
  clip_norm: Optional[float]
  precision: str
  loss_scale: str
  initial_loss_scale: float
  loss_scale_growth_interval: int


def from_flags(train_steps: int) -> OptimizationConfig:
  config = config_lib.from_flag_values(OptimizationConfig)
  if config.learning_rate <= 0:
    raise ValueError(f"--learning_rate must be positive, got {config.learning_rate}.")
  if config.schedule == "cosine" and not 0 <= config.warmup_steps < train_steps:
    raise ValueError(f"--warmup_steps={config.warmup_steps} must be in [0, --train_steps="
                     f"{train_steps}) for the cosine schedule.")
  if config.clip_norm is not None and config.clip_norm <= 0:
    raise ValueError(f"--clip_norm must be positive, got {config.clip_norm}.")
  return config
