"""From validated configs to a runnable job: strategy, model card, step, data, evaluator (one frozen Job), then its controller.

Everything that can be refused is built before the synthetic corpus is
generated (minutes on first use), so a bad flag stops the program at once.
"""

import dataclasses
import os
import time
from typing import Callable, Iterator, Optional, Tuple

from absl import logging
import numpy as np
import tensorflow as tf

from common import checks
from input import pipeline
from input import records
from input import rooms
from input import synthetic
import ops
from trainer import loss_scale as loss_scale_lib
from trainer import optim
from trainer import step as step_lib
from trainer.evaluation import evaluator as evaluator_lib
from trainer.evaluation import losses
from trainer.loop import actions
from trainer.loop import best
from trainer.loop import checkpoints
from trainer.loop import controller as controller_lib
from trainer.loop import lock
from trainer.loop import periodic_eval
from trainer.loop import recovery
from trainer.loop import sidecar as sidecar_lib
from trainer.models import card as card_lib
from trainer.program import run_record
from trainer.program import strategy as strategy_lib

# (train: the pairs or the clean speech, noise to mix or None, eval or None)
Manifests = Tuple[records.Manifest, Optional[records.Manifest], Optional[records.Manifest]]


@dataclasses.dataclass(frozen=True)
class Job:
  """Everything a run needs; building it writes nothing but the synthetic corpus."""
  configs: object  # trainer.main.Configs
  strategy: tf.distribute.Strategy
  workers: int
  out_dir: str  # this worker's model_dir (the chief's is model_dir itself)
  card: card_lib.ModelCard  # what config.json holds
  train_manifest: records.Manifest  # the stored pairs, or the clean speech a mixing run reads
  noise_manifest: Optional[records.Manifest]  # the noise a mixing run reads
  eval_manifest: Optional[records.Manifest]
  train_step: step_lib.TrainStep
  checkpoint: tf.train.Checkpoint
  evaluator: Optional[evaluator_lib.Evaluator]
  train_dataset_fn: Callable[..., pipeline.DatasetFn]  # (skip_steps, reseeds) -> dataset_fn
  loop: controller_lib.LoopConfig


def build(configs) -> Job:
  """Builds the job `configs` (a trainer.main.Configs) describe.

  Raises:
    ArgumentError: a value a library refuses (the flag of the same name).
    ValueError: the pieces do not fit (no data, model vs model_dir).
  """
  run, data = configs.run, configs.data
  if tf.io.gfile.exists(run.model_dir) and not tf.io.gfile.isdir(run.model_dir):
    raise ValueError(f"--model_dir={run.model_dir} is a file, not a directory: pass a new "
                     "directory, or a run's.")
  check_data_source(data)
  strategy = strategy_lib.make(run.strategy, num_gpus=run.num_gpus,  # before any TF op
                               cpu_replicas=run.cpu_replicas)
  task_type, task_id, chief = strategy_lib.worker(strategy)
  workers = strategy.num_replicas_in_sync // len(strategy.extended.worker_devices)
  out_dir = strategy_lib.output_dir(run.model_dir, strategy)
  real = real_manifests(data) if data.data_dir is not None else None
  sample_rate = real[0].sample_rate if real else data.sample_rate
  card = configs.model.model_card(sample_rate=sample_rate, seed=run.seed)
  if tf.train.get_checkpoint_state(os.path.join(out_dir, checkpoints.CHECKPOINT_DIR)):
    card.check(out_dir)  # a card without checkpoints (a failed first chunk) binds nothing
    if run.mode == "train":  # evaluating with another batch is fine
      run_record.check(out_dir, configs)
  segment_seconds = (real[0].segment_samples / sample_rate if real else
                     data.synthetic_seconds)
  crop_seconds = data.crop_seconds or segment_seconds
  train_step, loss_fn, host_reverb = build_train_step(
      configs, strategy, card, rirs=room_responses(data, sample_rate, crop_seconds))
  loop = loop_config(configs, crop_seconds)
  # a sidecar evaluator waits for its trainer to generate the synthetic corpus
  train_manifest, noise_manifest, eval_manifest = real or synthetic_manifests(
      configs, create=chief and run.mode != "continuous_eval")
  train_dataset_fn = _train_input(configs, train_manifest, noise_manifest, host_reverb)
  train_dataset_fn(0)  # checks the crop against the data and the service address
  logging.info("%s %d of %d workers%s: %d replica(s) on %s; %d training %s (%.2f h) at %d Hz%s.",
               task_type, task_id, workers, " (chief)" if chief else "",
               strategy.num_replicas_in_sync, strategy.extended.worker_devices,
               train_manifest.num_examples,
               "clean segments" if noise_manifest else "examples", train_manifest.total_hours,
               sample_rate, f", mixed with {noise_manifest.num_examples} noise segments "
               f"({noise_manifest.total_hours:.2f} h) in the step" if noise_manifest else "")
  return Job(
      configs=configs, strategy=strategy, workers=workers, out_dir=out_dir, card=card,
      train_manifest=train_manifest, noise_manifest=noise_manifest,
      eval_manifest=eval_manifest, train_step=train_step,
      checkpoint=tf.train.Checkpoint(model=train_step.model, optimizer=train_step.optimizer,
                                     loss_scale=train_step.loss_scale,
                                     global_step=train_step.global_step,
                                     **({"ema": train_step.ema} if train_step.ema else {})),
      evaluator=_evaluator(configs, strategy, train_step.model, loss_fn, eval_manifest),
      train_dataset_fn=train_dataset_fn, loop=loop)


