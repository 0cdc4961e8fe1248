"""The training program: python -m trainer.main --flagfile=a100.flags (a bare name means flags/)

flags -> configs (trainer/program/config) -> a job (trainer.program.build:
strategy, model card, step, data, evaluator) -> its controller
(trainer.program.build_loop: train, evaluate or train-and-evaluate) or the
diagnosis; library errors become one line naming the problem (an argument the
libraries refuse is named as its flag, `--name=value ...`).
"""

import contextlib
import os
import sys

from absl import app
import tensorflow as tf

from common import cli
from input import pipeline
from input import records
from trainer import run_dir
from trainer.loop import lock
from trainer.loop import recovery
from trainer.program import build
from trainer.program import build_data
from trainer.program import build_loop
from trainer.program import cluster
from trainer.program import diagnose
from trainer.program import flagfiles
from trainer.program.config import configs as configs_lib


def run(configs: configs_lib.Configs) -> str:
  """Trains, evaluates or diagnoses as configured; returns how it ended."""
  job = build.build(configs)
  mode = configs.run.mode
  if mode == "diagnose":
    return run_diagnosis(job)
  if mode in ("eval", "continuous_eval") and job.evaluator is None:
    raise ValueError(f"--mode={mode} needs the eval split --eval_split="
                     f"{configs.data.eval_split}, which {configs.data.data_dir} lacks.")
  if mode == "continuous_eval":
    return build_loop.sidecar(job).run()
  train = mode == "train"
  model_dir = configs.run.model_dir
  with lock.held(job.out_dir) if train else contextlib.nullcontext():
    control = build_loop.controller(job, train=train)
    with (cluster.lost_peers_in_one_line(lambda: control.step, os.path.join(
        model_dir, run_dir.CHECKPOINT_DIR), os.path.join(model_dir, "errors"))
          if job.workers > 1 else contextlib.nullcontext()):
      outcome = control.train_and_evaluate() if train else control.evaluate()
  return control.stopped_by or outcome.value


def run_diagnosis(job: build.Job) -> str:
  """--mode=diagnose: times input, step and both; prints and saves the report."""
  run_cfg, data = job.configs.run, job.configs.data
  strategy, manifest, dataset_fn = job.strategy, job.train_manifest, job.train_dataset_fn(0)

  def make_iterator(cached):
    fn = (lambda context: dataset_fn(context).take(1).cache().repeat()) if cached else dataset_fn
    return iter(pipeline.distribute(strategy, fn, per_replica_buffer=data.per_replica_buffer))

  result = diagnose.diagnose(
      strategy, job.train_step, make_iterator, steps=run_cfg.diagnose_steps,
      warmup=run_cfg.diagnose_warmup, examples_per_step=job.loop.examples_per_step,
      audio_seconds_per_example=job.loop.audio_seconds_per_example,
      setup=diagnose.Setup(
          reverb=data.reverb, compression=manifest.compression,
          cycle_length=data.cycle_length, shuffle_buffer_mb=data.shuffle_buffer_mb,
          per_replica_batch=run_cfg.global_batch_size // strategy.num_replicas_in_sync,
          steps_per_loop=run_cfg.steps_per_loop, num_shards=len(manifest.shards),
          input_pipelines=job.workers),
      model_dir=job.out_dir)
  print(diagnose.format_report(result))
  return f"diagnosed (report in {result['path']})"


def main(argv):
  if len(argv) > 1:
    sys.exit(f"trainer.main: unexpected arguments {argv[1:]}; every setting is a --flag.")
  with cli.one_line_errors("trainer.main", recovery.Diverged, run_dir.CheckpointError,
                           lock.LockedError, cluster.PeerLost):
    configs = configs_lib.Configs.from_flags()
    try:
      outcome = run(configs)
    except tf.errors.DataLossError as e:
      raise OSError(_explain_data_loss(configs, e)) from None
  model_dir = os.path.abspath(configs.run.model_dir)
  if configs.run.mode == "diagnose":
    print(f"trainer.main: {outcome}")
  else:
    print(f"trainer.main: {outcome}. Checkpoints: {os.path.join(model_dir, 'checkpoints')}; "
          f"TensorBoard: tensorboard --logdir {model_dir}")


def _explain_data_loss(configs: configs_lib.Configs, error: tf.errors.DataLossError) -> str:
  """Names the damaged shard(s): TFRecord errors do not."""
  data = configs.data
  data_dir = data.data_dir or build_data.synthetic_dir(data, configs.run.model_dir)
  bad = []
  for split in filter(None, (*data.train_splits(), data.eval_split)):
    if tf.io.gfile.exists(records.manifest_path(data_dir, split)):
      bad += records.find_bad_shards(records.read_manifest(data_dir, split))
  if bad:
    return "damaged shard(s): " + "; ".join(bad) + ". Re-create them (input.prepare)."
  return f"reading the data failed: {error.message}"


if __name__ == "__main__":
  app.run(main, flags_parser=flagfiles.parse)
