"""Corpus preparer: audio files -> resampled segments in TFRecord shards, as noisy/clean pairs or as clean, noise or room stores.

Run:
  python -m input.prepare --noisy_dir=corpus/noisy --clean_dir=corpus/clean \
      --output_dir=data --split=train                       # stored pairs
  python -m input.prepare --kind=clean --input_dir=speech --output_dir=data --split=speech
  python -m input.prepare --kind=noise --input_dir=noises --output_dir=data --split=noise
  python -m input.prepare --kind=rir --input_dir=measured_rirs --output_dir=data --split=rooms
  python -m input.prepare --kind=rir --simulated_rooms=500 --output_dir=data --split=rooms
"""

import dataclasses
import os
from typing import Iterator, List, Optional, Tuple

from absl import app
from absl import flags
from absl import logging
import numpy as np
import tensorflow as tf

from common import checks
from common import cli
from common import progress
from input import audio
from input import records
from input import rooms


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
  found = {"noisy_dir": set(find_audio(noisy_dir, "noisy_dir")),
           "clean_dir": set(find_audio(clean_dir, "clean_dir"))}
  for this, other in (("noisy_dir", "clean_dir"), ("clean_dir", "noisy_dir")):
    unpaired = sorted(found[this] - found[other])
    if unpaired:
      root = noisy_dir if this == "noisy_dir" else clean_dir
      raise ValueError(
          f"{os.path.join(root, unpaired[0])} has no partner in --{other} "
          f"({len(unpaired)} unpaired file(s)); pairs must share their relative path.")
  return [Pair(rel, os.path.join(noisy_dir, rel), os.path.join(clean_dir, rel))
          for rel in sorted(found["noisy_dir"])]


def find_audio(root: str, flag_name: str) -> List[str]:
  """The audio files under `root`, as sorted paths relative to it (ValueError if none)."""
  if not tf.io.gfile.isdir(root):
    raise ValueError(f"--{flag_name}={root} is not a directory.")
  found = sorted(os.path.relpath(os.path.join(d, f), root)
                 for d, _, files in tf.io.gfile.walk(root) for f in files
                 if f.lower().endswith(audio.AUDIO_SUFFIXES))
  if not found:
    raise ValueError(f"--{flag_name}={root} holds no {'/'.join(audio.AUDIO_SUFFIXES)} files.")
  return found


def segments(signal: np.ndarray, segment_samples: int, hop_samples: int,
             drop_last: bool) -> Iterator[np.ndarray]:
  """Segments of `segment_samples` every `hop_samples`, never padded with silence (digital
  silence is not what the model meets in use): a short tail becomes one more segment that
  ends where the signal ends, overlapping the one before, unless `drop_last`. A signal
  shorter than one segment yields none."""
  for start in audio.window_starts(len(signal), segment_samples, hop_samples,
                                  tail=not drop_last):
    yield signal[start:start + segment_samples]


def load_pair(pair: Pair, sample_rate: int) -> Tuple[np.ndarray, np.ndarray]:
  """Decodes, checks and resamples one pair."""
  noisy, noisy_rate = audio.read_file(pair.noisy_path)
  clean, clean_rate = audio.read_file(pair.clean_path)
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
  segment, hop = _segment_samples(sample_rate, segment_seconds, hop_seconds)
  records.tfrecord_compression(compression)
  pairs = find_pairs(noisy_dir, clean_dir)
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
        (noisy_pcm, noisy_clipped), (clean_pcm, _) = (audio.to_int16(noisy_piece),
                                                      audio.to_int16(clean_piece))
        if noisy_clipped:
          logging.warning("%s: %d samples clipped after resampling.", pair.relative_path,
                          noisy_clipped)
        writer.write(noisy_pcm, clean_pcm, example_id=f"{pair.relative_path}#{index}")
      meter.update(done)
    return writer.close()


