"""The explicit tf.distribute training step: strategy.run, one packed all-reduce, loss scaling, the optimizer's update.

    with strategy.scope():
      model = MyModel()            # a tf.Module or a Keras 3 model, built
      optimizer = optim.AdamW(1e-3)
    train = make_train_step(model, loss_fn, optimizer, strategy, global_batch_size=64)
    metrics = train(iter(distributed_dataset))   # steps_per_loop steps, one call

Per step, on every replica: for `{clean, noise}` batches, `mix(clean, noise, seed)`
(`ops.Mix`) makes the noisy input and its target; then optional
`augment(noisy, clean, seed)` (e.g. `ops.RevEcho`), forward in the compute dtype,
loss = sum of per-example losses / global batch, backward (all XLA-compiled when
`jit_compile`); then one all-reduce of all gradients plus the loss sum and example count; the finite
check runs on the reduced gradients, so every replica takes the same decision;
the optimizer's update runs once in cross-replica context (`merge_call`, then
`optimizer.apply`, which updates each variable with `strategy.extended.update`).
"""

import functools
from typing import Callable, Dict, Optional

import tensorflow as tf

from common import checks
from ops import stateless
from trainer import loss_scale as loss_scale_lib
from trainer import optim
from trainer import replicated
from trainer.models import contract

PRECISIONS = {"float32": tf.float32, "mixed_bfloat16": tf.bfloat16,
              "mixed_float16": tf.float16}
LossFn = Callable[[tf.Tensor, tf.Tensor], tf.Tensor]
Augment = Callable[[tf.Tensor, tf.Tensor, tf.Tensor], tuple]
# mix(clean, noise, seed) -> (noisy, target)
Mixer = Callable[[tf.Tensor, tf.Tensor, tf.Tensor], tuple]

_MIX_STREAM = 0x4D4958  # the mix's draws: a stream of their own beside the augmentation's

_PACK_BYTES = 32 * 2**20


def compute_dtype(precision: str) -> tf.DType:
  """The dtype a model computes in under `precision` (variables stay float32)."""
  return PRECISIONS[checks.one_of("precision", precision, list(PRECISIONS))]


def check_batch(global_batch_size: int, replicas: int) -> int:
  """`global_batch_size`, if it splits evenly over `replicas` (raises ArgumentError)."""
  checks.at_least("global_batch_size", global_batch_size, 1)
  if global_batch_size % replicas:
    raise checks.ArgumentError("global_batch_size", global_batch_size,
                               f"is not divisible by the {replicas} replicas; use a multiple "
                               f"of {replicas}.")
  return global_batch_size


def local_replicas(strategy: tf.distribute.Strategy) -> int:
  """Replicas on this worker; the default strategy (no `strategy.scope()`) has one."""
  try:
    return len(strategy.extended.worker_devices)
  except RuntimeError:  # the default strategy has no worker_devices()
    return 1