def _training_input(job: Job) -> Callable[[int], Iterator]:
  """`start(step) -> iterator`: the distributed training input from global step `step`, in
  the step's current round of draws (a recovery moves it on)."""

  def start(step: int) -> Iterator:
    dataset_fn = job.train_dataset_fn(step, int(job.train_step.reseeds.numpy()))
    return iter(pipeline.distribute(job.strategy, dataset_fn,
                                    per_replica_buffer=job.configs.data.per_replica_buffer))

  return start


def controller(job: Job, *, train: bool = True) -> controller_lib.Controller:
  """Restores the newest intact checkpoint and returns the job's controller; with `train`,
  also starts the training input and records the model card in config.json.

  Raises:
    ValueError: not training, and there is no checkpoint to evaluate.
  """
  run = job.configs.run
  manager = checkpoints.manager(job.checkpoint, run.model_dir, save_dir=job.out_dir,
                                max_to_keep=run.keep_checkpoints)
  if not train and manager.latest_checkpoint is None:
    raise ValueError(f"--mode={run.mode} needs a trained model, but {run.model_dir} holds no "
                     "checkpoint: train first (--mode=train), or pass the --model_dir of a "
                     "trained run.")
  iterator, recover = None, None
  if train:
    start_input = _training_input(job)
    recover = recovery.Recovery(
        attempts=job.loop.recover_attempts, train_step=job.train_step,
        model_dir=run.model_dir, restore=lambda: checkpoints.restore_run(job.checkpoint,
                                                                         run.model_dir),
        restart_input=start_input, write=job.out_dir == run.model_dir)
    job.train_step.reseed(len(recover.history))  # a resumed run keeps its fresh draws
    iterator = start_input(int(job.train_step.global_step.numpy()))
    first = manager.latest_checkpoint is None  # the run starts
    job.card.write(job.out_dir, replace=first)
    run_record.record(job.out_dir, job.configs, step=int(job.train_step.global_step.numpy()),
                      replace=first)
  return controller_lib.Controller(
      job.train_step, iterator, manager, job.loop, evaluate=_periodic_eval(job),
      summary_dir=os.path.join(job.out_dir, "train"),
      agree=actions.stop_agreement(job.strategy) if job.workers > 1
      else lambda stop_here: stop_here,
      keep_best=_keep_best(job),
      early_stop=best.EarlyStop(run.early_stop_patience) if run.early_stop_patience else None,
      recovery=recover)


def sidecar(job: Job) -> sidecar_lib.Sidecar:
  """The sidecar evaluator of the run in --model_dir (--mode=continuous_eval)."""
  run = job.configs.run
  return sidecar_lib.Sidecar(
      checkpoint=job.checkpoint, model_dir=run.model_dir, evaluate=_periodic_eval(job),
      train_steps=run.train_steps, checkpoint_every=run.checkpoint_every,
      training=lambda: lock.training(run.model_dir),
      timeout_seconds=run.eval_timeout, keep_best=_keep_best(job))


