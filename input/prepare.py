"""Corpus preparer: paired noisy/clean audio files -> resampled int16 segments in TFRecord shards.

Run:
  python -m input.prepare --noisy_dir=corpus/noisy --clean_dir=corpus/clean \
      --output_dir=data/train --split=train
"""

import dataclasses
import os
import sys
from typing import Iterator, List, Optional, Tuple

from absl import app
from absl import flags
from absl import logging
import numpy as np
import tensorflow as tf

from common import checks
from common import progress
from input import audio
from input import records


@dataclasses.dataclass(frozen=True)
class Pair:
  relative_path: str
  noisy_path: str
  clean_path: str


def find_pairs(noisy_dir: str, clean_dir: str) -> List[Pair]:
  """Audio files paired by their path relative to each directory, sorted."""
  if os.path.realpath(noisy_dir) == os.path.realpath(clean_dir):
    raise ValueError(f"--noisy_dir and --clean_dir are the same directory ({noisy_dir}): "
                     "each noisy file would be its own target. Pass the clean recordings' "
                     "directory as --clean_dir.")
  found = {}
  for name, root in (("noisy_dir", noisy_dir), ("clean_dir", clean_dir)):
    if not tf.io.gfile.isdir(root):
      raise ValueError(f"--{name}={root} is not a directory.")
    found[name] = {
        os.path.relpath(os.path.join(d, f), root)
        for d, _, files in tf.io.gfile.walk(root) for f in files
        if f.lower().endswith(audio.AUDIO_SUFFIXES)}
    if not found[name]:
      raise ValueError(f"--{name}={root} holds no {'/'.join(audio.AUDIO_SUFFIXES)} files.")
  for this, other in (("noisy_dir", "clean_dir"), ("clean_dir", "noisy_dir")):
    unpaired = sorted(found[this] - found[other])
    if unpaired:
      root = noisy_dir if this == "noisy_dir" else clean_dir
      raise ValueError(
          f"{os.path.join(root, unpaired[0])} has no partner in --{other} "
          f"({len(unpaired)} unpaired file(s)); pairs must share their relative path.")
  return [Pair(rel, os.path.join(noisy_dir, rel), os.path.join(clean_dir, rel))
          for rel in sorted(found["noisy_dir"])]


def segments(signal: np.ndarray, segment_samples: int, hop_samples: int,
             drop_last: bool) -> Iterator[np.ndarray]:
  """Segments of `segment_samples` every `hop_samples`, never padded with silence (digital
  silence is not what the model meets in use): a short tail becomes one more segment that
  ends where the signal ends, overlapping the one before, unless `drop_last`. A signal
  shorter than one segment yields none."""
  starts = list(range(0, len(signal) - segment_samples + 1, hop_samples))
  if starts and not drop_last and starts[-1] + segment_samples < len(signal):
    starts.append(len(signal) - segment_samples)
  for start in starts:
    yield signal[start:start + segment_samples]


def load_pair(pair: Pair, sample_rate: int) -> Tuple[np.ndarray, np.ndarray]:
  """Decodes, checks and resamples one pair."""
  noisy, noisy_rate = audio.load(pair.noisy_path)
  clean, clean_rate = audio.load(pair.clean_path)
  if noisy_rate != clean_rate:
    raise audio.AudioError(f"{pair.relative_path}: noisy is {noisy_rate} Hz but clean is "
                           f"{clean_rate} Hz; a pair must share its sample rate.")
  if len(noisy) != len(clean):
    raise audio.AudioError(f"{pair.relative_path}: noisy has {len(noisy)} samples but "
                           f"clean has {len(clean)}; a pair must be the same length.")
  for name, signal in (("noisy", noisy), ("clean", clean)):
    clipped = int(np.count_nonzero(np.abs(signal) >= 0.999))
    if clipped:
      logging.warning("%s (%s): %d samples at full scale: the recording is probably "
                      "clipped.", pair.relative_path, name, clipped)
  return (audio.resample(noisy, noisy_rate, sample_rate, name=pair.noisy_path),
          audio.resample(clean, clean_rate, sample_rate, name=pair.clean_path))