class TrainStep:
  """`steps_per_loop` training steps per call, inside one tf.function.

  Batch contract: each replica receives `{"noisy", "clean"[, "weight"]}` batches
  (or, with `mix`, `{"clean", "noise"[, "weight"]}`) of `global_batch_size / num_replicas_in_sync` examples (what
  `InputContext.get_per_replica_batch_size` gives); a batch of any other size
  is refused (while tracing when the size is static, when the step runs when
  it is not), since the gradients are divided by `global_batch_size`.

  Keras models are called with `training=True` (Dropout, BatchNorm in training
  mode) and their `losses` (regularisers) are added to the objective; the
  reported `loss` is the data loss alone.

  Attempted vs applied: every step that gets a batch is attempted and advances
  `global_step` (the schedule and the augmentation seeds follow it); a step
  whose all-reduced gradients are not finite is not applied (the optimizer and
  weights stay as they were, the loss scale shrinks, `skipped_steps` counts
  it). At the end of the data a call stops early: no step is attempted without
  a batch, so `global_step` does not advance, and the call's `steps` says how
  many ran. Non-finite steps (skipped, or with a non-finite loss) are also
  counted in a row across calls (`nonfinite_streak`), so a guard can tell 50
  scattered skips from 50 consecutive ones.

  Args (keyword-only):
    model: a callable with `trainable_variables` (tf.Module or Keras 3 model),
      built under `strategy.scope()`, mapping `[batch, time]` noisy audio in
      the compute dtype to an estimate of the clean audio.
    loss_fn: `loss_fn(clean, prediction) -> [batch]` per-example losses.
    optimizer: an `optim.Optimizer` (e.g. `optim.AdamW`) created under the scope.
    strategy: any tf.distribute strategy.
    global_batch_size: examples per step over all replicas.
    loss_scale: a `loss_scale.LossScale` made under the scope (default: the
      precision's, `loss_scale.for_precision("auto", precision)`).
    precision: float32 | mixed_bfloat16 | mixed_float16 (variables stay float32).
    augment: `augment(noisy, clean, seed) -> (noisy, clean)` run per replica
      inside the compiled step (e.g. `ops.RevEcho`, `ops.chain(...)`).
    mix: `mix(clean, noise, seed) -> (noisy, target)` (e.g. `ops.Mix`), run per replica
      inside the compiled step before `augment`, for input of separate clean speech and
      noise (`input.pipeline.make_mixing_dataset_fn`); its draws get their own seed.
    clip_norm: clip the global norm of the reduced gradients (None: no clipping).
    steps_per_loop: steps per call.
    jit_compile: XLA-compile each replica's augment/forward/backward.
    seed: of the augmentation draws (folded with the step and the replica).
    global_step: a scalar int64 variable to advance (default: a new one).
    accumulate_steps: micro-batches per update. Each replica sums the gradients
      of `accumulate_steps` consecutive micro-batches of `global_batch_size`
      examples (what the input pipeline yields), and the sum is all-reduced
      once, checked for inf/NaN, unscaled and applied as one update: the same
      update as one batch of `global_batch_size * accumulate_steps` examples.
      `global_step`, `steps_per_loop`, the schedule and the metrics count
      updates. Nothing of a partial update is kept (nor checkpointed): at the
      end of the data, or after a resume, the next update starts afresh.
    ema: an `optim.ExponentialMovingAverage` made under the scope, updated after
      every applied update (skipped ones are not averaged).

  Attributes: `model`, `optimizer`, `loss_scale`, `global_step` (int64,
  advanced once per attempted step) and `ema` (or None) - everything a
  checkpoint needs - and `reseeds` (int64, set by `reseed`: which round of
  augmentation draws the steps take).
  """

  def __init__(self, *, model, loss_fn: LossFn, optimizer: optim.Optimizer,
               strategy: tf.distribute.Strategy, global_batch_size: int,
               loss_scale: Optional[loss_scale_lib.LossScale] = None,
               precision: str = "float32", augment: Optional[Augment] = None,
               clip_norm: Optional[float] = None, steps_per_loop: int = 1,
               jit_compile: bool = True, seed: int = 0,
               global_step: Optional[tf.Variable] = None, accumulate_steps: int = 1,
               ema: Optional[optim.ExponentialMovingAverage] = None,
               mix: Optional[Mixer] = None):
    self._dtype = compute_dtype(precision)
    self._global_batch_size = check_batch(global_batch_size, strategy.num_replicas_in_sync)
    self.steps_per_loop = checks.at_least("steps_per_loop", steps_per_loop, 1)
    self.accumulate_steps = checks.at_least("accumulate_steps", accumulate_steps, 1)
    self._clip_norm = None if clip_norm is None else checks.positive("clip_norm", clip_norm)
    self.model, self.optimizer, self.strategy = model, optimizer, strategy
    self._keras = contract.is_keras(model)
    self._variables = self._trainable_variables(precision)
    with strategy.scope():
      self.loss_scale = loss_scale or loss_scale_lib.for_precision("auto", precision)
      optimizer.build(self._variables)
      self.ema = ema
      if ema is not None:
        ema.build(self._variables)
      self.global_step = _check_global_step(global_step) if global_step is not None else (
          replicated.counter("global_step"))
      self._streak = replicated.counter("nonfinite_streak")
      self.reseeds = replicated.counter("reseeds")
    self._check_in_scope()
    self._loss_fn, self._augment, self._mix, self._seed = loss_fn, augment, mix, seed
    self._compute = tf.function(self._accumulate, jit_compile=jit_compile)
    self._loop = tf.function(self._train_loop)

  def _trainable_variables(self, precision: str) -> list:
    if self._keras and self.model.compute_dtype != self._dtype.name:
      raise ValueError(
          f"precision={precision} computes in {self._dtype.name}, but the Keras model "
          f"computes in {self.model.compute_dtype}: build it after "
          f"keras.mixed_precision.set_global_policy({precision!r}) (or pass dtype= to its "
          "layers).")
    variables = contract.tf_variables(self.model)
    if not variables:
      raise ValueError("The model has no trainable variables yet: build it (call it once "
                       "on an example batch) under strategy.scope() before make_train_step.")
    return variables

  def _check_in_scope(self):
    named = [("model variable", v) for v in self._variables] + [
        ("optimizer variable", self.optimizer.iterations),
        ("loss scale variable", self.loss_scale.scale), ("global_step", self.global_step)]
    for kind, variable in named:
      if not self.strategy.extended.variable_created_in_scope(variable):
        raise ValueError(
            f"The {kind} {variable.name} was created outside this strategy's scope. Create "
            "the model, optimizer and loss scale under `with strategy.scope():`.")

  def reseed(self, round_: int):
    """Moves the augmentation draws to round `round_` (0: the original ones) and forgets the
    non-finite streak: after a recovery restored a checkpoint, the steps it repeats must not
    replay the draws that diverged."""
    self.reseeds.assign(checks.at_least("reseeds", round_, 0))
    self._streak.assign(0)

  def __call__(self, iterator, num_steps: Optional[int] = None) -> Dict[str, tf.Tensor]:
    """Runs `num_steps` (default `steps_per_loop`) steps; returns the loop's metrics.

    Returns:
      `loss` (mean per example) and `grad_norm` (mean global norm of the
      reduced, unscaled gradients) over the steps whose update was applied (a
      step that overflowed is attempted, counted in `global_step` and
      `skipped_steps`, but not averaged; NaN if none was applied),
      `steps` (attempted in this call: fewer than asked only at the end of the
      data), `applied_steps` and `skipped_in_call` (of those, applied and
      skipped as non-finite), `nonfinite_streak` (non-finite steps in a row at
      the end of the call, counting from earlier calls) and
      `longest_nonfinite_streak` (the longest such run reached in this call),
      `learning_rate`, `loss_scale`, `skipped_steps` (total), `global_step`,
      and per local replica (`[replicas]`): `replica_loss_sum`,
      `replica_examples`, `replica_grad_norm` (mean norm of its own
      contribution to the gradient, before the all-reduce),
      `replica_nonfinite` (steps whose local gradients were not finite).
    """
    steps = self.steps_per_loop if num_steps is None else num_steps
    return self._loop(iterator, tf.constant(steps, tf.int32))

  def _train_loop(self, iterator, num_steps):
    local = local_replicas(self.strategy)
    sums = {k: tf.zeros([local]) for k in ("replica_loss_sum", "replica_examples",
                                          "replica_grad_norm", "replica_nonfinite")}
    totals = {k: tf.constant(0.0) for k in ("loss_sum", "examples", "grad_norm", "applied")}
    learning_rate, steps = tf.constant(0.0), tf.constant(0.0)
    streak = self._streak.read_value()
    longest = streak
    for _ in tf.range(num_steps):
      batches = [iterator.get_next_as_optional() for _ in range(self.accumulate_steps)]
      if not functools.reduce(tf.logical_and, [b.has_value() for b in batches]):
        break  # end of the data: attempt nothing more (a partial update is dropped)
      out = self.strategy.run(self._replica_step,
                              args=(tuple(b.get_value() for b in batches),))
      local_results = {k: self.strategy.experimental_local_results(v) for k, v in out.items()}
      sums = {k: total + tf.stack([tf.cast(t, tf.float32) for t in local_results[k]])
              for k, total in sums.items()}
      applied = local_results["applied"][0] > 0  # skipped steps' values may be inf/NaN
      totals = {k: total + tf.where(applied, local_results[k][0], 0.0)
                for k, total in totals.items()}
      streak = tf.where(local_results["nonfinite"][0], streak + 1, tf.zeros_like(streak))
      longest = tf.maximum(longest, streak)
      learning_rate = local_results["learning_rate"][0]
      steps += 1.0
    self._streak.assign(streak)
    return dict(
        loss=totals["loss_sum"] / totals["examples"],  # NaN if no step was applied
        grad_norm=totals["grad_norm"] / tf.maximum(totals["applied"], 1.0),
        steps=steps, applied_steps=totals["applied"], skipped_in_call=steps - totals["applied"],
        nonfinite_streak=streak, longest_nonfinite_streak=longest,
        learning_rate=learning_rate,
        loss_scale=tf.identity(self.loss_scale.scale),
        skipped_steps=tf.identity(self.loss_scale.skipped_steps),
        global_step=tf.identity(self.global_step),
        replica_loss_sum=sums["replica_loss_sum"],
        replica_examples=sums["replica_examples"],
        replica_grad_norm=sums["replica_grad_norm"] / tf.maximum(steps, 1.0),
        replica_nonfinite=sums["replica_nonfinite"])

  def _micro_step(self, batch, seed, scale):
    """Mix, augment, forward, loss and backward of one micro-batch on this replica."""
    noisy, clean = self._inputs(batch, seed)
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
      # The mean over the update's global_batch_size * accumulate_steps examples, once the
      # micro-batches and replicas are summed; regularisers count once in that sum.
      objective = loss_sum / (self._global_batch_size * self.accumulate_steps)
      if self._keras and self.model.losses:
        objective += tf.add_n([tf.cast(l, tf.float32) for l in self.model.losses]) / (
            self.strategy.num_replicas_in_sync * self.accumulate_steps)
      scaled_loss = objective * scale
    grads = tape.gradient(scaled_loss, self._variables)
    finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in grads])
    return grads, loss_sum, tf.reduce_sum(weight), finite

  def _inputs(self, batch, seed):
    """`(noisy, clean)` of a batch: as stored, or mixed from its clean speech and noise."""
    if ("noise" in batch) != (self._mix is not None):
      problem = ("separate clean speech and noise need a mix" if "noise" in batch
                 else "a mix needs batches of clean speech and noise")
      raise ValueError(
          f"The batches hold {sorted(batch)}: {problem} (make_train_step(mix=ops.Mix(...)) "
          "with input.pipeline.make_mixing_dataset_fn; stored pairs: neither).")
    if self._mix is None:
      return batch["noisy"], batch["clean"]
    return self._mix(batch["clean"], batch["noise"], stateless.fold_in(seed, _MIX_STREAM))

  def _check_replica_batch(self, batch):
    """Refuses a per-replica batch that does not make `global_batch_size`; returns the batch
    (with a run-time check attached when its size is not static)."""
    replicas = self.strategy.num_replicas_in_sync
    expected = self._global_batch_size // replicas
    advice = ("batch each input pipeline by InputContext.get_per_replica_batch_size("
              "global_batch_size) with drop_remainder=True, or pass the global_batch_size "
              "the data has.")
    per_replica = batch["clean"].shape[0]
    if per_replica is not None:
      if per_replica != expected:
        raise ValueError(f"Each replica gets {per_replica} examples per step, x {replicas} "
                         f"replicas = {per_replica * replicas}, but global_batch_size="
                         f"{self._global_batch_size}: {advice}")
      return batch
    check = tf.debugging.assert_equal(
        tf.shape(batch["clean"])[0], expected,
        message=f"A replica's batch (its size is the first value below) is not "
                f"global_batch_size={self._global_batch_size} / {replicas} replicas: {advice}")
    with tf.control_dependencies([check]):
      return {k: tf.identity(v) for k, v in batch.items()}

  def _accumulate(self, batches, seed, scale):
    """This replica's micro-batches (the XLA-compiled part): their summed (scaled)
    gradients, loss sum and examples, the norm of its unscaled contribution, and whether
    every gradient was finite."""
    grads, loss_sum, examples, finite = None, 0.0, 0.0, tf.constant(True)
    for k, batch in enumerate(batches):
      micro_seed = seed if len(batches) == 1 else stateless.fold_in(seed, k)
      micro_grads, micro_loss, micro_examples, micro_finite = self._micro_step(
          batch, micro_seed, scale)
      grads = micro_grads if grads is None else [a + b for a, b in zip(grads, micro_grads)]
      loss_sum, examples = loss_sum + micro_loss, examples + micro_examples
      finite = tf.logical_and(finite, micro_finite)
    return grads, loss_sum, examples, tf.linalg.global_norm(grads) / scale, finite

  def _replica_step(self, batches):
    context = tf.distribute.get_replica_context()
    base = tf.stack([tf.constant(self._seed, tf.int64), 0x5EED + self.reseeds])
    seed = stateless.fold_in(stateless.fold_in(base, self.global_step),
                             context.replica_id_in_sync_group)
    scale = tf.identity(self.loss_scale.scale)
    batches = tuple(self._check_replica_batch(batch) for batch in batches)  # outside XLA
    grads, loss_sum, examples, local_norm, local_finite = self._compute(batches, seed, scale)
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
                applied=tf.cast(finite, tf.float32), learning_rate=learning_rate,
                nonfinite=tf.logical_not(finite & tf.math.is_finite(reduced[-2])))

  def _apply(self, strategy, grads, finite, learning_rate):
    """Cross-replica: the optimizer's update (unless the step overflowed), then the loss
    scale and the step counter."""
    self.optimizer.apply(strategy, self._variables, grads, finite=finite,
                         learning_rate=learning_rate)
    if self.ema is not None:  # after the update: it averages the new weights
      self.ema.apply(strategy, self._variables, finite=finite)
    self.loss_scale.update(replicated.agreed(strategy, finite))
    self.global_step.assign_add(1)