def _periodic_eval(job: Job) -> Optional[periodic_eval.PeriodicEval]:
  """The eval as the loop runs it (on the weight average if the run keeps one)."""
  if job.evaluator is None:
    return None
  ema, variables = job.train_step.ema, step_lib.tf_variables(job.train_step.model)
  return periodic_eval.PeriodicEval(
      job.evaluator, out_dir=job.out_dir, sample_rate=job.eval_manifest.sample_rate,
      clips=job.configs.run.eval_clips,
      weights=(("ema", lambda: ema.swapped(variables)) if ema else ("raw", None)))


def _keep_best(job: Job) -> Optional[best.KeepBest]:
  metric = job.configs.run.keep_best
  if metric and job.evaluator is None:  # --eval_split names a split the data lacks
    raise ValueError(f"--keep_best={metric} needs the eval split --eval_split="
                     f"{job.configs.data.eval_split}, which {job.configs.data.data_dir} lacks.")
  return best.KeepBest(job.checkpoint, job.out_dir, metric) if metric else None


def loop_config(configs, audio_seconds_per_example: float) -> controller_lib.LoopConfig:
  run = configs.run
  return controller_lib.LoopConfig(
      train_steps=run.train_steps, steps_per_loop=run.steps_per_loop,
      log_every=run.log_every, checkpoint_every=run.checkpoint_every,
      eval_every=run.eval_every, max_skipped_steps=run.max_skipped_steps,
      examples_per_step=run.global_batch_size * run.accumulate_steps,
      audio_seconds_per_example=audio_seconds_per_example, profile_steps=run.profile_steps,
      divergence_loss=run.divergence_loss, divergence_rise=run.divergence_rise or None,
      recover_attempts=run.recover_attempts)


def synthetic_dir(configs) -> str:
  """Where the synthetic corpus lives: --synthetic_dir, or beside model_dir, named by the
  generator version and the corpus settings (so a changed corpus is never mixed up)."""
  data = configs.data
  return data.synthetic_dir or os.path.join(
      os.path.dirname(os.path.abspath(configs.run.model_dir)),
      f"synthetic-v{synthetic.VERSION}-{data.sample_rate}Hz-{data.synthetic_seconds:g}s-"
      f"{data.synthetic_examples}")


def check_data_source(data):
  """Raises ValueError unless there is data: --data_dir exists, or the synthetic corpus."""
  if data.data_dir is None and not data.synthetic:
    raise ValueError("No data: pass --data_dir=<prepared shards>, or --synthetic to train "
                     "on the generated corpus.")
  if data.data_dir is not None and not tf.io.gfile.isdir(data.data_dir):
    problem = "is a file" if tf.io.gfile.exists(data.data_dir) else "does not exist"
    raise ValueError(f"--data_dir={data.data_dir} {problem}: pass the directory that "
                     "python -m input.prepare wrote, or drop --data_dir to use the synthetic "
                     "corpus.")


def real_manifests(data) -> Manifests:
  """The prepared splits in --data_dir: the pairs (or, mixing, the clean and noise stores)
  and the eval split if it is there."""
  stores = [records.read_manifest(data.data_dir, split, kind=kind)
            for split, kind in data.train_splits().items()]
  train, noise = stores[0], stores[1] if data.mixing else None
  if data.eval_split and tf.io.gfile.exists(records.manifest_path(data.data_dir,
                                                                  data.eval_split)):
    return train, noise, records.read_manifest(data.data_dir, data.eval_split, kind="pairs")
  if data.eval_split:
    logging.warning("No %s split in %s: training without evaluation.", data.eval_split,
                    data.data_dir)
  return train, noise, None


