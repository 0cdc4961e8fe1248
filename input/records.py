"""The on-disk format: TFRecord shards of noisy/clean pairs or of single signals (clean, noise, rooms), their manifest, writer and batch parser."""

import contextlib
import dataclasses
import json
import os
import re
from typing import Dict, Iterable, List, Optional, Tuple

from absl import logging
import numpy as np
import tensorflow as tf

from common import checks
from common import files

# User-facing names -> TFRecord compression types. TFRecordDataset reads any
# other string silently as uncompressed, so nothing else may reach it.
COMPRESSIONS = {"none": "", "zlib": "ZLIB", "gzip": "GZIP"}
MANIFEST_VERSION = 1
# What a split holds -> the signals of each record. "pairs" train as they are; "clean",
# "noise" and "rir" (room impulse responses) are sources that ops.Mix mixes in the step.
KINDS = {"pairs": ("noisy", "clean"), "clean": ("clean",), "noise": ("noise",),
         "rir": ("rir",)}
# Audio is int16 PCM; room responses are float32 (their tails sit 60 dB below the peak).
SAMPLE_DTYPES = {"pairs": np.int16, "clean": np.int16, "noise": np.int16, "rir": np.float32}


def check_kind(kind: str) -> str:
  """`kind`, if it is one of KINDS."""
  return checks.one_of("kind", kind, list(KINDS))


def tfrecord_compression(name: str) -> str:
  """The TFRecord compression type for `name` (none|zlib|gzip); ValueError otherwise."""
  try:
    return COMPRESSIONS[name]
  except KeyError:
    raise ValueError(f"Unknown compression {name!r}: use one of {sorted(COMPRESSIONS)} "
                     "(TFRecord supports no others).") from None


def check_split_name(split: str) -> str:
  """`split`, if it can name files: letters, digits, '.', '_' and '-', not starting with '.'."""
  if not re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9._-]*", split or ""):
    raise checks.ArgumentError("split", repr(split), "must be a name of letters, digits, '.', "
                               "'_' and '-' (it prefixes the shard and manifest files).")
  return split


def shard_name(split: str, index: int, count: int) -> str:
  return f"{split}-{index:05d}-of-{count:05d}.tfrecord"


def manifest_path(data_dir: str, split: str) -> str:
  return os.path.join(data_dir, f"{split}.manifest.json")


def split_shards(data_dir: str, split: str) -> List[str]:
  """The shard files of exactly `split` in `data_dir` (not of `split-other`, say)."""
  pattern = re.compile(rf"{re.escape(split)}-\d{{5}}-of-\d{{5}}\.tfrecord")
  return sorted(path for path in tf.io.gfile.glob(os.path.join(data_dir, f"{split}-*.tfrecord"))
                if pattern.fullmatch(os.path.basename(path)))


@dataclasses.dataclass(frozen=True)
class Manifest:
  """What a split holds: written last by the writer, read first by every reader."""
  data_dir: str
  split: str
  shards: Tuple[str, ...]
  examples_per_shard: Tuple[int, ...]
  sample_rate: int
  segment_samples: int
  compression: str
  shard_bytes: Tuple[int, ...]
  kind: str = "pairs"

  @property
  def signals(self) -> Tuple[str, ...]:
    """The signals each record holds (`KINDS[kind]`)."""
    return KINDS[self.kind]

  @property
  def num_examples(self) -> int:
    return sum(self.examples_per_shard)

  @property
  def total_hours(self) -> float:
    return self.num_examples * self.segment_samples / self.sample_rate / 3600

  @property
  def paths(self) -> List[str]:
    return [os.path.join(self.data_dir, s) for s in self.shards]

  @property
  def record_bytes(self) -> int:
    """Approximate size of one serialized example (its signals + fields)."""
    itemsize = np.dtype(SAMPLE_DTYPES[self.kind]).itemsize
    return len(self.signals) * itemsize * self.segment_samples + 128

  def to_json(self) -> str:
    fields = dataclasses.asdict(self)
    del fields["data_dir"]
    fields.update(version=MANIFEST_VERSION, num_examples=self.num_examples,
                  total_hours=round(self.total_hours, 6),
                  examples_per_shard=list(self.examples_per_shard),
                  shards=list(self.shards), shard_bytes=list(self.shard_bytes))
    return json.dumps(fields, indent=2) + "\n"


