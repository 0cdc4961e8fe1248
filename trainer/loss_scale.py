"""Loss scaling by hand: dynamic (grow after N finite steps, halve on overflow), fixed, or none."""

import tensorflow as tf

from common import checks
from trainer import replicated

class LossScale(tf.Module):
  """A checkpointable loss scale; create it under the strategy's scope.

  The step multiplies the loss by `scale`, divides the all-reduced gradients by
  it, and calls `update(finite)` once per step in cross-replica context with
  the decision every replica shares.
  """

  def __init__(self, *, initial: float = 2.0**15, dynamic: bool = True,
               growth_interval: int = 2000, multiplier: float = 2.0,
               minimum: float = 1.0, name: str = "loss_scale"):
    super().__init__(name=name)
    checks.positive("minimum", minimum)
    checks.at_least("initial", initial, minimum)
    checks.at_least("growth_interval", growth_interval, 1)
    if not multiplier > 1:
      raise checks.ArgumentError("multiplier", multiplier, "must be > 1.")
    self.dynamic = dynamic
    self.growth_interval = growth_interval
    self.multiplier = multiplier
    self.minimum = minimum
    with self.name_scope:
      self.scale = replicated.shared_variable(float(initial), tf.float32, "scale")
      self.good_steps = replicated.counter("good_steps")
      self.skipped_steps = replicated.counter("skipped_steps")

  @classmethod
  def fixed(cls, value: float) -> "LossScale":
    return cls(initial=value, dynamic=False, minimum=min(1.0, value))

  @classmethod
  def none(cls) -> "LossScale":
    return cls.fixed(1.0)

  def update(self, finite: tf.Tensor):
    """Counts the step; for a dynamic scale, halves on overflow or grows after a streak."""
    skipped = tf.cast(tf.logical_not(finite), tf.int64)
    self.skipped_steps.assign_add(skipped)
    if not self.dynamic:
      return
    good = tf.where(finite, self.good_steps + 1, 0)
    grow = good >= self.growth_interval
    grown = self.scale * self.multiplier
    scale = tf.where(finite, tf.where(grow & tf.math.is_finite(grown), grown, self.scale),
                     tf.maximum(self.scale / self.multiplier, self.minimum))
    self.scale.assign(scale)
    self.good_steps.assign(tf.where(grow, tf.zeros_like(good), good))


def for_precision(kind: str, precision: str, *, initial: float = 2.0**15,
                  growth_interval: int = 2000) -> LossScale:
  """A LossScale from a configuration string: dynamic | fixed | none | auto.

  `auto` is dynamic for the mixed precisions and none for float32. float16
  gradients underflow without it; bfloat16 has float32's exponent range, so a
  power-of-two scale leaves its gradients as they are (bench.loss_scale) and
  costs one multiply, while the step keeps one code path for both.
  """
  if kind == "auto":
    kind = "none" if precision == "float32" else "dynamic"
  if kind == "dynamic":
    return LossScale(initial=initial, growth_interval=growth_interval)
  if kind == "fixed":
    return LossScale.fixed(initial)
  if kind == "none":
    return LossScale.none()
  raise ValueError(f"Unknown loss scale {kind!r}: use dynamic, fixed, none or auto.")