def prepare(noisy_dir: str, clean_dir: str, output_dir: str, *, split: str = "train",
            sample_rate: int = 48000, segment_seconds: float = 10.0,
            hop_seconds: Optional[float] = None, drop_last: bool = False,
            num_shards: int = 16, compression: str = "none",
            overwrite: bool = False) -> records.Manifest:
  """Writes the pairs under `noisy_dir`/`clean_dir` as a split; returns its manifest.

  Segments start every `hop_seconds` (default: `segment_seconds`, back to back);
  files shorter than one segment are skipped with a warning.
  """
  hop_seconds = segment_seconds if hop_seconds is None else hop_seconds
  for name, value in (("sample_rate", sample_rate), ("segment_seconds", segment_seconds),
                      ("hop_seconds", hop_seconds)):
    checks.positive(name, value)
  records.tfrecord_compression(compression)
  if audio.tfio_problem() is not None:
    logging.warning("tensorflow-io's ops cannot load (%s); reading 16-bit WAV at "
                    "%d Hz only. %s", audio.tfio_problem(), sample_rate, audio.WHY_TFIO)
  pairs = find_pairs(noisy_dir, clean_dir)
  segment = int(round(segment_seconds * sample_rate))
  hop = int(round(hop_seconds * sample_rate))
  meter = progress.Progress(f"prepare {split}", len(pairs), "files")

  with records.ShardWriter(output_dir, split, num_shards=num_shards,
                           sample_rate=sample_rate, segment_samples=segment,
                           compression=compression, overwrite=overwrite) as writer:
    for done, pair in enumerate(pairs, 1):
      noisy, clean = load_pair(pair, sample_rate)
      if len(clean) < segment:
        logging.warning("%s: %.2f s, shorter than one %g s segment: skipped.",
                        pair.relative_path, len(clean) / sample_rate, segment_seconds)
      for index, (noisy_piece, clean_piece) in enumerate(zip(
          segments(noisy, segment, hop, drop_last), segments(clean, segment, hop, drop_last))):
        (noisy_pcm, noisy_clipped), (clean_pcm, _) = (records.to_int16(noisy_piece),
                                                      records.to_int16(clean_piece))
        if noisy_clipped:
          logging.warning("%s: %d samples clipped after resampling.", pair.relative_path,
                          noisy_clipped)
        writer.write(noisy_pcm, clean_pcm, example_id=f"{pair.relative_path}#{index}")
      meter.update(done)
    return writer.close()


FLAGS = flags.FLAGS


def main(argv):
  del argv
  try:
    manifest = prepare(FLAGS.noisy_dir, FLAGS.clean_dir, FLAGS.output_dir,
                       split=FLAGS.split, sample_rate=FLAGS.sample_rate,
                       segment_seconds=FLAGS.segment_seconds, hop_seconds=FLAGS.hop_seconds,
                       drop_last=FLAGS.drop_last, num_shards=FLAGS.num_shards,
                       compression=FLAGS.compression, overwrite=FLAGS.overwrite)
  except checks.ArgumentError as e:
    sys.exit(f"input.prepare: {e.flag()}")
  except (ValueError, OSError) as e:  # OSError: existing split, or the disk refused
    sys.exit(f"input.prepare: {e}")
  print(f"Wrote {manifest.num_examples} segments ({manifest.total_hours:.3f} h) in "
        f"{len(manifest.shards)} shards; manifest: "
        f"{records.manifest_path(FLAGS.output_dir, FLAGS.split)}")


if __name__ == "__main__":
  flags.DEFINE_string("noisy_dir", None, "Directory of noisy audio (WAV/FLAC).")
  flags.DEFINE_string("clean_dir", None, "Directory of clean audio, same relative paths.")
  flags.DEFINE_string("output_dir", None, "Where to write shards and the manifest.")
  flags.DEFINE_string("split", "train", "Split name (file prefix).")
  flags.DEFINE_integer("sample_rate", 48000, "Target sample rate (resampled with tensorflow-io).")
  flags.DEFINE_float("segment_seconds", 10.0, "Length of each stored segment.")
  flags.DEFINE_float("hop_seconds", None, "Step between segment starts (default: "
                     "--segment_seconds, back to back).")
  flags.DEFINE_bool("drop_last", False, "Drop each file's short tail instead of storing a "
                    "last segment that ends at the file's end (overlapping the one before).")
  flags.DEFINE_integer("num_shards", 16, "TFRecord shards (>= the number of input pipelines).")
  flags.DEFINE_enum("compression", "none", sorted(records.COMPRESSIONS),
                    "TFRecord compression (none reads fastest; audio barely compresses).")
  flags.DEFINE_bool("overwrite", False, "Replace the split if --output_dir already holds it.")
  flags.mark_flags_as_required(["noisy_dir", "clean_dir", "output_dir"])
  app.run(main)
