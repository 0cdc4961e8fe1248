"""From validated configs to a runnable job: strategy, data, step, checkpoint, evaluator (one frozen Job), then its controller."""

import dataclasses
import json
import os
import time
from typing import Callable, Optional

from absl import logging
import tensorflow as tf

from common import files
from input import pipeline
from input import records
from input import synthetic
import ops
from trainer.loop import actions
from trainer.loop import checkpoints
from trainer.loop import controller as controller_lib
from trainer.evaluation import evaluator
from trainer import export
from trainer import loss_scale as loss_scale_lib
from trainer.evaluation import losses
from trainer import optim
from trainer import step as step_lib
from trainer.program import strategy as strategy_lib


@dataclasses.dataclass(frozen=True)
class Job:
  """Everything a run needs; building it writes nothing."""
  configs: object  # trainer.main.Configs
  strategy: tf.distribute.Strategy
  workers: int
  out_dir: str  # this worker's model_dir (the chief's is model_dir itself)
  description: dict  # what config.json holds
  train_manifest: records.Manifest
  eval_manifest: Optional[records.Manifest]
  train_step: step_lib.TrainStep
  checkpoint: tf.train.Checkpoint
  evaluator: Optional[evaluator.Evaluator]
  train_dataset_fn: Callable[[int], pipeline.DatasetFn]  # skip_steps -> dataset_fn
  audio_seconds_per_example: float


def build(configs) -> Job:
  """Builds the job `configs` (a trainer.main.Configs) describe; raises ValueError naming the
  problem if the pieces do not fit (batch vs replicas, model vs model_dir, crop vs data)."""
  run, data = configs.run, configs.data
  strategy = strategy_lib.make(run.strategy, num_gpus=run.num_gpus,
                               cpu_replicas=run.cpu_replicas)
  replicas = strategy.num_replicas_in_sync
  if run.global_batch_size % replicas:
    raise ValueError(f"--global_batch_size={run.global_batch_size} is not divisible by "
                     f"the {replicas} replicas; use a multiple of {replicas}.")
  task_type, task_id, chief = strategy_lib.worker(strategy)
  workers = replicas // len(strategy.extended.worker_devices)
  out_dir = strategy_lib.output_dir(run.model_dir, strategy)
  train_manifest, eval_manifest = manifests(configs, create=chief)
  description = model_description(configs, train_manifest.sample_rate)
  check_description(out_dir, description)
  logging.info("%s %d of %d workers%s: %d replica(s) on %s; %d training examples (%.2f h) "
               "at %d Hz.", task_type, task_id, workers, " (chief)" if chief else "",
               replicas, strategy.extended.worker_devices, train_manifest.num_examples,
               train_manifest.total_hours, train_manifest.sample_rate)
  train_step, loss_fn, reverb = build_train_step(configs, strategy, description,
                                                 train_manifest.sample_rate)
  return Job(
      configs=configs, strategy=strategy, workers=workers, out_dir=out_dir,
      description=description, train_manifest=train_manifest, eval_manifest=eval_manifest,
      train_step=train_step,
      checkpoint=tf.train.Checkpoint(model=train_step.model, optimizer=train_step.optimizer,
                                     loss_scale=train_step.loss_scale,
                                     global_step=train_step.global_step),
      evaluator=_evaluator(configs, strategy, train_step.model, loss_fn, eval_manifest),
      train_dataset_fn=_train_input(configs, train_manifest,
                                    reverb if data.reverb == "host" else None),
      audio_seconds_per_example=(data.crop_seconds or train_manifest.segment_samples
                                 / train_manifest.sample_rate))


