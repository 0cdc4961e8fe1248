"""Writing a split: one segment as a tf.train.Example, and shards under temporary names renamed into place with the manifest last."""

import contextlib
import os
import re
from typing import Dict, Iterable, Tuple

from absl import logging
import numpy as np
import tensorflow as tf

from common import checks
from common import files
from input.records import layout


def serialize_example(signals: Dict[str, np.ndarray], sample_rate: int,
                      example_id: str, kind: str = "pairs") -> bytes:
  """One segment as a tf.train.Example: `signals` holds `KINDS[kind]`, equal-length 1-D
  arrays of the kind's sample dtype (int16 PCM for audio), stored little-endian."""
  dtype = np.dtype(layout.SAMPLE_DTYPES[layout.check_kind(kind)])
  if sorted(signals) != sorted(layout.KINDS[kind]):
    raise ValueError(f"Example {example_id}: a {kind} record holds "
                     f"{list(layout.KINDS[kind])}, got {sorted(signals)}.")
  for name, values in signals.items():
    if np.asarray(values).dtype != dtype:
      advice = ("convert float audio in [-1, 1] with audio.to_int16 first"
                if dtype == np.int16 else f"convert it with .astype(np.{dtype.name})")
      raise ValueError(f"Example {example_id}: {name} is {np.asarray(values).dtype}, but "
                       f"{kind} records hold {dtype.name}: {advice}.")
  shapes = {np.shape(values) for values in signals.values()}
  if len(shapes) != 1 or len(next(iter(shapes))) != 1:
    raise ValueError(f"Example {example_id}: {' and '.join(signals)} have shapes "
                     f"{[np.shape(v) for v in signals.values()]}; they must be equal-length "
                     "1-D arrays.")
  feature = {name: _bytes(np.asarray(values, dtype.newbyteorder("<")).tobytes())
             for name, values in signals.items()}
  feature.update(sample_rate=_int(sample_rate), num_samples=_int(len(next(iter(
      signals.values())))), id=_bytes(example_id.encode()))
  return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def _bytes(value: bytes) -> tf.train.Feature:
  return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


def _int(value: int) -> tf.train.Feature:
  return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))


