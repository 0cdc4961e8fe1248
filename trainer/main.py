"""The training program: python -m trainer.main --flagfile=a100.flags (a bare name means flags/)

Builds the strategy, data (input/), the default denoiser, AdamW, loss scale and
the training step from validated flags, then runs the outer loop
(trainer.loop) with checkpoints, TensorBoard and evaluation in --model_dir.
"""

import json
import os
import sys
import time

from absl import app
from absl import flags
from absl import logging
import tensorflow as tf

from common import files
from input import pipeline
from input import records
from input import synthetic
import ops
from trainer import checkpoints
from trainer import diagnose
from trainer import evaluation
from trainer import export
from trainer import flagfiles
from trainer import loop
from trainer import loss_scale as loss_scale_lib
from trainer import losses
from trainer import optim
from trainer import step as step_lib
from trainer import strategy as strategy_lib
from trainer.config import data as data_config
from trainer.config import model as model_config
from trainer.config import optimization as optimization_config
from trainer.config import run as run_config

FLAGS = flags.FLAGS


class Configs:
  """Every flag module's validated configuration; raises ValueError naming the bad flag."""

  def __init__(self):
    self.run = run_config.from_flags()
    self.data = data_config.from_flags(self.run.model_dir)
    self.model = model_config.from_flags()
    self.optimization = optimization_config.from_flags(self.run.train_steps)


def manifests(data: data_config.DataConfig, seed: int, *, create: bool = True):
  """`(train, eval or None)` manifests, generating the synthetic corpus on first use.

  Only one process may generate it (`create`); the others wait for it.
  """
  if data.data_dir is not None:
    train = records.read_manifest(data.data_dir, data.train_split)
    evaluation_split = None
    if data.eval_split and os.path.exists(records.manifest_path(data.data_dir,
                                                                data.eval_split)):
      evaluation_split = records.read_manifest(data.data_dir, data.eval_split)
    elif data.eval_split:
      logging.warning("No %s split in %s: training without evaluation.", data.eval_split,
                      data.data_dir)
    return train, evaluation_split
  corpus = dict(seconds=data.synthetic_seconds, sample_rate=data.sample_rate, num_shards=8)
  if not create:
    for split in filter(None, (data.train_split, data.eval_split)):
      _wait_for(records.manifest_path(data.synthetic_dir, split))
  train = synthetic.ensure_corpus(data.synthetic_dir, split=data.train_split, seed=seed,
                                  num_examples=data.synthetic_examples, **corpus)
  evaluation_split = synthetic.ensure_corpus(
      data.synthetic_dir, split=data.eval_split or "eval", seed=seed + 1000,
      num_examples=data.synthetic_eval_examples, **corpus) if data.eval_split else None
  return train, evaluation_split


def model_description(configs: Configs, sample_rate: int) -> dict:
  """What export and denoise need to rebuild the model; stored as model_dir/config.json."""
  return dict(architecture=configs.model.architecture, model=configs.model.model_kwargs(),
              sample_rate=sample_rate, seed=configs.run.seed)


def check_description(model_dir: str, description: dict):
  """Raises if `model_dir` holds a model other than the one the flags describe."""
  path = os.path.join(model_dir, export.CONFIG_FILE)
  if os.path.exists(path):
    with open(path) as f:
      stored = json.load(f)
    if stored != description:
      raise ValueError(f"{model_dir} holds a model trained with {stored}, but the flags "
                       f"describe {description}. Use the same model flags, or a new "
                       "--model_dir.")


def write_description(model_dir: str, description: dict):
  """Records the model for export and denoise, once the run is known to start."""
  path = os.path.join(model_dir, export.CONFIG_FILE)
  if not os.path.exists(path):
    files.write_json(path, description)