def synthetic_manifests(configs, *, create: bool = True) -> Manifests:
  """The synthetic corpus's splits, generated on first use: the training pairs, or (mixing)
  the same examples' clean speech and noise as separate stores; and the eval pairs.

  Only one process may generate it (`create`); the others wait for it.
  """
  data, seed = configs.data, configs.run.seed
  directory = synthetic_dir(configs)
  corpus = dict(seconds=data.synthetic_seconds, sample_rate=data.sample_rate, num_shards=8)
  eval_split = data.eval_split or "eval"  # made even when this run does not evaluate: a
  # sidecar evaluator of it will
  train_splits = data.train_splits()
  if not create:  # the chief generates it: wait for its manifests
    sidecar = configs.run.mode == "continuous_eval"
    wait = configs.run.eval_timeout if sidecar else CORPUS_WAIT_SECONDS
    logging.info("Waiting up to %g s for the training run to generate the synthetic corpus "
                 "in %s.", wait, directory)
    for split in (*train_splits, eval_split):
      _wait_for(records.manifest_path(directory, split), wait,
                bound="--eval_timeout" if sidecar else "the wait for the chief")
  train = [synthetic.ensure_corpus(directory, split=split, kind=kind, seed=seed,
                                   num_examples=data.synthetic_examples, **corpus)
           for split, kind in train_splits.items()]
  evaluation_split = synthetic.ensure_corpus(
      directory, split=eval_split, seed=seed + 1000,
      num_examples=data.synthetic_eval_examples, **corpus)
  return (train[0], train[1] if data.mixing else None,
          evaluation_split if data.eval_split else None)


def room_responses(data, sample_rate: int, crop_seconds: float) -> Optional[np.ndarray]:
  """`[rooms, taps]` responses for the mix when it reverberates (--rir_proba > 0): the
  --rir_split store of --data_dir, or --simulated_rooms rooms as long as the crop (at most
  1 s), the same in every run (input.rooms, seed 0); None otherwise."""
  if not (data.mixing and data.rir_proba > 0):
    return None
  if data.rir_split:
    if data.data_dir is None:
      raise checks.ArgumentError("rir_split", data.rir_split, "names a room store in "
                                 "--data_dir; the synthetic corpus has none (drop it to "
                                 "simulate rooms).")
    responses = rooms.load(data.data_dir, data.rir_split, sample_rate=sample_rate)
    ops.mix.check_room_length(responses.shape[1], int(round(crop_seconds * sample_rate)),
                              sample_rate)
    return responses
  return np.stack([response for response, _ in rooms.simulated_set(
      data.simulated_rooms, sample_rate=sample_rate, seconds=min(1.0, crop_seconds))])


CORPUS_WAIT_SECONDS = 1800.0  # how long the other workers wait for the chief's corpus


def _wait_for(path: str, timeout_seconds: float, *, bound: str):
  deadline = time.monotonic() + timeout_seconds
  while not tf.io.gfile.exists(path):
    if time.monotonic() > deadline:
      raise FileNotFoundError(
          f"{path} did not appear within {timeout_seconds:g} s ({bound}): the training run "
          "generates the synthetic corpus. Start it first, or pass --synthetic_dir of a "
          "generated corpus.")
    time.sleep(1.0)


def _schedule(configs) -> optim.Schedule:
  opt = configs.optimization
  if opt.schedule == "constant":
    return optim.constant(opt.learning_rate)
  with checks.renamed(peak="learning_rate", total_steps="train_steps",
                      final_fraction="final_lr_fraction"):
    return optim.warmup_cosine(opt.learning_rate, warmup_steps=opt.warmup_steps,
                               total_steps=configs.run.train_steps,
                               final_fraction=opt.final_lr_fraction)


def _augmentations(data, sample_rate: int, rirs: Optional[np.ndarray]):
  """`(mix or None, on the device or None, host reverb or None)`."""
  mix = None
  if data.mixing:
    with checks.renamed(early_ms="early_reflections_ms"):
      mix = ops.Mix(sample_rate=sample_rate, snr_db=data.snr_db,
                    speech_level_db=data.speech_level_db, rir_proba=data.rir_proba, rirs=rirs,
                    early_ms=data.early_reflections_ms,
                    second_noise_proba=data.second_noise_proba, clip_proba=data.clip_proba,
                    band_limit_proba=data.band_limit_proba)
  with checks.renamed(proba="reverb_proba", keep_clean="reverb_keep_clean"):
    reverb = ops.RevEcho(sample_rate=sample_rate, proba=data.reverb_proba,
                         keep_clean=data.reverb_keep_clean) if data.reverb != "off" else None
  with checks.renamed(proba="remix_proba"):
    remix = ops.Remix(proba=data.remix_proba)
  on_device = [remix] if remix.proba > 0 else []
  on_device += [reverb] if data.reverb == "device" else []
  return (mix, ops.chain(*on_device) if on_device else None,
          reverb if data.reverb == "host" else None)


