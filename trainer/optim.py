"""The optimizer contract of the step, AdamW on plain tf.Variables (slots made under the strategy scope), learning-rate schedules and a moving average of the weights."""

import contextlib
import functools
import math
from typing import Callable, Protocol, Sequence, Union

import tensorflow as tf

from common import checks
from trainer import replicated

Schedule = Callable[[tf.Tensor], tf.Tensor]


def constant(learning_rate: float) -> Schedule:
  """The same learning rate at every step."""
  checks.positive("learning_rate", learning_rate)
  return lambda step: tf.constant(learning_rate, tf.float32)


def warmup_cosine(peak: float, *, warmup_steps: int, total_steps: int,
                  final_fraction: float = 0.0) -> Schedule:
  """Linear warm-up from 0 to `peak`, then cosine decay to `final_fraction * peak`."""
  checks.positive("peak", peak)
  if not 0 <= warmup_steps < total_steps:
    raise checks.ArgumentError("warmup_steps", warmup_steps,
                               f"must be in [0, {total_steps}), the total steps.")
  checks.probability("final_fraction", final_fraction)

  def schedule(step):
    step = tf.cast(step, tf.float32)
    warm = peak * (step + 1.0) / float(max(warmup_steps, 1))
    progress = tf.clip_by_value((step - warmup_steps) / float(total_steps - warmup_steps),
                                0.0, 1.0)
    decayed = peak * (final_fraction + (1 - final_fraction) * 0.5 *
                      (1.0 + tf.cos(math.pi * progress)))
    return tf.where(step < warmup_steps, warm, decayed)

  return schedule


def decays_matrices(variable: tf.Variable) -> bool:
  """The default weight-decay rule: kernels and embeddings (rank >= 2) decay; biases,
  gains and normalisation scales (rank <= 1) do not."""
  return variable.shape.rank is None or variable.shape.rank >= 2


class Optimizer(Protocol):
  """What the training step asks of an optimizer; it owns its slots and its update.

  `build(variables)` runs once under the strategy's scope (make the slots
  there); `apply(...)` runs once per step in cross-replica context with the
  all-reduced gradients and the step's shared finite decision, updates every
  variable on its devices unless `finite` is False, and counts applied updates
  in `iterations`; `learning_rate(step)` is the schedule the step reports.
  """
  iterations: tf.Variable

  def learning_rate(self, step: tf.Tensor) -> tf.Tensor: ...

  def build(self, variables: Sequence[tf.Variable]) -> None: ...

  def apply(self, strategy: tf.distribute.Strategy, variables: Sequence[tf.Variable],
            grads: Sequence[tf.Tensor], *, finite: tf.Tensor,
            learning_rate: tf.Tensor) -> None: ...


class AdamW(tf.Module):
  """Adam with decoupled weight decay and bias correction (an `Optimizer`).

  Per step t (counting applied updates): `p -= lr * wd * p` (only for the
  variables `decay_filter` picks), then `m = b1 m + (1-b1) g`,
  `v = b2 v + (1-b2) g^2`, `p -= lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps)`.

  Args:
    learning_rate: a float or a schedule `step -> rate` (`constant`, `warmup_cosine`).
    beta_1, beta_2: in [0, 1).
    epsilon: > 0.
    weight_decay: >= 0, decoupled (scaled by the learning rate).
    decay_filter: `decay_filter(variable) -> bool`, whether weight decay
      applies to it; by default biases and norm scales are excluded
      (`decays_matrices`). E.g. `lambda v: "embedding" not in v.name`.
  """

  def __init__(self, learning_rate: Union[float, Schedule] = 1e-3, *, beta_1: float = 0.9,
               beta_2: float = 0.999, epsilon: float = 1e-8, weight_decay: float = 0.0,
               decay_filter: Callable[[tf.Variable], bool] = decays_matrices,
               name: str = "adamw"):
    super().__init__(name=name)
    for argument, value in (("beta_1", beta_1), ("beta_2", beta_2)):
      if not 0.0 <= value < 1.0:
        raise checks.ArgumentError(argument, value, "must be in [0, 1).")
    checks.positive("epsilon", epsilon)
    checks.at_least("weight_decay", weight_decay, 0.0)
    self.learning_rate = (learning_rate if callable(learning_rate)
                          else constant(checks.positive("learning_rate", learning_rate)))
    self.beta_1, self.beta_2 = beta_1, beta_2
    self.epsilon, self.weight_decay = epsilon, weight_decay
    self._decay_filter = decay_filter
    self._built_for = None  # the variables the slots belong to
    self.m, self.v, self.decays = [], [], []
    with self.name_scope:
      self.iterations = replicated.counter("iterations")

  @property
  def built(self) -> bool:
    return bool(self.m)

  def build(self, variables: Sequence[tf.Variable]):
    """Creates the m and v slots for `variables`, in order (under the strategy scope), and
    decides which of them decay (`decays`). Building again for the same variables is a
    no-op; for other variables an error (one optimizer per model)."""
    refs = [v.ref() for v in variables]
    if self.built:
      if self._built_for is not None and refs != self._built_for:
        raise ValueError(f"This optimizer was built for another model's {len(self.m)} "
                         f"variables, not these {len(variables)}; use one optimizer per "
                         "model.")
      return
    with self.name_scope:
      self.m = [tf.Variable(tf.zeros(v.shape, v.dtype), trainable=False,
                            name=f"m_{i}") for i, v in enumerate(variables)]
      self.v = [tf.Variable(tf.zeros(v.shape, v.dtype), trainable=False,
                            name=f"v_{i}") for i, v in enumerate(variables)]
    self.decays = [bool(self._decay_filter(v)) for v in variables]
    self._built_for = refs

  def apply(self, strategy, variables, grads, *, finite, learning_rate):
    """Cross-replica: one AdamW update of every variable on its devices, unless not `finite`."""
    if len(variables) != len(self.m):
      raise ValueError(f"This optimizer was built for {len(self.m)} variables, got "
                       f"{len(variables)}: call build(variables) first.")
    step = tf.identity(self.iterations)

    def update(variable, grad, m, v, finite, learning_rate, decay):
      return tf.cond(finite, lambda: self._update(variable, grad, m, v, step, learning_rate,
                                                  decay),
                     lambda: tf.identity(variable))

    for variable, grad, m, v, decay in zip(variables, grads, self.m, self.v, self.decays):
      strategy.extended.update(variable, functools.partial(update, decay=decay),
                               args=(grad, m, v, finite, learning_rate), group=False)
    self.iterations.assign_add(tf.cast(replicated.agreed(strategy, finite), tf.int64))

  def _update(self, variable, grad, m, v, step, learning_rate, decay: bool):
    """Updates one variable and its slots in place, on the calling device."""
    dtype = variable.dtype
    t = tf.cast(step + 1, dtype)
    learning_rate = tf.cast(learning_rate, dtype)
    m.assign(self.beta_1 * m + (1 - self.beta_1) * grad)
    v.assign(self.beta_2 * v + (1 - self.beta_2) * tf.square(grad))
    m_hat = m / (1 - tf.pow(self.beta_1, t))
    v_hat = v / (1 - tf.pow(self.beta_2, t))
    decayed = variable * (1 - learning_rate * self.weight_decay) if decay else variable
    return variable.assign(decayed - learning_rate * m_hat / (tf.sqrt(v_hat) + self.epsilon))


