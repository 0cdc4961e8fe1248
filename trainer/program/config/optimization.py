"""Optimisation flags: AdamW, learning-rate schedule, clipping, precision and loss scaling."""

import dataclasses
from typing import Optional

from trainer import step
from trainer.program import config as config_lib

flag = config_lib.flag


@config_lib.define
@dataclasses.dataclass(frozen=True)
class OptimizationConfig:
  """The optimizer, its schedule and the numerics (checked by optim, loss_scale and step)."""
  learning_rate: float = flag(2e-3, "Peak learning rate.")
  schedule: str = flag("cosine", "constant, or linear warm-up then cosine decay to "
                       "--final_lr_fraction.", choices=["constant", "cosine"])
  warmup_steps: int = flag(20, "Linear warm-up steps (cosine schedule).")
  final_lr_fraction: float = flag(0.1, "Learning rate at the end, as a fraction.")
  weight_decay: float = flag(0.0, "Decoupled weight decay of the kernels (biases and scales, "
                             "rank <= 1, are excluded).")
  beta_1: float = flag(0.9, "Adam beta_1.")
  beta_2: float = flag(0.999, "Adam beta_2.")
  clip_norm: Optional[float] = flag(None, "Clip the global gradient norm (unset: no clipping).")
  precision: str = flag("float32", "Compute precision; variables stay float32.",
                        choices=list(step.PRECISIONS))
  loss_scale: str = flag("auto", "auto: dynamic for mixed_float16 and mixed_bfloat16 (for "
                         "bf16 it changes no gradient: BENCHMARKS.md), none for float32.",
                         choices=["auto", "dynamic", "fixed", "none"])
  initial_loss_scale: float = flag(2.0**15, "Initial (or fixed) loss scale.")
  loss_scale_growth_interval: int = flag(2000, "Finite steps before a dynamic loss scale "
                                         "doubles.")
  ema_decay: float = flag(0.0, "Keep an exponential moving average of the weights with this "
                          "decay (e.g. 0.999; 0: off), updated after every applied step; eval "
                          "and export then use the averaged weights.")
  ema_warmup: bool = flag(True, "Warm the average's decay up: min(ema_decay, (1+n)/(10+n)) "
                          "after n updates.")


def from_flags() -> OptimizationConfig:
  return config_lib.from_flags(OptimizationConfig)
