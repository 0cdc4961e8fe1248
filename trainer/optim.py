"""AdamW on plain tf.Variables (slots made under the strategy scope) and learning-rate schedules."""

import math
from typing import Callable, Sequence, Union

import tensorflow as tf

Schedule = Callable[[tf.Tensor], tf.Tensor]


def constant(learning_rate: float) -> Schedule:
  """The same learning rate at every step."""
  return lambda step: tf.constant(learning_rate, tf.float32)


def warmup_cosine(peak: float, *, warmup_steps: int, total_steps: int,
                  final_fraction: float = 0.0) -> Schedule:
  """Linear warm-up from 0 to `peak`, then cosine decay to `final_fraction * peak`."""
  if warmup_steps < 0 or total_steps <= warmup_steps:
    raise ValueError(f"Need 0 <= warmup_steps < total_steps, got {warmup_steps} and "
                     f"{total_steps}.")

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


class AdamW(tf.Module):
  """Adam with decoupled weight decay and bias correction.

  Per step t (counting applied updates): `p -= lr * wd * p` (only for the
  variables `decay_filter` picks), then `m = b1 m + (1-b1) g`,
  `v = b2 v + (1-b2) g^2`, `p -= lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps)`.
  Call `build(variables)` under the strategy scope, then the training step
  calls `apply_one` per variable on each device, with `decays[i]`.

  Args:
    decay_filter: `decay_filter(variable) -> bool`, whether weight decay
      applies to it; by default biases and norm scales are excluded
      (`decays_matrices`). E.g. `lambda v: "embedding" not in v.name`.
  """

  def __init__(self, learning_rate: Union[float, Schedule] = 1e-3, *, beta_1: float = 0.9,
               beta_2: float = 0.999, epsilon: float = 1e-8, weight_decay: float = 0.0,
               decay_filter: Callable[[tf.Variable], bool] = decays_matrices,
               name: str = "adamw"):
    super().__init__(name=name)
    self.learning_rate = (learning_rate if callable(learning_rate)
                          else constant(float(learning_rate)))
    self.beta_1, self.beta_2 = beta_1, beta_2
    self.epsilon, self.weight_decay = epsilon, weight_decay
    self._decay_filter = decay_filter
    self.m, self.v, self.decays = [], [], []
    with self.name_scope:
      self.iterations = tf.Variable(
          0, dtype=tf.int64, trainable=False, name="iterations",
          aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)

  @property
  def built(self) -> bool:
    return bool(self.m)

  def build(self, variables: Sequence[tf.Variable]):
    """Creates the m and v slots for `variables`, in order (under the strategy scope), and
    decides which of them decay (`decays`)."""
    if self.built:
      if len(self.m) != len(variables):
        raise ValueError(f"This optimizer was built for {len(self.m)} variables, not "
                         f"{len(variables)}; use one optimizer per model.")
      return
    with self.name_scope:
      self.m = [tf.Variable(tf.zeros(v.shape, v.dtype), trainable=False,
                            name=f"m_{i}") for i, v in enumerate(variables)]
      self.v = [tf.Variable(tf.zeros(v.shape, v.dtype), trainable=False,
                            name=f"v_{i}") for i, v in enumerate(variables)]
    self.decays = [bool(self._decay_filter(v)) for v in variables]

  def apply_one(self, variable, grad, m, v, step, learning_rate, decay: bool = True):
    """Updates one variable and its slots in place (on the calling device); `decay`
    applies the weight decay (pass `decays[i]`)."""
    dtype = variable.dtype
    t = tf.cast(step + 1, dtype)
    learning_rate = tf.cast(learning_rate, dtype)
    m.assign(self.beta_1 * m + (1 - self.beta_1) * grad)
    v.assign(self.beta_2 * v + (1 - self.beta_2) * tf.square(grad))
    m_hat = m / (1 - tf.pow(self.beta_1, t))
    v_hat = v / (1 - tf.pow(self.beta_2, t))
    decayed = variable * (1 - learning_rate * self.weight_decay) if decay else variable
    return variable.assign(decayed - learning_rate * m_hat / (tf.sqrt(v_hat) + self.epsilon))