class ExponentialMovingAverage(tf.Module):
  """An exponential moving average of the model's weights, updated after every applied step.

  After the n-th applied update (skipped, non-finite steps are not averaged):
  `average = d * average + (1 - d) * weight`, with `d = decay`, or with
  `warmup` `d = min(decay, (1 + n) / (10 + n))`, so the first averages are not
  dominated by the initial weights. `build(variables)` under the strategy scope
  starts the averages at the variables' values; the step calls `apply` in
  cross-replica context after the optimizer's update. Evaluate or export with
  the averages through `swapped(variables)` or `copy_to(variables)`.
  """

  def __init__(self, decay: float, *, warmup: bool = True, name: str = "ema"):
    super().__init__(name=name)
    if not 0.0 < decay < 1.0:
      raise checks.ArgumentError("ema_decay", decay, "must be in (0, 1) (0 turns it off in "
                                 "the program).")
    self.decay, self.warmup = float(decay), warmup
    self.average = []
    with self.name_scope:
      self.updates = replicated.counter("updates")

  def build(self, variables: Sequence[tf.Variable]):
    """Creates one average per variable, equal to it now (under the strategy scope)."""
    if self.average:
      if len(self.average) != len(variables):
        raise ValueError(f"This average was built for {len(self.average)} variables, not "
                         f"{len(variables)}; use one per model.")
      return
    with self.name_scope:
      self.average = [tf.Variable(tf.identity(v), trainable=False, name=f"average_{i}")
                      for i, v in enumerate(variables)]

  def current_decay(self) -> tf.Tensor:
    """The decay the next applied update uses."""
    n = tf.cast(self.updates + 1, tf.float32)
    return tf.minimum(self.decay, (1.0 + n) / (10.0 + n)) if self.warmup else tf.constant(
        self.decay)

  def apply(self, strategy, variables, *, finite):
    """Cross-replica: moves every average towards its variable, unless not `finite`."""
    decay = self.current_decay()

    def update(average, variable, finite, decay):
      decay = tf.where(finite, decay, 1.0)  # a skipped step leaves the average as it is
      return average.assign(decay * average + (1.0 - decay) * variable)

    for average, variable in zip(self.average, variables):
      strategy.extended.update(average, update, args=(variable, finite, decay), group=False)
    self.updates.assign_add(tf.cast(replicated.agreed(strategy, finite), tf.int64))

  def copy_to(self, variables: Sequence[tf.Variable]):
    """Sets `variables` to the averages (e.g. for export)."""
    for average, variable in zip(self.average, variables):
      variable.assign(average)

  @contextlib.contextmanager
  def swapped(self, variables: Sequence[tf.Variable]):
    """`with ema.swapped(variables):` the variables hold the averages; restored after."""
    saved = [tf.identity(v) for v in variables]
    self.copy_to(variables)
    try:
      yield
    finally:
      for variable, value in zip(variables, saved):
        variable.assign(value)