def read_manifest(data_dir: str, split: str, kind: Optional[str] = None) -> Manifest:
  """Reads and checks `{split}.manifest.json` in `data_dir` (and, given `kind`, that the
  split holds that kind of records)."""
  path = manifest_path(data_dir, split)
  if not tf.io.gfile.exists(path):
    raise FileNotFoundError(
        f"No manifest at {path}: prepare the data first (python -m input.prepare or "
        "python -m input.synthetic), or pass the directory that holds it.")
  fields = files.read_json(path, fix="re-create the split.")
  try:
    manifest = Manifest(
        data_dir=data_dir, split=fields["split"], shards=tuple(fields["shards"]),
        examples_per_shard=tuple(int(n) for n in fields["examples_per_shard"]),
        sample_rate=int(fields["sample_rate"]),
        segment_samples=int(fields["segment_samples"]),
        compression=fields["compression"],
        shard_bytes=tuple(int(n) for n in fields["shard_bytes"]),
        kind=fields.get("kind", "pairs"))  # manifests before sources existed hold pairs
  except (ValueError, KeyError, TypeError) as e:
    raise ValueError(f"Manifest {path} is not valid ({e!r}); re-create the split.") from e
  if manifest.kind not in KINDS:
    raise ValueError(f"Manifest {path} says kind {manifest.kind!r}, not one of {list(KINDS)}; "
                     "re-create the split.")
  if kind is not None:
    require_kind(manifest, kind)
  tfrecord_compression(manifest.compression)
  if (not manifest.shards or len(manifest.shards) != len(manifest.examples_per_shard)
      or len(manifest.shards) != len(manifest.shard_bytes)):
    raise ValueError(f"Manifest {path} lists {len(manifest.shards)} shards, "
                     f"{len(manifest.examples_per_shard)} counts and "
                     f"{len(manifest.shard_bytes)} sizes; re-create the split.")
  if not manifest.num_examples or min(manifest.examples_per_shard) < 0:
    raise ValueError(f"Manifest {path} lists {manifest.num_examples} examples "
                     f"({list(manifest.examples_per_shard)} per shard): a split needs at least "
                     "one; re-create it.")
  missing = [p for p in manifest.paths if not tf.io.gfile.exists(p)]
  if missing:
    raise FileNotFoundError(f"Manifest {path} names shards that do not exist: "
                            f"{missing[:3]}{' ...' if len(missing) > 3 else ''}")
  # TFRecordDataset can read a truncated shard as a shorter one without an
  # error, so sizes (one stat per shard) are checked before anything trains.
  for shard, expected in zip(manifest.paths, manifest.shard_bytes):
    size = tf.io.gfile.stat(shard).length
    if size != expected:
      raise ValueError(f"Shard {shard} is {size} bytes but the manifest says {expected}: "
                       "it was truncated or rewritten. Re-create the split.")
  _check_against_a_record(manifest, path)
  return manifest


def _first_record(shard: str, compression: str) -> Optional[bytes]:
  """The shard's first record read with `compression`, or None if that cannot read it."""
  try:
    dataset = tf.data.TFRecordDataset(shard, compression_type=tfrecord_compression(compression))
    return next(iter(dataset.take(1))).numpy()
  except (tf.errors.OpError, StopIteration):
    return None