def _check_global_step(variable: tf.Variable) -> tf.Variable:
  if variable.dtype != tf.int64 or variable.shape.rank != 0:
    raise ValueError(f"global_step must be a scalar int64 tf.Variable, got "
                     f"{variable.dtype.name} of shape {variable.shape}.")
  return variable


def make_train_step(model, loss_fn: LossFn, optimizer: optim.Optimizer,
                    strategy: tf.distribute.Strategy, *, global_batch_size: int,
                    loss_scale: Optional[loss_scale_lib.LossScale] = None,
                    precision: str = "float32", augment: Optional[Augment] = None,
                    clip_norm: Optional[float] = None, steps_per_loop: int = 1,
                    jit_compile: bool = True, seed: int = 0,
                    global_step: Optional[tf.Variable] = None,
                    accumulate_steps: int = 1,
                    ema: Optional[optim.ExponentialMovingAverage] = None,
                    mix: Optional[Mixer] = None) -> TrainStep:
  """Builds the training step (the arguments are `TrainStep`'s); call it with a
  (distributed) iterator."""
  return TrainStep(model=model, loss_fn=loss_fn, optimizer=optimizer, strategy=strategy,
                   global_batch_size=global_batch_size, loss_scale=loss_scale,
                   precision=precision, augment=augment, clip_norm=clip_norm,
                   steps_per_loop=steps_per_loop, jit_compile=jit_compile, seed=seed,
                   global_step=global_step, accumulate_steps=accumulate_steps, ema=ema, mix=mix)