def build_train_step(configs, strategy, card: card_lib.ModelCard,
                     rirs: Optional[np.ndarray] = None):
  """Model, AdamW, loss scale, mix, augmentations and loss under `strategy` (`rirs`: the
  mix's room responses); returns `(train_step, loss_fn, host reverb or None)`."""
  run, opt = configs.run, configs.optimization
  with strategy.scope():
    model = card.build()
    optimizer = optim.AdamW(_schedule(configs), beta_1=opt.beta_1, beta_2=opt.beta_2,
                            weight_decay=opt.weight_decay)
    with checks.renamed(initial="initial_loss_scale",
                        growth_interval="loss_scale_growth_interval"):
      loss_scale = loss_scale_lib.for_precision(
          opt.loss_scale, opt.precision, initial=opt.initial_loss_scale,
          growth_interval=opt.loss_scale_growth_interval)
    ema = (optim.ExponentialMovingAverage(opt.ema_decay, warmup=opt.ema_warmup)
           if opt.ema_decay else None)
  mix, on_device, host_reverb = _augmentations(configs.data, card.sample_rate, rirs)
  loss_fn = losses.DenoiseLoss(card.sample_rate, stft_weight=configs.model.stft_weight,
                               waveform_loss=configs.model.waveform_loss,
                               intelligibility_weight=configs.model.intelligibility_weight,
                               suppression_weight=configs.model.suppression_weight)
  train_step = step_lib.make_train_step(
      model, loss_fn, optimizer, strategy, global_batch_size=run.global_batch_size,
      loss_scale=loss_scale, precision=opt.precision, augment=on_device,
      clip_norm=opt.clip_norm, steps_per_loop=run.steps_per_loop,
      jit_compile=run.jit_compile == "on" or (
          run.jit_compile == "auto" and "GPU" in strategy.extended.worker_devices[0]),
      seed=run.seed, accumulate_steps=run.accumulate_steps, ema=ema, mix=mix)
  return train_step, loss_fn, host_reverb


def _evaluator(configs, strategy, model, loss_fn,
               manifest) -> Optional[evaluator_lib.Evaluator]:
  if manifest is None:
    return None
  return evaluator_lib.Evaluator(
      strategy, model, loss_fn,
      pipeline.distribute(strategy, pipeline.make_eval_dataset_fn(
          manifest, global_batch_size=configs.run.global_batch_size)),
      sample_rate=manifest.sample_rate,
      precision_dtype=step_lib.compute_dtype(configs.optimization.precision),
      perceptual_examples=configs.run.eval_perceptual_examples)


def _train_input(configs, manifest, noise_manifest,
                 host_reverb) -> Callable[..., pipeline.DatasetFn]:
  """`(skip_steps, reseeds) -> dataset_fn` for the training input (`skip_steps` updates
  already taken, each of `accumulate_steps` micro-batches; `reseeds`: the round of draws, 0
  for the run's seed, another seed after each recovery): stored pairs, or clean speech and
  noise (`noise_manifest`) for the step to mix."""
  run, data = configs.run, configs.data

  def dataset_fn(skip_steps: int = 0, reseeds: int = 0) -> pipeline.DatasetFn:
    seed = run.seed if not reseeds else int(
        np.random.SeedSequence([run.seed, reseeds]).generate_state(1)[0])
    config = pipeline.TrainInputConfig(
        global_batch_size=run.global_batch_size, crop_seconds=data.crop_seconds or None,
        shuffle_buffer_mb=data.shuffle_buffer_mb, seed=seed, reverb=host_reverb,
        cycle_length=data.cycle_length, ram_budget_mb=data.ram_budget_mb,
        deterministic=data.deterministic_input, skip_steps=skip_steps * run.accumulate_steps,
        data_service=data.data_service, data_service_sharding=data.data_service_sharding,
        data_service_timeout=data.data_service_timeout)
    if noise_manifest is not None:
      return pipeline.make_mixing_dataset_fn(manifest, noise_manifest, config)
    return pipeline.make_train_dataset_fn(manifest, config)

  return dataset_fn