def _check_against_a_record(manifest: Manifest, path: str):
  """Compares the manifest's compression, sample rate and segment length with the first
  record's (the records carry their own rate and length)."""
  shard = next(p for p, n in zip(manifest.paths, manifest.examples_per_shard) if n)
  record = _first_record(shard, manifest.compression)
  if record is None:
    actual = [c for c in COMPRESSIONS if c != manifest.compression
              and _first_record(shard, c) is not None]
    if actual:
      raise ValueError(f"Manifest {path} says compression {manifest.compression!r}, but "
                       f"{shard} is {actual[0]!r}: fix the manifest's compression or "
                       "re-create the split.")
    return  # unreadable either way: find_bad_shards names it when training reads it
  feature = tf.train.Example.FromString(record).features.feature
  rate = feature["sample_rate"].int64_list.value[0]
  samples = feature["num_samples"].int64_list.value[0]
  if (rate, samples) != (manifest.sample_rate, manifest.segment_samples):
    raise ValueError(f"Manifest {path} says {manifest.sample_rate} Hz and "
                     f"{manifest.segment_samples}-sample segments, but the records in "
                     f"{shard} hold {rate} Hz and {samples}: re-create the split.")


def require_kind(manifest: Manifest, kind: str) -> Manifest:
  """`manifest`, if its split holds `kind` records (else a ValueError saying what to pass)."""
  if manifest.kind != check_kind(kind):
    sources = (" (to train from separate clean and noise stores instead, pass --clean_split "
               "and --noise_split)" if kind == "pairs" else "")
    raise ValueError(f"Split {manifest.split!r} in {manifest.data_dir} holds {manifest.kind} "
                     f"records, but {kind} records are needed here: pass a split that python "
                     f"-m input.prepare --kind={kind} wrote{sources}.")
  return manifest


def serialize_example(signals: Dict[str, np.ndarray], sample_rate: int,
                      example_id: str, kind: str = "pairs") -> bytes:
  """One segment as a tf.train.Example: `signals` holds `KINDS[kind]`, equal-length 1-D
  arrays of the kind's sample dtype (int16 PCM for audio), stored little-endian."""
  dtype = np.dtype(SAMPLE_DTYPES[check_kind(kind)])
  if sorted(signals) != sorted(KINDS[kind]):
    raise ValueError(f"Example {example_id}: a {kind} record holds {list(KINDS[kind])}, "
                     f"got {sorted(signals)}.")
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
    self._kind = check_kind(kind)
    check_split_name(split)
    tfrecord_compression(compression)
    existing = split_shards(output_dir, split)
    if not overwrite and (existing or tf.io.gfile.exists(manifest_path(output_dir, split))):
      raise FileExistsError(f"{output_dir} already holds split {split!r} ({len(existing)} "
                            "shard(s)); nothing was changed. Pass overwrite (--overwrite) "
                            "to replace it, or choose another split or directory.")
    self._dir, self._split = output_dir, split
    self._remove_leftovers()
    self._sample_rate, self._segment_samples = sample_rate, segment_samples
    self._compression = compression
    self._names = [shard_name(split, i, num_shards) for i in range(num_shards)]
    self._counts = [0] * num_shards
    options = tf.io.TFRecordOptions(compression_type=tfrecord_compression(compression))
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
    names = KINDS[self._kind]
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

  def close(self) -> Manifest:
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
      manifest = Manifest(data_dir=self._dir, split=self._split, shards=tuple(self._names),
                          examples_per_shard=tuple(self._counts),
                          sample_rate=self._sample_rate,
                          segment_samples=self._segment_samples,
                          compression=self._compression,
                          shard_bytes=tuple(tf.io.gfile.stat(self._tmp(n)).length
                                            for n in self._names),
                          kind=self._kind)
      self._install(manifest)
    return manifest

  def _install(self, manifest: Manifest):
    """Old split aside, new shards and manifest in, old split removed; undone on failure."""
    old = split_shards(self._dir, self._split) + [
        path for path in [manifest_path(self._dir, self._split)] if tf.io.gfile.exists(path)]
    undo = []  # (from, to) renames that put things back, newest first
    try:
      for path in old:
        aside = os.path.join(self._dir, f".{os.path.basename(path)}.previous")
        tf.io.gfile.rename(path, aside, overwrite=True)
        undo.insert(0, (aside, path))
      for name in self._names:
        tf.io.gfile.rename(self._tmp(name), os.path.join(self._dir, name))
        undo.insert(0, (os.path.join(self._dir, name), self._tmp(name)))
      files.write_text(manifest_path(self._dir, self._split), manifest.to_json())
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
                **writer_args) -> Manifest:
  """Writes examples - `(*signals, id)`, e.g. `(noisy_pcm, clean_pcm, id)` for pairs - into
  shards; returns the manifest."""
  with ShardWriter(output_dir, split, **writer_args) as writer:
    for *signals, example_id in examples:
      writer.write(*signals, example_id=example_id)
    return writer.close()


