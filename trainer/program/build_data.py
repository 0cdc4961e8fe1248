"""Where a run's data comes from: the prepared or synthetic stores, the mix's rooms, and the training input."""

import os
import time
from typing import Callable, Optional, Tuple

from absl import logging
import numpy as np
import tensorflow as tf

from common import checks
from input import pipeline
from input import records
from input import rooms
from input import synthetic
import ops
from trainer.program.config import data as data_config
from trainer.program.config import run as run_config

# (train: the pairs or the clean speech, noise to mix or None, eval or None)
Manifests = Tuple[records.Manifest, Optional[records.Manifest], Optional[records.Manifest]]


def synthetic_dir(data: data_config.DataConfig, model_dir: str) -> str:
  """Where the synthetic corpus lives: --synthetic_dir, or beside `model_dir`, named by the
  generator version and the corpus settings (so a changed corpus is never mixed up)."""
  return data.synthetic_dir or os.path.join(
      os.path.dirname(os.path.abspath(model_dir)),
      f"synthetic-v{synthetic.VERSION}-{data.sample_rate}Hz-{data.synthetic_seconds:g}s-"
      f"{data.synthetic_examples}")


def check_data_source(data: data_config.DataConfig):
  """Raises ValueError unless there is data: --data_dir exists, or the synthetic corpus."""
  if data.data_dir is None and not data.synthetic:
    raise ValueError("No data: pass --data_dir=<prepared shards>, or --synthetic to train "
                     "on the generated corpus.")
  if data.data_dir is not None and not tf.io.gfile.isdir(data.data_dir):
    problem = "is a file" if tf.io.gfile.exists(data.data_dir) else "does not exist"
    raise ValueError(f"--data_dir={data.data_dir} {problem}: pass the directory that "
                     "python -m input.prepare wrote, or drop --data_dir to use the synthetic "
                     "corpus.")


def real_manifests(data: data_config.DataConfig) -> Manifests:
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


def synthetic_manifests(run: run_config.RunConfig, data: data_config.DataConfig, *,
                        create: bool = True) -> Manifests:
  """The synthetic corpus's splits, generated on first use: the training pairs, or (mixing)
  the same examples' clean speech and noise as separate stores; and the eval pairs.

  Only one process may generate it (`create`); the others wait for it.
  """
  seed, directory = run.seed, synthetic_dir(data, run.model_dir)
  corpus = dict(seconds=data.synthetic_seconds, sample_rate=data.sample_rate, num_shards=8)
  eval_split = data.eval_split or "eval"  # made even when this run does not evaluate: a
  # sidecar evaluator of it will
  train_splits = data.train_splits()
  if not create:  # the chief generates it: wait for its manifests
    sidecar = run.mode == "continuous_eval"
    wait = run.eval_timeout if sidecar else CORPUS_WAIT_SECONDS
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


def room_responses(data: data_config.DataConfig, sample_rate: int, crop_seconds: float) -> Optional[np.ndarray]:
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
    responses = rooms.read_store(data.data_dir, data.rir_split, sample_rate=sample_rate)
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


def train_input(run: run_config.RunConfig, data: data_config.DataConfig, manifest,
                noise_manifest, host_reverb) -> Callable[..., pipeline.DatasetFn]:
  """`(skip_steps, reseeds) -> dataset_fn` for the training input (`skip_steps` updates
  already taken, each of `accumulate_steps` micro-batches; `reseeds`: the round of draws, 0
  for the run's seed, another seed after each recovery): stored pairs, or clean speech and
  noise (`noise_manifest`) for the step to mix."""

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