def prepare_sources(input_dir: str, output_dir: str, *, kind: str, split: str,
                    sample_rate: int = 48000, segment_seconds: float = 10.0,
                    hop_seconds: Optional[float] = None, drop_last: bool = False,
                    num_shards: int = 16, compression: str = "none",
                    overwrite: bool = False) -> records.Manifest:
  """Writes the audio files under `input_dir` as a clean-speech or noise store (int16
  segments, cut as `prepare` cuts pairs); returns its manifest."""
  if records.check_kind(kind) not in ("clean", "noise"):
    raise checks.ArgumentError("kind", kind, "must be clean or noise here (pairs: prepare; "
                               "rir: prepare_rooms).")
  segment, hop = _segment_samples(sample_rate, segment_seconds, hop_seconds)
  records.tfrecord_compression(compression)
  names = find_audio(input_dir, "input_dir")
  meter = progress.Progress(f"prepare {split} ({kind})", len(names), "files")
  with records.ShardWriter(output_dir, split, num_shards=num_shards, sample_rate=sample_rate,
                           segment_samples=segment, compression=compression,
                           overwrite=overwrite, kind=kind) as writer:
    for done, name in enumerate(names, 1):
      path = os.path.join(input_dir, name)
      signal, rate = audio.read_file(path)
      signal = audio.resample(signal, rate, sample_rate, name=path)
      if len(signal) < segment:
        logging.warning("%s: %.2f s, shorter than one %g s segment: skipped.", name,
                        len(signal) / sample_rate, segment_seconds)
      for index, piece in enumerate(segments(signal, segment, hop, drop_last)):
        pcm, clipped = audio.to_int16(piece)
        if clipped:
          logging.warning("%s: %d samples clipped after resampling.", name, clipped)
        writer.write(pcm, example_id=f"{name}#{index}")
      meter.update(done)
    return writer.close()


def prepare_rooms(output_dir: str, *, split: str, input_dir: Optional[str] = None,
                  simulated_rooms: int = 0, sample_rate: int = 48000,
                  rir_seconds: float = 1.0, seed: int = 0, num_shards: int = 4,
                  compression: str = "none", overwrite: bool = False) -> records.Manifest:
  """Writes a room store: the impulse responses under `input_dir` (one per file) and/or
  `simulated_rooms` simulated ones (input.rooms), each `rir_seconds` long (longer ones are
  cut, with a warning saying how much energy that drops; shorter ones end in zeros),
  float32 with peak 1; returns its manifest."""
  checks.at_least("simulated_rooms", simulated_rooms, 0)
  if input_dir is None and not simulated_rooms:
    raise ValueError("No rooms: pass --input_dir=<measured responses (WAV/FLAC)>, "
                     "--simulated_rooms=N, or both.")
  taps, _ = _segment_samples(sample_rate, rir_seconds, None, name="rir_seconds")
  records.tfrecord_compression(compression)
  names = find_audio(input_dir, "input_dir") if input_dir is not None else []
  meter = progress.Progress(f"prepare {split} (rooms)", len(names) + simulated_rooms, "rooms")
  with records.ShardWriter(output_dir, split, num_shards=num_shards, sample_rate=sample_rate,
                           segment_samples=taps, compression=compression,
                           overwrite=overwrite, kind="rir") as writer:
    for done, name in enumerate(names, 1):
      path = os.path.join(input_dir, name)
      response, rate = audio.read_file(path)
      writer.write(_room_response(audio.resample(response, rate, sample_rate, name=path),
                                  taps, path), example_id=name)
      meter.update(done)
    simulated = rooms.simulated_set(simulated_rooms, sample_rate=sample_rate,
                                    seconds=rir_seconds, seed=seed) if simulated_rooms else []
    for index, (response, room) in enumerate(simulated):
      writer.write(response, example_id=f"simulated-{seed}-{index} t60={room.t60:.2f}s "
                   f"distance={room.distance:.2f}m room={'x'.join(f'{x:.1f}' for x in room.size)}m")
      meter.update(len(names) + index + 1)
    return writer.close()


def _room_response(response: np.ndarray, taps: int, path: str) -> np.ndarray:
  """`response` cut or zero-padded to `taps`, peak 1, float32."""
  peak = np.abs(response).max() if len(response) else 0.0
  if not peak:
    raise audio.AudioError(f"{path}: the response is silent; remove the file.")
  energy = np.sum(np.square(response))
  if len(response) > taps:
    dropped = np.sum(np.square(response[taps:])) / energy
    if dropped > 1e-3:
      logging.warning("%s: %.1f%% of the response's energy lies past --rir_seconds and is "
                      "dropped.", path, 100 * dropped)
  out = np.zeros(taps, np.float32)
  out[:min(taps, len(response))] = response[:taps] / peak
  return out


def _segment_samples(sample_rate, segment_seconds, hop_seconds, *, name="segment_seconds"):
  """`(segment, hop)` in samples, after checking the flags they come from."""
  hop_seconds = segment_seconds if hop_seconds is None else hop_seconds
  for flag_name, value in (("sample_rate", sample_rate), (name, segment_seconds),
                           ("hop_seconds", hop_seconds)):
    checks.positive(flag_name, value)
  return int(round(segment_seconds * sample_rate)), int(round(hop_seconds * sample_rate))