def parse_batch(serialized: tf.Tensor, *, segment_samples: int, kind: str = "pairs",
                crop_samples: Optional[int] = None,
                crop_offsets: Optional[tf.Tensor] = None) -> Dict[str, tf.Tensor]:
  """Parses (and optionally crops) a batch of serialized examples in one go.

  Cropping cuts the byte strings before decoding (`tf.strings.substr`), so
  only the kept samples are ever converted.

  Args:
    serialized: `[batch]` string tensor of serialized tf.train.Examples.
    segment_samples: the split's segment length (from the manifest).
    kind: what the records hold (the manifest's `kind`).
    crop_samples: keep this many samples per example (default: all).
    crop_offsets: `[batch]` int32 start sample of each crop (default: 0).

  Returns:
    The kind's signals (`noisy`, `clean` for pairs): `[batch, crop_samples]` int16
    (float32 for rooms); `id`: `[batch]` string.
  """
  names = KINDS[check_kind(kind)]
  dtype = tf.as_dtype(SAMPLE_DTYPES[kind])
  spec = {name: tf.io.FixedLenFeature([], tf.string) for name in names}
  spec["id"] = tf.io.FixedLenFeature([], tf.string, default_value="")
  features = tf.io.parse_example(serialized, spec)
  length = segment_samples if crop_samples is None else crop_samples
  out = {"id": features["id"]}
  for key in names:
    raw = features[key]
    if length != segment_samples or crop_offsets is not None:
      offsets = (tf.zeros(tf.shape(features["id"]), tf.int32) if crop_offsets is None
                 else crop_offsets)
      raw = tf.strings.substr(raw, dtype.size * offsets,
                              tf.fill(tf.shape(offsets), dtype.size * length))
    out[key] = tf.ensure_shape(tf.io.decode_raw(raw, dtype, little_endian=True),
                               [None, length])
  return out


def to_float(samples: tf.Tensor) -> tf.Tensor:
  """Parsed samples as float32 audio: int16 PCM scaled to [-1, 1), float32 as it is."""
  return pcm_to_float(samples) if samples.dtype == tf.int16 else tf.cast(samples, tf.float32)


def pcm_to_float(pcm: tf.Tensor) -> tf.Tensor:
  """int16 PCM -> float32 in [-1, 1)."""
  return tf.cast(pcm, tf.float32) * (1.0 / 32768.0)


def find_bad_shards(manifest: Manifest) -> List[str]:
  """Reads every shard in full; returns one message per unreadable or miscounted shard.

  TFRecord read errors ("corrupted record at 2044") do not name the file, so
  callers run this after a `tf.errors.DataLossError` to say which one it was.
  """
  problems = []
  for path, expected in zip(manifest.paths, manifest.examples_per_shard):
    dataset = tf.data.TFRecordDataset(path, tfrecord_compression(manifest.compression))
    try:
      count = int(dataset.reduce(np.int64(0), lambda n, _: n + 1))
    except (tf.errors.DataLossError, tf.errors.OutOfRangeError) as e:
      problems.append(f"{path}: unreadable ({e.message.splitlines()[-1].strip()})")
      continue
    if count != expected:
      problems.append(f"{path}: holds {count} records, the manifest says {expected}")
  return problems
