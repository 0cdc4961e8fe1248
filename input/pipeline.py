"""tf.data pipelines for `strategy.distribute_datasets_from_function`: shard, interleave, batch, parse, prefetch."""

import dataclasses
import math
from typing import Callable, List, Optional

from absl import logging
import numpy as np
import tensorflow as tf

from common import checks
from input import records
from input import service
import ops
from ops import stateless

DatasetFn = Callable[[tf.distribute.InputContext], tf.data.Dataset]
_STREAM_SEED_OFFSET = 1_000_003  # the noise store's shuffle seeds: far from the speech's


@dataclasses.dataclass(frozen=True)
class TrainInputConfig:
  """How the training input reads, shuffles, crops and augments.

  Attributes:
    global_batch_size: examples per step across all replicas.
    crop_seconds: random crop per example (default: the whole segment).
    shuffle_buffer_mb: memory for the shuffle buffer of serialized (int16)
      records; the element count follows from the segment size.
    seed: base of the stateless crop/reverb draws and the shuffles.
    reverb: optional host-side augmentation (usually it runs on the device in
      the step instead).
    cycle_length: shard files read in parallel by each input pipeline.
    epochs: passes over the data (default: forever).
    ram_budget_mb: tf.data autotune RAM budget (default: TF's, half of RAM).
    deterministic: keep element order reproducible (slower); with `seed` and
      `skip_steps`, a resumed run then sees exactly the batches an
      uninterrupted one would.
    skip_steps: training steps already taken (when resuming): each pipeline
      skips the batches its replicas consumed, as serialized records before
      parsing, and the crop/reverb draws continue where they stopped.
    data_service: grpc://host:port of a tf.data service dispatcher: read,
      shuffle, parse, crop and host reverb then run on its workers over all
      shards (see input.service; the order is random there, so `seed`,
      `deterministic` and `skip_steps` do not apply).
    data_service_sharding: off | dynamic (see input.service).
    data_service_timeout: seconds to wait for the dispatcher to answer before
      a ConnectionError.
  """
  global_batch_size: int
  crop_seconds: Optional[float] = None
  shuffle_buffer_mb: float = 256.0
  seed: int = 0
  reverb: Optional[ops.RevEcho] = None
  cycle_length: int = 8
  epochs: Optional[int] = None
  ram_budget_mb: Optional[int] = None
  deterministic: bool = False
  skip_steps: int = 0
  data_service: Optional[str] = None
  data_service_sharding: str = "off"
  data_service_timeout: float = 60.0

  def __post_init__(self):
    checks.at_least("global_batch_size", self.global_batch_size, 1)
    checks.at_least("cycle_length", self.cycle_length, 1)
    checks.at_least("shuffle_buffer_mb", self.shuffle_buffer_mb, 0)
    if self.crop_seconds is not None:
      checks.positive("crop_seconds", self.crop_seconds)
    checks.positive("data_service_timeout", self.data_service_timeout)
    if self.data_service is not None:
      service.check_address(self.data_service)
      service.sharding_policy(self.data_service_sharding)


def make_train_dataset_fn(manifest: records.Manifest, config: TrainInputConfig) -> DatasetFn:
  """The training input from stored pairs: `{noisy, clean}` float32
  `[per_replica_batch, crop]` batches.

  Each input pipeline reads its own shard files (or, with fewer files than
  pipelines, every file sharded by record), shuffles serialized records,
  batches them, then parses, crops and augments whole batches in parallel;
  with a data service all of that runs on the service's workers.

  Returns:
    `dataset_fn(input_context)` for `distribute` /
    `strategy.distribute_datasets_from_function`.
  """
  records.require_kind(manifest, "pairs")
  crop = _crop_samples(manifest, config.crop_seconds)
  _warn_service_resume(config)

  def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
    return _finish(_batches(manifest, context, config, crop=crop, stream=0,
                            epochs=config.epochs), config)

  return dataset_fn


