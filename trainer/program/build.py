"""From validated configs to a runnable job: strategy, model card, step, data and evaluator, in one frozen Job.

Everything that can be refused is built before the synthetic corpus is
generated (minutes on first use), so a bad flag stops the program at once.
The pieces come from build_data (stores and input), build_step (step and
evaluator); build_loop turns a Job into its controller or sidecar.
"""

import dataclasses
import os
from typing import Callable, Optional

from absl import logging
import tensorflow as tf

from input import pipeline
from input import records
from trainer import run_dir
from trainer import step as step_lib
from trainer.evaluation import evaluator as evaluator_lib
from trainer.loop import controller as controller_lib
from trainer.models import card as card_lib
from trainer.program import build_data
from trainer.program import build_step
from trainer.program import run_record
from trainer.program import strategy as strategy_lib
from trainer.program.config import configs as configs_lib
from trainer.program.config import run as run_config


@dataclasses.dataclass(frozen=True)
class Job:
  """Everything a run needs; building it writes nothing but the synthetic corpus."""
  configs: configs_lib.Configs
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


def build(configs: configs_lib.Configs) -> Job:
  """Builds the job `configs` describe.

  Raises:
    ArgumentError: a value a library refuses (the flag of the same name).
    ValueError: the pieces do not fit (no data, model vs model_dir).
  """
  run, data = configs.run, configs.data
  if tf.io.gfile.exists(run.model_dir) and not tf.io.gfile.isdir(run.model_dir):
    raise ValueError(f"--model_dir={run.model_dir} is a file, not a directory: pass a new "
                     "directory, or a run's.")
  build_data.check_data_source(data)
  strategy = strategy_lib.make(run.strategy, num_gpus=run.num_gpus,  # before any TF op
                               cpu_replicas=run.cpu_replicas,
                               cluster_timeout=run.cluster_timeout)
  _, _, chief = strategy_lib.worker(strategy)
  workers = strategy.num_replicas_in_sync // len(strategy.extended.worker_devices)
  out_dir = strategy_lib.output_dir(run.model_dir, strategy)
  real = build_data.real_manifests(data) if data.data_dir is not None else None
  sample_rate = real[0].sample_rate if real else data.sample_rate
  card = configs.model.model_card(sample_rate=sample_rate, seed=run.seed)
  if tf.train.get_checkpoint_state(os.path.join(out_dir, run_dir.CHECKPOINT_DIR)):
    card.check(out_dir)  # a card without checkpoints (a failed first chunk) binds nothing
    if run.mode == "train":  # evaluating with another batch is fine
      run_record.check(out_dir, configs)
  segment_seconds = (real[0].segment_samples / sample_rate if real else
                     data.synthetic_seconds)
  crop_seconds = data.crop_seconds or segment_seconds
  train_step, loss_fn, host_reverb = build_step.train_step(
      configs, strategy, card,
      rirs=build_data.room_responses(data, sample_rate, crop_seconds))
  loop = loop_config(run, crop_seconds)
  # a sidecar evaluator waits for its trainer to generate the synthetic corpus
  train_manifest, noise_manifest, eval_manifest = real or build_data.synthetic_manifests(
      run, data, create=chief and run.mode != "continuous_eval")
  train_dataset_fn = build_data.train_input(run, data, train_manifest, noise_manifest,
                                             host_reverb)
  train_dataset_fn(0)  # checks the crop against the data and the service address
  _log(strategy, workers, train_manifest, noise_manifest, sample_rate)
  return Job(
      configs=configs, strategy=strategy, workers=workers, out_dir=out_dir, card=card,
      train_manifest=train_manifest, noise_manifest=noise_manifest,
      eval_manifest=eval_manifest, train_step=train_step,
      checkpoint=_checkpoint(train_step),
      evaluator=build_step.evaluator(run, configs.optimization, strategy, train_step.model,
                                     loss_fn, eval_manifest),
      train_dataset_fn=train_dataset_fn, loop=loop)


def _checkpoint(train_step: step_lib.TrainStep) -> tf.train.Checkpoint:
  """What a run's checkpoints hold: model, optimizer, loss scale, step and weight average."""
  return tf.train.Checkpoint(model=train_step.model, optimizer=train_step.optimizer,
                             loss_scale=train_step.loss_scale,
                             global_step=train_step.global_step,
                             **({"ema": train_step.ema} if train_step.ema else {}))


def _log(strategy, workers: int, train_manifest, noise_manifest, sample_rate: int):
  """Logs who this worker is and what it trains on."""
  task_type, task_id, chief = strategy_lib.worker(strategy)
  logging.info("%s %d of %d workers%s: %d replica(s) on %s; %d training %s (%.2f h) at %d Hz%s.",
               task_type, task_id, workers, " (chief)" if chief else "",
               strategy.num_replicas_in_sync, strategy.extended.worker_devices,
               train_manifest.num_examples,
               "clean segments" if noise_manifest else "examples", train_manifest.total_hours,
               sample_rate, f", mixed with {noise_manifest.num_examples} noise segments "
               f"({noise_manifest.total_hours:.2f} h) in the step" if noise_manifest else "")


def loop_config(run: run_config.RunConfig,
                audio_seconds_per_example: float) -> controller_lib.LoopConfig:
  """The outer loop's settings (`audio_seconds_per_example`: the crop, for the audio rate)."""
  return controller_lib.LoopConfig(
      train_steps=run.train_steps, steps_per_loop=run.steps_per_loop,
      log_every=run.log_every, checkpoint_every=run.checkpoint_every,
      eval_every=run.eval_every, max_skipped_steps=run.max_skipped_steps,
      examples_per_step=run.global_batch_size * run.accumulate_steps,
      audio_seconds_per_example=audio_seconds_per_example, profile_steps=run.profile_steps,
      divergence_loss=run.divergence_loss, divergence_rise=run.divergence_rise or None,
      recover_attempts=run.recover_attempts, input_stall_seconds=run.input_stall_seconds)