def controller(job: Job, *, train: bool = True) -> controller_lib.Controller:
  """Restores the newest intact checkpoint and returns the job's controller; with `train`,
  also starts the training input and records the model in config.json."""
  run, data = job.configs.run, job.configs.data
  manager = checkpoints.manager(job.checkpoint, run.model_dir, save_dir=job.out_dir,
                                max_to_keep=run.keep_checkpoints)
  evaluate = None
  if job.evaluator is not None:
    evaluate = evaluator.PeriodicEval(job.evaluator, out_dir=job.out_dir,
                                       sample_rate=job.eval_manifest.sample_rate,
                                       clips=run.eval_clips)
  iterator = None
  if train:
    start = int(job.train_step.global_step.numpy())
    iterator = iter(pipeline.distribute(job.strategy, job.train_dataset_fn(start),
                                        per_replica_buffer=data.per_replica_buffer))
    write_description(job.out_dir, job.description)  # only now: the run starts
  return controller_lib.Controller(
      job.train_step, iterator, manager, loop_config(job), evaluate=evaluate,
      summary_dir=os.path.join(job.out_dir, "train"),
      agree=actions.stop_agreement(job.strategy) if job.workers > 1
      else lambda stop_here: stop_here)


def loop_config(job: Job) -> controller_lib.LoopConfig:
  run = job.configs.run
  return controller_lib.LoopConfig(
      train_steps=run.train_steps, steps_per_loop=run.steps_per_loop,
      log_every=run.log_every, checkpoint_every=run.checkpoint_every,
      eval_every=run.eval_every, max_skipped_steps=run.max_skipped_steps,
      examples_per_step=run.global_batch_size,
      audio_seconds_per_example=job.audio_seconds_per_example,
      profile_steps=run.profile_steps)


def synthetic_dir(configs) -> str:
  """Where the synthetic corpus lives: --synthetic_dir, or beside model_dir, named by the
  generator version and the corpus settings (so a changed corpus is never mixed up)."""
  data = configs.data
  return data.synthetic_dir or os.path.join(
      os.path.dirname(os.path.abspath(configs.run.model_dir)),
      f"synthetic-v{synthetic.VERSION}-{data.sample_rate}Hz-{data.synthetic_seconds:g}s-"
      f"{data.synthetic_examples}")


def manifests(configs, *, create: bool = True):
  """`(train, eval or None)` manifests, generating the synthetic corpus on first use.

  Only one process may generate it (`create`); the others wait for it.
  """
  data, seed = configs.data, configs.run.seed
  if data.data_dir is not None:
    train = records.read_manifest(data.data_dir, data.train_split)
    evaluation_split = None
    if data.eval_split and tf.io.gfile.exists(records.manifest_path(data.data_dir,
                                                                    data.eval_split)):
      evaluation_split = records.read_manifest(data.data_dir, data.eval_split)
    elif data.eval_split:
      logging.warning("No %s split in %s: training without evaluator.", data.eval_split,
                      data.data_dir)
    return train, evaluation_split
  directory = synthetic_dir(configs)
  corpus = dict(seconds=data.synthetic_seconds, sample_rate=data.sample_rate, num_shards=8)
  if not create:
    for split in filter(None, (data.train_split, data.eval_split)):
      _wait_for(records.manifest_path(directory, split))
  train = synthetic.ensure_corpus(directory, split=data.train_split, seed=seed,
                                  num_examples=data.synthetic_examples, **corpus)
  evaluation_split = synthetic.ensure_corpus(
      directory, split=data.eval_split or "eval", seed=seed + 1000,
      num_examples=data.synthetic_eval_examples, **corpus) if data.eval_split else None
  return train, evaluation_split


def _wait_for(path: str, timeout_seconds: float = 1800.0):
  deadline = time.monotonic() + timeout_seconds
  while not tf.io.gfile.exists(path):
    if time.monotonic() > deadline:
      raise FileNotFoundError(f"{path} did not appear within {timeout_seconds:.0f} s: is the "
                              "chief generating the synthetic corpus?")
    time.sleep(1.0)


def model_description(configs, sample_rate: int) -> dict:
  """What export and denoise need to rebuild the model; stored as model_dir/config.json."""
  return dict(architecture=configs.model.architecture, model=configs.model.model_kwargs(),
              sample_rate=sample_rate, seed=configs.run.seed)