def make_mixing_dataset_fn(clean: records.Manifest, noise: records.Manifest,
                           config: TrainInputConfig) -> DatasetFn:
  """The training input from separate stores: `{clean, noise}` float32
  `[per_replica_batch, crop]` batches, for a step that mixes them (`ops.Mix`).

  Each input pipeline reads its shard of the clean store and, independently
  (its own shuffles and crops), its shard of the noise store; the noise is
  cycled, so `epochs` counts passes over the clean speech. Host work stays
  read + parse + crop.

  Raises:
    ValueError: a store of the wrong kind, stores at different sample rates, or
      host-side reverb (it needs pairs; reverberate in the step).
  """
  records.require_kind(clean, "clean")
  records.require_kind(noise, "noise")
  if clean.sample_rate != noise.sample_rate:
    raise ValueError(f"The clean store {clean.split!r} is at {clean.sample_rate} Hz but the "
                     f"noise store {noise.split!r} at {noise.sample_rate} Hz: prepare both at "
                     "one rate (input.prepare --sample_rate).")
  if config.reverb is not None:
    raise ValueError("Host-side reverb needs stored pairs; when mixing from sources, "
                     "reverberate in the step (--reverb=device, or --rir_proba with rooms).")
  crops = [_crop_samples(manifest, config.crop_seconds) for manifest in (clean, noise)]
  if config.crop_seconds is None and crops[0] != crops[1]:
    raise ValueError(f"The clean segments hold {crops[0]} samples and the noise segments "
                     f"{crops[1]}: pass --crop_seconds to cut both to one length.")
  _warn_service_resume(config)

  def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
    speech = _batches(clean, context, config, crop=crops[0], stream=0, epochs=config.epochs)
    noises = _batches(noise, context, config, crop=crops[1], stream=1, epochs=None)
    mixed = tf.data.Dataset.zip((speech, noises)).map(
        lambda s, n: {"clean": s["clean"], "noise": n["noise"]})
    return _finish(mixed, config)

  return dataset_fn


def _warn_service_resume(config: TrainInputConfig):
  if config.data_service is not None and config.skip_steps:
    logging.warning("Resuming with a data service: its random order cannot be replayed, "
                    "so the input stream restarts (no records skipped).")