FLAGS = flags.FLAGS


def main(argv):
  del argv
  common = dict(split=FLAGS.split, sample_rate=FLAGS.sample_rate,
                compression=FLAGS.compression, overwrite=FLAGS.overwrite)
  with cli.one_line_errors("input.prepare"):  # OSError: an existing split, or the disk
    if FLAGS.kind == "pairs":
      if not (FLAGS.noisy_dir and FLAGS.clean_dir):
        raise ValueError("--kind=pairs needs --noisy_dir and --clean_dir (or pass "
                         "--kind=clean|noise|rir with --input_dir).")
      manifest = prepare(FLAGS.noisy_dir, FLAGS.clean_dir, FLAGS.output_dir,
                         segment_seconds=FLAGS.segment_seconds, hop_seconds=FLAGS.hop_seconds,
                         drop_last=FLAGS.drop_last, num_shards=FLAGS.num_shards, **common)
    elif FLAGS.kind == "rir":
      manifest = prepare_rooms(FLAGS.output_dir, input_dir=FLAGS.input_dir,
                               simulated_rooms=FLAGS.simulated_rooms,
                               rir_seconds=FLAGS.rir_seconds, seed=FLAGS.seed,
                               num_shards=FLAGS.num_shards, **common)
    else:
      if not FLAGS.input_dir:
        raise ValueError(f"--kind={FLAGS.kind} needs --input_dir, the directory of "
                         f"{FLAGS.kind} recordings.")
      manifest = prepare_sources(FLAGS.input_dir, FLAGS.output_dir, kind=FLAGS.kind,
                                 segment_seconds=FLAGS.segment_seconds,
                                 hop_seconds=FLAGS.hop_seconds, drop_last=FLAGS.drop_last,
                                 num_shards=FLAGS.num_shards, **common)
  print(f"Wrote {manifest.num_examples} {manifest.kind} segments ({manifest.total_hours:.3f} h) "
        f"in {len(manifest.shards)} shards; manifest: "
        f"{records.manifest_path(FLAGS.output_dir, FLAGS.split)}")


if __name__ == "__main__":
  flags.DEFINE_enum("kind", "pairs", list(records.KINDS),
                    "What to write: noisy/clean pairs (--noisy_dir, --clean_dir), or a store "
                    "of clean speech, noise or room impulse responses (--input_dir) that "
                    "training mixes on the fly.")
  flags.DEFINE_string("noisy_dir", None, "Directory of noisy audio (WAV/FLAC).")
  flags.DEFINE_string("clean_dir", None, "Directory of clean audio, same relative paths.")
  flags.DEFINE_string("input_dir", None, "Directory of clean speech, noise or measured room "
                      "responses (one per file) for --kind=clean|noise|rir.")
  flags.DEFINE_integer("simulated_rooms", 0, "--kind=rir: also simulate this many rooms "
                       "(input.rooms: T60 0.2-1.3 s, 3-10 m rooms, 0.3-3 m from the mic).")
  flags.DEFINE_float("rir_seconds", 1.0, "--kind=rir: length of every stored response (at "
                     "most the training crop).")
  flags.DEFINE_integer("seed", 0, "--kind=rir: seed of the simulated rooms.")
  flags.DEFINE_string("output_dir", None, "Where to write shards and the manifest.")
  flags.DEFINE_string("split", "train", "Split name (file prefix).")
  flags.DEFINE_integer("sample_rate", 48000, "Target sample rate (resampled exactly, soxr).")
  flags.DEFINE_float("segment_seconds", 10.0, "Length of each stored segment.")
  flags.DEFINE_float("hop_seconds", None, "Step between segment starts (default: "
                     "--segment_seconds, back to back).")
  flags.DEFINE_bool("drop_last", False, "Drop each file's short tail instead of storing a "
                    "last segment that ends at the file's end (overlapping the one before).")
  flags.DEFINE_integer("num_shards", 16, "TFRecord shards (>= the number of input pipelines).")
  flags.DEFINE_enum("compression", "none", sorted(records.COMPRESSIONS),
                    "TFRecord compression (none reads fastest; audio barely compresses).")
  flags.DEFINE_bool("overwrite", False, "Replace the split if --output_dir already holds it.")
  flags.mark_flag_as_required("output_dir")
  app.run(main, flags_parser=cli.parse_flags)
