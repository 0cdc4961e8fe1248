"""The explicit tf.distribute training step: strategy.run, one packed all-reduce, loss scaling, AdamW.

    with strategy.scope():
      model = MyModel()            # a tf.Module or a Keras 3 model, built
      optimizer = optim.AdamW(1e-3)
    train = make_train_step(model, loss_fn, optimizer, strategy, global_batch_size=64)
    metrics = train(iter(distributed_dataset))   # steps_per_loop steps, one call

Per step, on every replica: optional `augment(noisy, clean, seed)` (e.g.
`ops.RevEcho`), forward in the compute dtype, loss = sum of per-example losses
/ global batch, backward (all XLA-compiled when `jit_compile`); then one
all-reduce of all gradients plus the loss sum and example count; the finite
check runs on the reduced gradients, so every replica takes the same decision;
the update runs once in cross-replica context (`merge_call` +
`strategy.extended.update`).
"""

import functools
from typing import Callable, Dict, Optional

import tensorflow as tf

from ops import stateless
from trainer import loss_scale as loss_scale_lib
from trainer import optim

PRECISIONS = {"float32": tf.float32, "mixed_bfloat16": tf.bfloat16,
              "mixed_float16": tf.float16}
LossFn = Callable[[tf.Tensor, tf.Tensor], tf.Tensor]
Augment = Callable[[tf.Tensor, tf.Tensor, tf.Tensor], tuple]

_PACK_BYTES = 32 * 2**20


def compute_dtype(precision: str) -> tf.DType:
  """The dtype a model computes in under `precision` (variables stay float32)."""
  try:
    return PRECISIONS[precision]
  except KeyError:
    raise ValueError(f"Unknown precision {precision!r}: use one of "
                     f"{', '.join(PRECISIONS)}.") from None


def local_replicas(strategy: tf.distribute.Strategy) -> int:
  """Replicas on this worker; the default strategy (no `strategy.scope()`) has one."""
  try:
    return len(strategy.extended.worker_devices)
  except RuntimeError:  # the default strategy has no worker_devices()
    return 1


def is_keras(model) -> bool:
  """Keras models take `training=` and collect regularisation `losses` (told apart by their
  classes, so the core never imports Keras)."""
  return any(c.__module__.split(".")[0] == "keras" for c in type(model).__mro__)


def tf_variables(module) -> list:
  """The tf.Variables behind `module.trainable_variables` (Keras 3 wraps them in `.value`)."""
  return [v if isinstance(v, tf.Variable) else v.value for v in module.trainable_variables]