def _batches(manifest: records.Manifest, context: tf.distribute.InputContext,
             config: TrainInputConfig, *, crop: int, stream: int,
             epochs: Optional[int]) -> tf.data.Dataset:
  """This pipeline's parsed, cropped batches of one store; `stream` keys its own shuffles
  and crops (0: the stored pairs or the clean speech, 1: the noise)."""
  batch = context.get_per_replica_batch_size(config.global_batch_size)
  pipeline = context.input_pipeline_id
  seed = config.seed + stream * _STREAM_SEED_OFFSET
  if config.data_service is not None:  # one pipeline over all shards, run by the service
    serialized = _records_per_file(manifest, manifest.paths, config, epochs=epochs,
                                   shuffle_seed=None)
    share, skip_batches = manifest.num_examples, 0
  else:
    serialized = _records_for_pipeline(manifest, context, config, epochs=epochs, seed=seed)
    share = _examples_for_pipeline(manifest, context, pipeline)
    skip_batches = config.skip_steps * max(
        1, context.num_replicas_in_sync // context.num_input_pipelines)
  dataset = _shuffled_batches(serialized, manifest, config, share=share, batch=batch,
                              skip_batches=skip_batches, pipeline=pipeline, seed=seed)
  return dataset.map(_batch_parser(manifest, config, crop=crop, batch=batch,
                                   pipeline_seed=stateless.fold_in([config.seed, stream],
                                                                   pipeline)),
                     num_parallel_calls=tf.data.AUTOTUNE,
                     deterministic=config.deterministic)


def _finish(dataset: tf.data.Dataset, config: TrainInputConfig) -> tf.data.Dataset:
  """Hands the pipeline to the data service (if any) and prefetches."""
  if config.data_service is not None:
    dataset = service.distribute(
        dataset.prefetch(tf.data.AUTOTUNE), service=config.data_service,
        sharding=config.data_service_sharding,
        connect_timeout_seconds=config.data_service_timeout)
  return dataset.prefetch(tf.data.AUTOTUNE).with_options(
      _options(deterministic=config.deterministic, ram_budget_mb=config.ram_budget_mb))


def _records_for_pipeline(manifest: records.Manifest, context: tf.distribute.InputContext,
                          config: TrainInputConfig, *, epochs: Optional[int],
                          seed: int) -> tf.data.Dataset:
  """This pipeline's serialized records: its own files, or every file sharded by record."""
  files = _files_for_pipeline(manifest, context)
  if files is None:
    return _records_per_record(manifest, context, epochs=epochs)
  return _records_per_file(manifest, files, config, epochs=epochs,
                           shuffle_seed=seed + context.input_pipeline_id)


def _records_per_file(manifest: records.Manifest, files: List[str], config: TrainInputConfig,
                      *, epochs: Optional[int], shuffle_seed: Optional[int]) -> tf.data.Dataset:
  """Serialized records of `files`, in a reshuffled file order each epoch, `cycle_length`
  files read at a time."""
  compression = records.tfrecord_compression(manifest.compression)
  dataset = tf.data.Dataset.from_tensor_slices(files)
  dataset = dataset.shuffle(len(files), seed=shuffle_seed,
                            reshuffle_each_iteration=True).repeat(epochs)
  return dataset.interleave(
      lambda path: tf.data.TFRecordDataset(path, compression),
      cycle_length=min(config.cycle_length, len(files)), block_length=1,
      num_parallel_calls=tf.data.AUTOTUNE, deterministic=config.deterministic)


def _records_per_record(manifest: records.Manifest, context: tf.distribute.InputContext, *,
                        epochs: Optional[int]) -> tf.data.Dataset:
  """Every file read by every pipeline, each keeping one record in `num_input_pipelines`."""
  compression = records.tfrecord_compression(manifest.compression)
  dataset = tf.data.TFRecordDataset(manifest.paths, compression)
  return dataset.shard(context.num_input_pipelines,
                       context.input_pipeline_id).repeat(epochs)


def _shuffled_batches(serialized: tf.data.Dataset, manifest: records.Manifest,
                      config: TrainInputConfig, *, share: int, batch: int, skip_batches: int,
                      pipeline: int, seed: int) -> tf.data.Dataset:
  """Shuffles serialized records, skips what a resumed run consumed, batches them and
  keys the batches (the key seeds each batch's crop and reverb draws): by their number,
  or by the worker's clock on a data service."""
  buffer_examples = max(1, int(config.shuffle_buffer_mb * 2**20) // manifest.record_bytes)
  seed = None if config.data_service is not None else seed + pipeline
  # More than one epoch's share in the buffer only repeats examples in it.
  dataset = serialized.shuffle(max(1, min(buffer_examples, share)), seed=seed)
  if skip_batches:
    logging.info("Input pipeline %d: skipping %d consumed batches of %s to resume.", pipeline,
                 skip_batches, manifest.split)
    dataset = dataset.skip(skip_batches * batch)
  batches = dataset.batch(batch, drop_remainder=True)
  if config.data_service is not None:
    # Every service worker runs this same graph: a batch number would give each worker's
    # k-th batch the same crops and reverb, and so would any seeded random op (a global
    # seed fixes even seed=None ones). The clock, read per batch on the worker, does not.
    return batches.map(lambda batch: (tf.bitcast(tf.timestamp(), tf.int64), batch))
  return batches.enumerate(start=skip_batches)


def _batch_parser(manifest: records.Manifest, config: TrainInputConfig, *, crop: int,
                  batch: int, pipeline_seed: tf.Tensor) -> Callable:
  """`parse(index, serialized) -> {signal: float32}`: one vectorized parse, crop and (host,
  for pairs) reverb per batch, with draws keyed by the batch number."""

  def parse(index, serialized):
    batch_seed = stateless.fold_in(pipeline_seed, index)
    offsets = None
    if crop < manifest.segment_samples:
      offsets = tf.cast(tf.floor(stateless.uniform(
          [batch], batch_seed, 0.0, manifest.segment_samples - crop + 1.0)), tf.int32)
    parsed = records.parse_batch(serialized, segment_samples=manifest.segment_samples,
                                 kind=manifest.kind, crop_samples=crop, crop_offsets=offsets)
    signals = {name: records.to_float(parsed[name]) for name in manifest.signals}
    if config.reverb is not None:
      signals["noisy"], signals["clean"] = config.reverb(
          signals["noisy"], signals["clean"], stateless.fold_in(batch_seed, 1))
    return signals

  return parse


def make_eval_dataset_fn(manifest: records.Manifest, *,
                         global_batch_size: int) -> DatasetFn:
  """The eval input: every example exactly once across all pipelines, in order.

  Elements are `{noisy, clean, weight}`; the tail is padded with silent
  examples of weight 0 so that every replica of every pipeline gets the same
  number of full, static-shape batches and weighted metrics stay exact.
  """
  records.require_kind(manifest, "pairs")
  silence = np.zeros([manifest.segment_samples], np.int16)
  padding = records.serialize_example({"noisy": silence, "clean": silence},
                                       manifest.sample_rate, "")

  def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
    batch = context.get_per_replica_batch_size(global_batch_size)
    counts = [_examples_for_pipeline(manifest, context, i)
              for i in range(context.num_input_pipelines)]
    replicas_per_pipeline = max(1, context.num_replicas_in_sync // context.num_input_pipelines)
    batches = math.ceil(max(counts) / batch / replicas_per_pipeline) * replicas_per_pipeline
    compression = records.tfrecord_compression(manifest.compression)
    files = _files_for_pipeline(manifest, context)
    if files is not None:
      dataset = tf.data.TFRecordDataset(files, compression)
    else:
      dataset = tf.data.TFRecordDataset(manifest.paths, compression).shard(
          context.num_input_pipelines, context.input_pipeline_id)
    dataset = dataset.map(lambda r: (r, 1.0)).concatenate(
        tf.data.Dataset.from_tensors((tf.constant(padding), 0.0)).repeat(
            batches * batch - counts[context.input_pipeline_id]))

    def parse(serialized, weight):
      parsed = records.parse_batch(serialized, segment_samples=manifest.segment_samples)
      return {"noisy": records.pcm_to_float(parsed["noisy"]),
              "clean": records.pcm_to_float(parsed["clean"]),
              "weight": tf.ensure_shape(weight, [batch])}

    dataset = dataset.batch(batch, drop_remainder=True)
    dataset = dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE).with_options(_options(deterministic=True))

  return dataset_fn


def distribute(strategy: tf.distribute.Strategy, dataset_fn: DatasetFn, *,
               per_replica_buffer: Optional[int] = None) -> tf.distribute.DistributedDataset:
  """`strategy.distribute_datasets_from_function` with a per-device prefetch buffer."""
  options = tf.distribute.InputOptions()
  if per_replica_buffer is not None:
    options = tf.distribute.InputOptions(experimental_per_replica_buffer_size=per_replica_buffer)
  return strategy.distribute_datasets_from_function(dataset_fn, options)


def _crop_samples(manifest: records.Manifest, crop_seconds: Optional[float]) -> int:
  if crop_seconds is None:
    return manifest.segment_samples
  crop = int(round(crop_seconds * manifest.sample_rate))
  if not 0 < crop <= manifest.segment_samples:
    raise checks.ArgumentError(
        "crop_seconds", crop_seconds,
        f"is {crop} samples, but the segments of the {manifest.kind} split "
        f"{manifest.split!r} in {manifest.data_dir} hold "
        f"{manifest.segment_samples} ({manifest.segment_samples / manifest.sample_rate:g} s); "
        "pass a crop in (0, segment length] or re-prepare with longer segments.")
  return crop


def _files_for_pipeline(manifest: records.Manifest, context: tf.distribute.InputContext
                        ) -> Optional[List[str]]:
  """This pipeline's shard files, or None when records must be sharded instead."""
  if len(manifest.paths) < context.num_input_pipelines:
    logging.warning(
        "%d shards for %d input pipelines: sharding by record, so every pipeline reads "
        "every file. Write at least one shard per pipeline (--num_shards) to fix this.",
        len(manifest.paths), context.num_input_pipelines)
    return None
  return manifest.paths[context.input_pipeline_id::context.num_input_pipelines]


def _examples_for_pipeline(manifest: records.Manifest,
                           context: tf.distribute.InputContext, pipeline: int) -> int:
  pipelines = context.num_input_pipelines
  if len(manifest.paths) < pipelines:
    total = manifest.num_examples
    return total // pipelines + (1 if pipeline < total % pipelines else 0)
  return sum(manifest.examples_per_shard[pipeline::pipelines])


def _options(*, deterministic: bool, ram_budget_mb: Optional[int] = None) -> tf.data.Options:
  options = tf.data.Options()
  options.deterministic = deterministic
  options.autotune.enabled = True
  if ram_budget_mb:
    options.autotune.ram_budget = int(ram_budget_mb) * 2**20
  options.experimental_optimization.map_parallelization = True
  return options