def build_train_step(configs: Configs, strategy, description: dict, sample_rate: int):
  """Model, AdamW, loss scale, reverb and loss under `strategy`; returns the step and parts."""
  run_cfg, data, opt = configs.run, configs.data, configs.optimization
  schedule = (optim.constant(opt.learning_rate) if opt.schedule == "constant" else
              optim.warmup_cosine(opt.learning_rate, warmup_steps=opt.warmup_steps,
                                  total_steps=run_cfg.train_steps,
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
  loss_fn = losses.DenoiseLoss(sample_rate, stft_weight=configs.model.stft_weight,
                                waveform=configs.model.waveform_loss)
  train_step = step_lib.make_train_step(
      model, loss_fn, optimizer, strategy, global_batch_size=run_cfg.global_batch_size,
      loss_scale=loss_scale, precision=opt.precision,
      augment=reverb if data.reverb == "device" else None, clip_norm=opt.clip_norm,
      steps_per_loop=run_cfg.steps_per_loop,
      jit_compile=run_cfg.jit_compile == "on" or (
          run_cfg.jit_compile == "auto" and "GPU" in strategy.extended.worker_devices[0]),
      seed=run_cfg.seed)
  return train_step, loss_fn, reverb


def run(configs: Configs) -> str:
  """Trains, evaluates or diagnoses as configured; returns how it ended."""
  run_cfg, data = configs.run, configs.data
  strategy = strategy_lib.make(run_cfg.strategy, num_gpus=run_cfg.num_gpus,
                               cpu_replicas=run_cfg.cpu_replicas)
  replicas = strategy.num_replicas_in_sync
  if run_cfg.global_batch_size % replicas:
    raise ValueError(f"--global_batch_size={run_cfg.global_batch_size} is not divisible by "
                     f"the {replicas} replicas; use a multiple of {replicas}.")
  task_type, task_id, chief = strategy_lib.worker(strategy)
  workers = replicas // len(strategy.extended.worker_devices)
  out_dir = strategy_lib.output_dir(run_cfg.model_dir, strategy)
  train_manifest, eval_manifest = manifests(data, run_cfg.seed, create=chief)
  description = model_description(configs, train_manifest.sample_rate)
  check_description(out_dir, description)
  logging.info("%s %d of %d workers%s: %d replica(s) on %s; %d training examples (%.2f h) "
               "at %d Hz.", task_type, task_id, workers, " (chief)" if chief else "",
               replicas, strategy.extended.worker_devices, train_manifest.num_examples,
               train_manifest.total_hours, train_manifest.sample_rate)
  train_step, loss_fn, reverb = build_train_step(configs, strategy, description,
                                                 train_manifest.sample_rate)
  seconds = (data.crop_seconds or
             train_manifest.segment_samples / train_manifest.sample_rate)

  def train_dataset_fn(skip_steps=0):
    return pipeline.make_train_dataset_fn(
        train_manifest, global_batch_size=run_cfg.global_batch_size,
        crop_seconds=data.crop_seconds, shuffle_buffer_mb=data.shuffle_buffer_mb,
        seed=run_cfg.seed, reverb=reverb if data.reverb == "host" else None,
        cycle_length=data.cycle_length, ram_budget_mb=data.ram_budget_mb,
        deterministic=data.deterministic_input, skip_steps=skip_steps,
        data_service=data.data_service, data_service_sharding=data.data_service_sharding,
        data_service_timeout=data.data_service_timeout)

  if run_cfg.mode == "diagnose":
    return run_diagnosis(configs, strategy, train_step, train_dataset_fn(), train_manifest,
                         audio_seconds_per_example=seconds, out_dir=out_dir)

  checkpoint = tf.train.Checkpoint(model=train_step.model, optimizer=train_step.optimizer,
                                   loss_scale=train_step.loss_scale,
                                   global_step=train_step.global_step)
  manager = checkpoints.manager(checkpoint, run_cfg.model_dir, save_dir=out_dir,
                                max_to_keep=run_cfg.keep_checkpoints)
  start_step = int(train_step.global_step.numpy())
  evaluate = None
  if eval_manifest is not None:
    evaluate = evaluation.PeriodicEval(
        evaluation.Evaluator(
            strategy, train_step.model, loss_fn,
            pipeline.distribute(strategy, pipeline.make_eval_dataset_fn(
                eval_manifest, global_batch_size=run_cfg.global_batch_size)),
            sample_rate=eval_manifest.sample_rate,
            precision_dtype=step_lib.compute_dtype(configs.optimization.precision),
            perceptual_examples=run_cfg.eval_perceptual_examples),
        out_dir=out_dir, sample_rate=eval_manifest.sample_rate, clips=run_cfg.eval_clips)
  if run_cfg.mode == "eval":
    if evaluate is None:
      raise ValueError("--mode=eval needs an eval split (--eval_split).")
    evaluate(start_step)
    return "evaluated"

  iterator = iter(pipeline.distribute(strategy, train_dataset_fn(start_step),
                                      per_replica_buffer=data.per_replica_buffer))
  write_description(out_dir, description)  # only now: the flags built a run that starts
  outcome = loop.train(
      train_step, iterator, manager,
      loop.LoopConfig(train_steps=run_cfg.train_steps, steps_per_loop=run_cfg.steps_per_loop,
                      log_every=run_cfg.log_every, checkpoint_every=run_cfg.checkpoint_every,
                      eval_every=run_cfg.eval_every,
                      max_skipped_steps=run_cfg.max_skipped_steps,
                      examples_per_step=run_cfg.global_batch_size,
                      audio_seconds_per_example=seconds),
      summary_dir=os.path.join(out_dir, "train"), evaluate=evaluate,
      agree=loop.stop_agreement(strategy) if workers > 1 else lambda stop_here: stop_here)
  final_step = int(train_step.global_step.numpy())
  if outcome == "completed" and evaluate is not None and evaluate.last_step != final_step:
    evaluate(final_step)
  return outcome


def run_diagnosis(configs: Configs, strategy, train_step, dataset_fn, manifest, *,
                  audio_seconds_per_example: float, out_dir: str) -> str:
  """--mode=diagnose: times input, step and both; prints and saves the report."""
  run_cfg, data = configs.run, configs.data

  def make_iterator(cached):
    fn = (lambda context: dataset_fn(context).take(1).cache().repeat()) if cached else dataset_fn
    return iter(pipeline.distribute(strategy, fn, per_replica_buffer=data.per_replica_buffer))

  result = diagnose.diagnose(
      strategy, train_step, make_iterator, steps=run_cfg.diagnose_steps,
      warmup=run_cfg.diagnose_warmup, examples_per_step=run_cfg.global_batch_size,
      audio_seconds_per_example=audio_seconds_per_example,
      setup=diagnose.Setup(
          reverb=data.reverb, compression=manifest.compression,
          cycle_length=data.cycle_length, shuffle_buffer_mb=data.shuffle_buffer_mb,
          per_replica_batch=run_cfg.global_batch_size // strategy.num_replicas_in_sync,
          steps_per_loop=run_cfg.steps_per_loop, num_shards=len(manifest.shards),
          input_pipelines=strategy.num_replicas_in_sync // len(
              strategy.extended.worker_devices)),
      model_dir=out_dir)
  print(diagnose.format_report(result))
  return f"diagnosed (report in {result['path']})"


def _wait_for(path: str, timeout_seconds: float = 1800.0):
  deadline = time.monotonic() + timeout_seconds
  while not os.path.exists(path):
    if time.monotonic() > deadline:
      raise FileNotFoundError(f"{path} did not appear within {timeout_seconds:.0f} s: is the "
                              "chief generating the synthetic corpus?")
    time.sleep(1.0)


def main(argv):
  if len(argv) > 1:
    sys.exit(f"trainer.main: unexpected arguments {argv[1:]}; every setting is a --flag.")
  try:
    configs = Configs()
    outcome = run(configs)
  except (ValueError, FileNotFoundError, FileExistsError, ConnectionError,
          loop.NonFiniteLoss, checkpoints.CheckpointError) as e:
    sys.exit(f"trainer.main: {e}")
  except tf.errors.DataLossError as e:
    sys.exit(f"trainer.main: {_explain_data_loss(configs, e)}")
  model_dir = os.path.abspath(configs.run.model_dir)
  if configs.run.mode == "diagnose":
    print(f"trainer.main: {outcome}")
  else:
    print(f"trainer.main: {outcome}. Checkpoints: {os.path.join(model_dir, 'checkpoints')}; "
          f"TensorBoard: tensorboard --logdir {model_dir}")


def _explain_data_loss(configs: Configs, error: tf.errors.DataLossError) -> str:
  """Names the damaged shard(s): TFRecord errors do not."""
  data = configs.data
  data_dir = data.data_dir or data.synthetic_dir
  bad = []
  for split in filter(None, (data.train_split, data.eval_split)):
    if os.path.exists(records.manifest_path(data_dir, split)):
      bad += records.find_bad_shards(records.read_manifest(data_dir, split))
  if bad:
    return "damaged shard(s): " + "; ".join(bad) + ". Re-create them (input.prepare)."
  return f"reading the data failed: {error.message}"


if __name__ == "__main__":
  app.run(main, flags_parser=lambda argv: app.parse_flags_with_usage(flagfiles.resolve(argv)))
