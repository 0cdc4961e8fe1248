"""A built job's outer loop: its controller (train, eval or both) or its sidecar evaluator, with checkpoints, best, early stop and recovery."""

import os
from typing import Callable, Iterator, List, Optional

from input import pipeline
from trainer import run_dir
from trainer.loop import actions
from trainer.loop import best
from trainer.loop import checkpoints
from trainer.loop import controller as controller_lib
from trainer.loop import lock
from trainer.loop import periodic_eval
from trainer.loop import recovery
from trainer.loop import sidecar as sidecar_lib
from trainer.models import contract
from trainer.program import build
from trainer.program import run_record


def _training_input(job: build.Job) -> Callable[[int], Iterator]:
  """`start(step) -> iterator`: the distributed training input from global step `step`, in
  the step's current round of draws (a recovery moves it on)."""

  def start(step: int) -> Iterator:
    dataset_fn = job.train_dataset_fn(step, int(job.train_step.reseeds.numpy()))
    return iter(pipeline.distribute(job.strategy, dataset_fn,
                                    per_replica_buffer=job.configs.data.per_replica_buffer))

  return start


def controller(job: build.Job, *, train: bool = True) -> controller_lib.Controller:
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
        model_dir=run.model_dir, restore=lambda: run_dir.restore_run(job.checkpoint,
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
      eval_actions=_eval_actions(job, early_stop=True), recovery=recover,
      stalled_input=_what_to_check(job), save_abandoned=job.workers == 1)


def _what_to_check(job: build.Job) -> str:
  """What a stalled training step most likely waits for, and what to do about it."""
  service = job.configs.data.data_service
  peers = " or for a peer worker that stopped answering" if job.workers > 1 else ""
  if service:
    host_port = service[len("grpc://"):]
    return (f"waiting for the tf.data service at {service}{peers}? Its workers may be gone: "
            f"start one (python -m input.service worker --dispatcher={host_port} --port=P) and "
            "training goes on; SIGTERM saves and stops.")
  return (f"waiting for input from its storage{peers}? Check that the data is readable "
          "and the machine is not swapping; SIGTERM saves and stops.")


def sidecar(job: build.Job) -> sidecar_lib.Sidecar:
  """The sidecar evaluator of the run in --model_dir (--mode=continuous_eval)."""
  run = job.configs.run
  return sidecar_lib.Sidecar(
      checkpoint=job.checkpoint, model_dir=run.model_dir, evaluate=_periodic_eval(job),
      train_steps=run.train_steps, checkpoint_every=run.checkpoint_every,
      training=lambda: lock.training(run.model_dir),
      timeout_seconds=run.eval_timeout, eval_actions=_eval_actions(job, early_stop=False))


def _periodic_eval(job: build.Job) -> Optional[periodic_eval.PeriodicEval]:
  """The eval as the loop runs it (on the weight average if the run keeps one)."""
  if job.evaluator is None:
    return None
  ema, variables = job.train_step.ema, contract.tf_variables(job.train_step.model)
  return periodic_eval.PeriodicEval(
      job.evaluator, out_dir=job.out_dir, sample_rate=job.eval_manifest.sample_rate,
      clips=job.configs.run.eval_clips,
      weights=(("ema", lambda: ema.swapped(variables)) if ema else ("raw", None)))


def _eval_actions(job: build.Job, *, early_stop: bool) -> List[actions.EvalAction]:
  """What follows each eval: the best checkpoint (--keep_best) and, in training, early
  stopping on it (--early_stop_patience)."""
  run = job.configs.run
  if not run.keep_best:
    return []
  if job.evaluator is None:  # --eval_split names a split the data lacks
    raise ValueError(f"--keep_best={run.keep_best} needs the eval split --eval_split="
                     f"{job.configs.data.eval_split}, which {job.configs.data.data_dir} lacks.")
  keep_best = best.KeepBest(job.checkpoint, job.out_dir, run.keep_best)
  if early_stop and run.early_stop_patience:
    return [keep_best, best.EarlyStop(keep_best, run.early_stop_patience)]
  return [keep_best]
