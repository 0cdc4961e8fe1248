"""Reading a split: its manifest, checked against the shards and a record before anything trains, and the shard that is damaged."""

from typing import List, Optional

import numpy as np
import tensorflow as tf

from common import files
from input.records import layout


def read_manifest(data_dir: str, split: str, kind: Optional[str] = None) -> layout.Manifest:
  """Reads and checks `{split}.manifest.json` in `data_dir` (and, given `kind`, that the
  split holds that kind of records)."""
  path = layout.manifest_path(data_dir, split)
  if not tf.io.gfile.exists(path):
    raise FileNotFoundError(
        f"No manifest at {path}: prepare the data first (python -m input.prepare or "
        "python -m input.synthetic), or pass the directory that holds it.")
  fields = files.read_json(path, fix="re-create the split.")
  try:
    manifest = layout.Manifest(
        data_dir=data_dir, split=fields["split"], shards=tuple(fields["shards"]),
        examples_per_shard=tuple(int(n) for n in fields["examples_per_shard"]),
        sample_rate=int(fields["sample_rate"]),
        segment_samples=int(fields["segment_samples"]),
        compression=fields["compression"],
        shard_bytes=tuple(int(n) for n in fields["shard_bytes"]),
        kind=fields.get("kind", "pairs"))  # manifests before sources existed hold pairs
  except (ValueError, KeyError, TypeError) as e:
    raise ValueError(f"Manifest {path} is not valid ({e!r}); re-create the split.") from e
  if manifest.kind not in layout.KINDS:
    raise ValueError(f"Manifest {path} says kind {manifest.kind!r}, not one of "
                     f"{list(layout.KINDS)}; re-create the split.")
  if kind is not None:
    require_kind(manifest, kind)
  layout.tfrecord_compression(manifest.compression)
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
    dataset = tf.data.TFRecordDataset(
        shard, compression_type=layout.tfrecord_compression(compression))
    return next(iter(dataset.take(1))).numpy()
  except (tf.errors.OpError, StopIteration):
    return None


def _check_against_a_record(manifest: layout.Manifest, path: str):
  """Compares the manifest's compression, sample rate and segment length with the first
  record's (the records carry their own rate and length)."""
  shard = next(p for p, n in zip(manifest.paths, manifest.examples_per_shard) if n)
  record = _first_record(shard, manifest.compression)
  if record is None:
    actual = [c for c in layout.COMPRESSIONS if c != manifest.compression
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


def require_kind(manifest: layout.Manifest, kind: str) -> layout.Manifest:
  """`manifest`, if its split holds `kind` records (else a ValueError saying what to pass)."""
  if manifest.kind != layout.check_kind(kind):
    sources = (" (to train from separate clean and noise stores instead, pass --clean_split "
               "and --noise_split)" if kind == "pairs" else "")
    raise ValueError(f"Split {manifest.split!r} in {manifest.data_dir} holds {manifest.kind} "
                     f"records, but {kind} records are needed here: pass a split that python "
                     f"-m input.prepare --kind={kind} wrote{sources}.")
  return manifest


def find_bad_shards(manifest: layout.Manifest) -> List[str]:
  """Reads every shard in full; returns one message per unreadable or miscounted shard.

  TFRecord read errors ("corrupted record at 2044") do not name the file, so
  callers run this after a `tf.errors.DataLossError` to say which one it was.
  """
  problems = []
  for path, expected in zip(manifest.paths, manifest.examples_per_shard):
    dataset = tf.data.TFRecordDataset(path, layout.tfrecord_compression(manifest.compression))
    try:
      count = int(dataset.reduce(np.int64(0), lambda n, _: n + 1))
    except (tf.errors.DataLossError, tf.errors.OutOfRangeError) as e:
      problems.append(f"{path}: unreadable ({e.message.splitlines()[-1].strip()})")
      continue
    if count != expected:
      problems.append(f"{path}: holds {count} records, the manifest says {expected}")
  return problems