class TrainStep:
  """`steps_per_loop` training steps per call, inside one tf.function.

  Batch contract: each replica receives `{"noisy", "clean"[, "weight"]}` batches
  of `global_batch_size / num_replicas_in_sync` examples (what
  `InputContext.get_per_replica_batch_size` gives); a batch of any other static
  size is refused while tracing, since the gradients are divided by
  `global_batch_size`.

  Keras models are called with `training=True` (Dropout, BatchNorm in training
  mode) and their `losses` (regularisers) are added to the objective; the
  reported `loss` is the data loss alone.

  Attempted vs applied: every step that gets a batch is attempted and advances
  `global_step` (the schedule and the augmentation seeds follow it); a step
  whose all-reduced gradients are not finite is not applied (the optimizer and
  weights stay as they were, the loss scale shrinks, `skipped_steps` counts
  it). At the end of the data a call stops early: no step is attempted without
  a batch, so `global_step` does not advance, and the call's `steps` says how
  many ran.

  Attributes: `model`, `optimizer`, `loss_scale`, `global_step` (int64,
  advanced once per attempted step; pass your own to share or restore one) -
  everything a checkpoint needs.
  """

  def __init__(self, model, loss_fn: LossFn, optimizer: optim.AdamW,
               strategy: tf.distribute.Strategy, *, global_batch_size: int,
               loss_scale: Optional[loss_scale_lib.LossScale] = None,
               precision: str = "float32", augment: Optional[Augment] = None,
               clip_norm: Optional[float] = None, steps_per_loop: int = 1,
               jit_compile: bool = True, seed: int = 0,
               global_step: Optional[tf.Variable] = None):
    self._dtype = compute_dtype(precision)
    replicas = strategy.num_replicas_in_sync
    if global_batch_size % replicas:
      raise ValueError(f"global_batch_size={global_batch_size} is not divisible by the "
                       f"{replicas} replicas; use a multiple of {replicas}.")
    if steps_per_loop < 1:
      raise ValueError(f"steps_per_loop must be >= 1, got {steps_per_loop}.")
    self.model, self.optimizer, self.strategy = model, optimizer, strategy
    self._variables = tf_variables(model)
    self._keras = is_keras(model)
    if self._keras and model.compute_dtype != self._dtype.name:
      raise ValueError(
          f"precision={precision} computes in {self._dtype.name}, but the Keras model "
          f"computes in {model.compute_dtype}: build it after "
          f"keras.mixed_precision.set_global_policy({precision!r}) (or pass dtype= to its "
          "layers).")
    if not self._variables:
      raise ValueError("The model has no trainable variables yet: build it (call it once "
                       "on an example batch) under strategy.scope() before make_train_step.")
    with strategy.scope():
      self.loss_scale = loss_scale or loss_scale_lib.for_precision("auto", precision)
      optimizer.build(self._variables)
      self.global_step = global_step if global_step is not None else tf.Variable(
          0, dtype=tf.int64, trainable=False, name="global_step",
          aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
    if self.global_step.dtype != tf.int64 or self.global_step.shape.rank != 0:
      raise ValueError(f"global_step must be a scalar int64 tf.Variable, got "
                       f"{self.global_step.dtype.name} of shape {self.global_step.shape}.")
    self._check_in_scope()
    self._loss_fn, self._augment = loss_fn, augment
    self._global_batch_size, self._clip_norm = global_batch_size, clip_norm
    self.steps_per_loop = steps_per_loop
    self._seed = seed
    self._compute = tf.function(self._replica_compute, jit_compile=jit_compile)
    self._loop = tf.function(self._train_loop)

  def _check_in_scope(self):
    named = [("model variable", v) for v in self._variables] + [
        ("optimizer variable", self.optimizer.iterations),
        ("loss scale variable", self.loss_scale.scale), ("global_step", self.global_step)]
    for kind, variable in named:
      if not self.strategy.extended.variable_created_in_scope(variable):
        raise ValueError(
            f"The {kind} {variable.name} was created outside this strategy's scope. Create "
            "the model, optimizer and loss scale under `with strategy.scope():`.")

  def __call__(self, iterator, num_steps: Optional[int] = None) -> Dict[str, tf.Tensor]:
    """Runs `num_steps` (default `steps_per_loop`) steps; returns the loop's metrics.

    Returns:
      `loss` (mean per example) and `grad_norm` (mean global norm of the
      reduced, unscaled gradients) over the steps whose update was applied (a
      step that overflowed is attempted, counted in `global_step` and
      `skipped_steps`, but not averaged; NaN if none was applied),
      `steps` (attempted in this call: fewer than asked only at the end of the
      data), `applied_steps` and `skipped_in_call` (of those, applied and
      skipped as non-finite), `learning_rate`, `loss_scale`,
      `skipped_steps` (total), `global_step`, and per local replica (`[replicas]`):
      `replica_loss_sum`, `replica_examples`, `replica_grad_norm` (mean norm of
      its own contribution to the gradient, before the all-reduce),
      `replica_nonfinite` (steps whose local gradients were not finite).
    """
    steps = self.steps_per_loop if num_steps is None else num_steps
    return self._loop(iterator, tf.constant(steps, tf.int32))

  def _train_loop(self, iterator, num_steps):
    local = local_replicas(self.strategy)
    sums = {k: tf.zeros([local]) for k in ("replica_loss_sum", "replica_examples",
                                          "replica_grad_norm", "replica_nonfinite")}
    totals = {k: tf.constant(0.0) for k in ("loss_sum", "examples", "grad_norm", "applied")}
    learning_rate = tf.constant(0.0)
    steps = tf.constant(0.0)
    for _ in tf.range(num_steps):
      batch = iterator.get_next_as_optional()
      if not batch.has_value():  # end of the data: attempt nothing more
        break
      out = self.strategy.run(self._replica_step, args=(batch.get_value(),))
      local_results = {k: self.strategy.experimental_local_results(v) for k, v in out.items()}
      sums = {k: total + tf.stack([tf.cast(t, tf.float32) for t in local_results[k]])
              for k, total in sums.items()}
      applied = local_results["applied"][0] > 0  # skipped steps' values may be inf/NaN
      totals = {k: total + tf.where(applied, local_results[k][0], 0.0)
                for k, total in totals.items()}
      learning_rate = local_results["learning_rate"][0]
      steps += 1.0
    return dict(
        loss=totals["loss_sum"] / totals["examples"],  # NaN if no step was applied
        grad_norm=totals["grad_norm"] / tf.maximum(totals["applied"], 1.0),
        steps=steps, applied_steps=totals["applied"], skipped_in_call=steps - totals["applied"],
        learning_rate=learning_rate,
        loss_scale=tf.identity(self.loss_scale.scale),
        skipped_steps=tf.identity(self.loss_scale.skipped_steps),
        global_step=tf.identity(self.global_step),
        replica_loss_sum=sums["replica_loss_sum"],
        replica_examples=sums["replica_examples"],
        replica_grad_norm=sums["replica_grad_norm"] / tf.maximum(steps, 1.0),
        replica_nonfinite=sums["replica_nonfinite"])

  def _replica_compute(self, batch, seed, scale):
    """Augment, forward, loss and backward on this replica (the XLA-compiled part)."""
    noisy, clean = batch["noisy"], batch["clean"]
    if self._augment is not None:
      noisy, clean = self._augment(noisy, clean, seed)
    weight = batch.get("weight")
    if weight is None:
      weight = tf.ones(tf.shape(clean)[:1], tf.float32)
    with tf.GradientTape() as tape:
      inputs = tf.cast(noisy, self._dtype)
      prediction = self.model(inputs, training=True) if self._keras else self.model(inputs)
      per_example = tf.cast(self._loss_fn(tf.cast(clean, tf.float32),
                                          tf.cast(prediction, tf.float32)), tf.float32)
      loss_sum = tf.reduce_sum(per_example * weight)
      objective = loss_sum / self._global_batch_size
      if self._keras and self.model.losses:  # regularisers: once in the all-reduced sum
        objective += tf.add_n([tf.cast(l, tf.float32) for l in self.model.losses]) / (
            self.strategy.num_replicas_in_sync)
      scaled_loss = objective * scale
    grads = tape.gradient(scaled_loss, self._variables)
    finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in grads])
    local_norm = tf.linalg.global_norm(grads) / scale
    return grads, loss_sum, tf.reduce_sum(weight), local_norm, finite

  def _replica_step(self, batch):
    context = tf.distribute.get_replica_context()
    per_replica = batch["clean"].shape[0]  # static for batches dropped to full size
    replicas = self.strategy.num_replicas_in_sync
    if per_replica is not None and per_replica * replicas != self._global_batch_size:
      raise ValueError(
          f"Each replica gets {per_replica} examples per step, x {replicas} replicas = "
          f"{per_replica * replicas}, but global_batch_size={self._global_batch_size}: "
          "batch each input pipeline by InputContext.get_per_replica_batch_size("
          "global_batch_size), or pass the global_batch_size the data has.")
    seed = stateless.fold_in(stateless.fold_in([self._seed, 0x5EED], self.global_step),
                          context.replica_id_in_sync_group)
    scale = tf.identity(self.loss_scale.scale)
    grads, loss_sum, examples, local_norm, local_finite = self._compute(batch, seed, scale)
    reduced = context.all_reduce(
        tf.distribute.ReduceOp.SUM, list(grads) + [loss_sum, examples],
        options=tf.distribute.experimental.CommunicationOptions(bytes_per_pack=_PACK_BYTES))
    grads = [g / scale for g in reduced[:-2]]
    finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in grads])
    norm = tf.linalg.global_norm(grads)
    if self._clip_norm:
      grads, _ = tf.clip_by_global_norm(grads, self._clip_norm, use_norm=norm)
    learning_rate = self.optimizer.learning_rate(self.global_step)
    context.merge_call(self._apply, args=(grads, finite, learning_rate))
    return dict(replica_loss_sum=loss_sum, replica_examples=examples,
                replica_grad_norm=local_norm,
                replica_nonfinite=tf.logical_not(local_finite),
                loss_sum=reduced[-2], examples=reduced[-1], grad_norm=norm,
                applied=tf.cast(finite, tf.float32), learning_rate=learning_rate)

  def _apply(self, strategy, grads, finite, learning_rate):
    """Cross-replica: update every variable on its devices, unless the step overflowed."""
    optimizer = self.optimizer
    step = tf.identity(optimizer.iterations)

    def update(variable, grad, m, v, finite, learning_rate, decay):
      return tf.cond(finite,
                     lambda: optimizer.apply_one(variable, grad, m, v, step, learning_rate,
                                                 decay),
                     lambda: tf.identity(variable))

    for variable, grad, m, v, decay in zip(self._variables, grads, optimizer.m, optimizer.v,
                                           optimizer.decays):
      strategy.extended.update(variable, functools.partial(update, decay=decay),
                               args=(grad, m, v, finite, learning_rate), group=False)
    decided = strategy.experimental_local_results(finite)[0]
    optimizer.iterations.assign_add(tf.cast(decided, tf.int64))
    self.loss_scale.update(decided)
    self.global_step.assign_add(1)


def make_train_step(model, loss_fn: LossFn, optimizer: optim.AdamW,
                    strategy: tf.distribute.Strategy, **kwargs) -> TrainStep:
  """Builds the training step; see `TrainStep` for the keyword arguments.

  Args:
    model: a callable with `trainable_variables` (tf.Module or Keras 3 model),
      built under `strategy.scope()`, mapping `[batch, time]` noisy audio in
      the compute dtype to an estimate of the clean audio.
    loss_fn: `loss_fn(clean, prediction) -> [batch]` per-example losses.
    optimizer: an `optim.AdamW` created under `strategy.scope()`.
    strategy: any tf.distribute strategy.
    **kwargs: `global_batch_size` (required), `loss_scale`, `precision`,
      `augment`, `clip_norm`, `steps_per_loop`, `jit_compile`, `seed`,
      `global_step`.

  Returns:
    A `TrainStep`: call it with a (distributed) iterator.
  """
  return TrainStep(model, loss_fn, optimizer, strategy, **kwargs)