def check_description(model_dir: str, description: dict):
  """Raises if `model_dir` holds a model other than the one `description` describes."""
  path = os.path.join(model_dir, export.CONFIG_FILE)
  if tf.io.gfile.exists(path):
    with tf.io.gfile.GFile(path) as f:
      stored = json.load(f)
    if stored != description:
      raise ValueError(f"{model_dir} holds a model trained with {stored}, but the flags "
                       f"describe {description}. Use the same model flags, or a new "
                       "--model_dir.")


def write_description(model_dir: str, description: dict):
  """Records the model for export and denoise, once the run is known to start."""
  path = os.path.join(model_dir, export.CONFIG_FILE)
  if not tf.io.gfile.exists(path):
    files.write_json(path, description)


def build_train_step(configs, strategy, description: dict, sample_rate: int):
  """Model, AdamW, loss scale, reverb and loss under `strategy`; returns
  `(train_step, loss_fn, reverb or None)`."""
  run, data, opt = configs.run, configs.data, configs.optimization
  schedule = (optim.constant(opt.learning_rate) if opt.schedule == "constant" else
              optim.warmup_cosine(opt.learning_rate, warmup_steps=opt.warmup_steps,
                                  total_steps=run.train_steps,
                                  final_fraction=opt.final_lr_fraction))
  with strategy.scope():
    model = export.build_model(description)
    optimizer = optim.AdamW(schedule, beta_1=opt.beta_1, beta_2=opt.beta_2,
                            weight_decay=opt.weight_decay)
    loss_scale = loss_scale_lib.for_precision(
        opt.loss_scale, opt.precision, initial=opt.initial_loss_scale,
        growth_interval=opt.loss_scale_growth_interval)
  reverb = ops.RevEcho(sample_rate=sample_rate, proba=data.reverb_proba,
                       keep_clean=data.reverb_keep_clean) if data.reverb != "off" else None
  on_device = [ops.Remix(proba=data.remix_proba)] if data.remix_proba > 0 else []
  on_device += [reverb] if data.reverb == "device" else []
  loss_fn = losses.DenoiseLoss(sample_rate, stft_weight=configs.model.stft_weight,
                                waveform=configs.model.waveform_loss)
  train_step = step_lib.make_train_step(
      model, loss_fn, optimizer, strategy, global_batch_size=run.global_batch_size,
      loss_scale=loss_scale, precision=opt.precision,
      augment=ops.chain(*on_device) if on_device else None, clip_norm=opt.clip_norm,
      steps_per_loop=run.steps_per_loop,
      jit_compile=run.jit_compile == "on" or (
          run.jit_compile == "auto" and "GPU" in strategy.extended.worker_devices[0]),
      seed=run.seed)
  return train_step, loss_fn, reverb


def _evaluator(configs, strategy, model, loss_fn, manifest) -> Optional[evaluator.Evaluator]:
  if manifest is None:
    return None
  return evaluator.Evaluator(
      strategy, model, loss_fn,
      pipeline.distribute(strategy, pipeline.make_eval_dataset_fn(
          manifest, global_batch_size=configs.run.global_batch_size)),
      sample_rate=manifest.sample_rate,
      precision_dtype=step_lib.compute_dtype(configs.optimization.precision),
      perceptual_examples=configs.run.eval_perceptual_examples)


def _train_input(configs, manifest, host_reverb) -> Callable[[int], pipeline.DatasetFn]:
  """`skip_steps -> dataset_fn` for the training input."""
  run, data = configs.run, configs.data

  def dataset_fn(skip_steps: int = 0) -> pipeline.DatasetFn:
    return pipeline.make_train_dataset_fn(manifest, pipeline.TrainInputConfig(
        global_batch_size=run.global_batch_size, crop_seconds=data.crop_seconds,
        shuffle_buffer_mb=data.shuffle_buffer_mb, seed=run.seed, reverb=host_reverb,
        cycle_length=data.cycle_length, ram_budget_mb=data.ram_budget_mb,
        deterministic=data.deterministic_input, skip_steps=skip_steps,
        data_service=data.data_service, data_service_sharding=data.data_service_sharding,
        data_service_timeout=data.data_service_timeout))

  return dataset_fn