class ShardWriter:
  """Writes examples (of one `kind`, see KINDS) round-robin into shards under temporary names.

  An existing split is refused unless `overwrite`. Nothing looks valid until
  `close()`: shards are renamed into place and the manifest is written last
  (itself via a temporary name). `abort()` (or leaving
  a `with` block by an exception) removes every temporary file. A write the
  file system refuses (full, read-only) raises OSError naming the directory
  and the cause, after removing the temporary shards; an existing split is
  then unchanged.
  """

  def __init__(self, output_dir: str, split: str, *, num_shards: int,
               sample_rate: int, segment_samples: int, compression: str = "none",
               overwrite: bool = False, kind: str = "pairs"):
    checks.at_least("num_shards", num_shards, 1)
    self._kind = layout.check_kind(kind)
    layout.check_split_name(split)
    layout.tfrecord_compression(compression)
    existing = layout.split_shards(output_dir, split)
    if not overwrite and (existing or tf.io.gfile.exists(layout.manifest_path(output_dir, split))):
      raise FileExistsError(f"{output_dir} already holds split {split!r} ({len(existing)} "
                            "shard(s)); nothing was changed. Pass overwrite (--overwrite) "
                            "to replace it, or choose another split or directory.")
    self._dir, self._split = output_dir, split
    self._remove_leftovers()
    self._sample_rate, self._segment_samples = sample_rate, segment_samples
    self._compression = compression
    self._names = [layout.shard_name(split, i, num_shards) for i in range(num_shards)]
    self._counts = [0] * num_shards
    options = tf.io.TFRecordOptions(compression_type=layout.tfrecord_compression(compression))
    self._writers = []
    with self._failing_writes_abort():
      tf.io.gfile.makedirs(output_dir)
      self._writers = [tf.io.TFRecordWriter(self._tmp(n), options) for n in self._names]
    self._next = 0

  @contextlib.contextmanager
  def _failing_writes_abort(self):
    """Turns a refused write into an OSError that says where and why, leaving no temporaries."""
    try:
      yield
    except (tf.errors.OpError, OSError) as e:
      self.abort()
      raise OSError(f"Could not write split {self._split!r} in {self._dir} "
                    f"({files.reason(e)}): free space or make it writable, then run again. "
                    "No temporary shard was left behind.") from e

  def _remove_leftovers(self):
    """Removes this split's temporary shards left by a run that was killed while writing."""
    pattern = re.compile(rf"\.{re.escape(self._split)}-\d{{5}}-of-\d{{5}}\.tfrecord\.tmp")
    for path in tf.io.gfile.glob(os.path.join(self._dir, f".{self._split}-*.tmp")):
      if pattern.fullmatch(os.path.basename(path)):
        logging.info("Removing %s, left by an interrupted run.", path)
        tf.io.gfile.remove(path)

  def _tmp(self, name: str) -> str:
    return os.path.join(self._dir, f".{name}.tmp")

  def write(self, *signals: np.ndarray, example_id: str):
    """Adds one segment to the next shard: the kind's signals in `KINDS` order (int16 PCM,
    float32 for rooms), each of `segment_samples`."""
    names = layout.KINDS[self._kind]
    if len(signals) != len(names):
      raise ValueError(f"Example {example_id}: a {self._kind} split stores {len(names)} "
                       f"signal(s) per example ({', '.join(names)}), got {len(signals)}.")
    if len(signals[0]) != self._segment_samples:
      raise ValueError(f"Example {example_id} has {len(signals[0])} samples; this split "
                       f"holds segments of {self._segment_samples}.")
    shard = self._next % len(self._writers)
    record = serialize_example(dict(zip(names, signals)), self._sample_rate, example_id,
                               self._kind)
    with self._failing_writes_abort():
      self._writers[shard].write(record)
    self._counts[shard] += 1
    self._next += 1

  def close(self) -> layout.Manifest:
    """Puts the shards and then the manifest in place; returns the manifest.

    A split this replaces is moved aside first and removed only once the new
    one is whole; if anything fails it is moved back, so the directory holds
    either the old split or the new one, never a split without its manifest.
    """
    if self._next == 0:
      self.abort()
      raise ValueError(f"No examples were written for split {self._split!r}.")
    with self._failing_writes_abort():
      for writer in self._writers:
        writer.close()  # flushes: a full disk may only show here
      manifest = layout.Manifest(data_dir=self._dir, split=self._split, shards=tuple(self._names),
                          examples_per_shard=tuple(self._counts),
                          sample_rate=self._sample_rate,
                          segment_samples=self._segment_samples,
                          compression=self._compression,
                          shard_bytes=tuple(tf.io.gfile.stat(self._tmp(n)).length
                                            for n in self._names),
                          kind=self._kind)
      self._install(manifest)
    return manifest

  def _install(self, manifest: layout.Manifest):
    """Old split aside, new shards and manifest in, old split removed; undone on failure."""
    old = layout.split_shards(self._dir, self._split) + [
        path for path in [layout.manifest_path(self._dir, self._split)] if tf.io.gfile.exists(path)]
    undo = []  # (from, to) renames that put things back, newest first
    try:
      for path in old:
        aside = os.path.join(self._dir, f".{os.path.basename(path)}.previous")
        tf.io.gfile.rename(path, aside, overwrite=True)
        undo.insert(0, (aside, path))
      for name in self._names:
        tf.io.gfile.rename(self._tmp(name), os.path.join(self._dir, name))
        undo.insert(0, (os.path.join(self._dir, name), self._tmp(name)))
      files.write_text(layout.manifest_path(self._dir, self._split), manifest.to_json())
    except (tf.errors.OpError, OSError):
      for source, target in undo:
        tf.io.gfile.rename(source, target, overwrite=True)
      raise
    for source, _ in undo:
      if source.endswith(".previous"):
        tf.io.gfile.remove(source)

  def abort(self):
    """Closes and deletes every temporary shard (a writer that cannot flush is dropped)."""
    for writer in self._writers:
      try:
        writer.close()
      except (tf.errors.OpError, OSError):
        pass  # its file is removed next; the caller reports the first failure
    for name in self._names:
      if tf.io.gfile.exists(self._tmp(name)):
        tf.io.gfile.remove(self._tmp(name))

  def __enter__(self):
    return self

  def __exit__(self, exc_type, exc, tb):
    if exc_type is not None:
      self.abort()


def write_split(examples: Iterable[Tuple], output_dir: str, split: str,
                **writer_args) -> layout.Manifest:
  """Writes examples - `(*signals, id)`, e.g. `(noisy_pcm, clean_pcm, id)` for pairs - into
  shards; returns the manifest."""
  with ShardWriter(output_dir, split, **writer_args) as writer:
    for *signals, example_id in examples:
      writer.write(*signals, example_id=example_id)
    return writer.close()
