"""What a split is on disk: the kinds of records, shard and manifest names, compression, and the Manifest."""

import dataclasses
import json
import os
import re
from typing import List, Tuple

import numpy as np
import tensorflow as tf

from common import checks

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
