"""File denoising: an audio file of any length and sample rate through an exported SavedModel (the command: trainer.denoise).

The file is streamed: read a segment at a time (SEGMENT_SECONDS, overlapping
by the cross-fade), each segment resampled to the model's rate (soxr, exact),
enhanced in overlapping chunks, cross-faded back together and resampled to the
file's rate, and the segments cross-faded into a 16-bit WAV
of the file's length and rate, written as they finish. Memory is bounded by
the segment, not the file.
"""

import os
from typing import Iterable, Iterator, Optional, Tuple

from absl import logging
import numpy as np
import tensorflow as tf

from common import checks
from common import files
from input import audio
from input import wav
from ops import kept_input
from trainer.serving import band_extension
from trainer.serving import saved_model as saved_model_lib

SEGMENT_SECONDS = 60.0  # read and enhanced at once: what bounds the memory


def overlap_add(pieces: Iterable[Tuple[int, np.ndarray]], *, overlap: int
                ) -> Iterator[np.ndarray]:
  """Cross-fades `(start, piece)` pairs (in order of their starts) into consecutive output
  blocks, each yielded once no later piece can overlap it; holds one piece at a time.

  Each piece is weighted by a ramp over its first and last `overlap + 1`
  samples, and the output is the weighted mean where pieces overlap.
  """
  out, weight, origin = np.zeros(0), np.zeros(0), 0
  for start, piece in pieces:
    if start > origin:  # everything before this piece is final
      done = start - origin
      yield (out[:done] / weight[:done]).astype(np.float32)
      out, weight, origin = out[done:], weight[done:], start
    end = start + len(piece) - origin
    if end > len(out):
      out, weight = np.pad(out, (0, end - len(out))), np.pad(weight, (0, end - len(weight)))
    ramp = np.minimum(1.0, np.minimum(np.arange(1, len(piece) + 1),
                                      np.arange(len(piece), 0, -1)) / (overlap + 1))
    out[start - origin:end] += piece * ramp
    weight[start - origin:end] += ramp
  if len(out):
    yield (out / weight).astype(np.float32)


def enhance(denoise_fn, signal: np.ndarray, *, chunk: int, overlap: int,
            batch_size: int = 4) -> np.ndarray:
  """Runs `denoise_fn([batch, chunk]) -> [batch, chunk]` over `signal` in cross-faded chunks.

  No chunk is padded with silence (digital silence is not what the model was
  trained on, and it skews the model's level normalisation): a signal shorter
  than `chunk` is one chunk of its own length, and the last chunk of a longer
  one ends at the signal's end, overlapping its neighbour by more.
  """
  if not 0 <= overlap < chunk:
    raise ValueError(f"Need 0 <= overlap ({overlap}) < chunk ({chunk}) samples.")
  if not len(signal):  # e.g. one 48 kHz sample resampled to 16 kHz
    return np.zeros(0, np.float32)
  chunk = min(chunk, len(signal))  # a shorter signal is one chunk of its own length
  starts = audio.window_starts(len(signal), chunk, max(1, chunk - overlap))

  def pieces():
    for first in range(0, len(starts), batch_size):
      group = starts[first:first + batch_size]
      batch = np.stack([signal[start:start + chunk] for start in group]).astype(np.float32)
      yield from zip(group, np.asarray(denoise_fn(tf.constant(batch))))

  return np.concatenate(list(overlap_add(pieces(), overlap=overlap)))


def denoise_signal(module, signal: np.ndarray, rate: int, *, chunk_seconds: float = 10.0,
                   overlap_seconds: float = 0.5, keep_input: Optional[float] = None,
                   keep_presence: Optional[float] = None) -> np.ndarray:
  """`signal` (mono float32 at `rate`) enhanced by a loaded SavedModel; same rate and length.

  The export keeps a share of the input at its rate (`keep_presence` in the
  presence band, `keep_input` elsewhere; None: the shares stored in it). Above
  a lower-rate model's band the output keeps the signal's band, gated by the
  gain the model gave its own top band and floored at `keep_input`
  (`band_extension`).
  """
  keep_input, keep_presence = kept_shares(module, keep_input, keep_presence)
  model_rate = int(module.sample_rate.numpy())
  at_model_rate = audio.resample(signal, rate, model_rate, name="input")
  enhanced = enhance(lambda batch: module.denoise_keeping(batch, keep_input, keep_presence),
                     at_model_rate, chunk=int(chunk_seconds * model_rate),
                     overlap=int(overlap_seconds * model_rate))
  out = audio.resample(enhanced, model_rate, rate, name="output", length=len(signal))
  if rate > model_rate:
    out += band_extension.extend(signal, rate, at_model_rate, enhanced, model_rate,
                                 keep=keep_input)
  return out


def kept_shares(module, keep_input: Optional[float], keep_presence: Optional[float]):
  """`(keep_input, keep_presence)`: each as given, or (None) as stored in the export."""
  keep_input = float(module.keep_input.numpy()) if keep_input is None else keep_input
  keep_presence = (float(module.keep_presence.numpy()) if keep_presence is None
                   else keep_presence)
  kept_input.check(keep_input, keep_presence)
  return keep_input, keep_presence


def denoise_stream(module, source: audio.AudioFile, *, chunk_seconds: float = 10.0,
                   overlap_seconds: float = 0.5, keep_input: Optional[float] = None,
                   keep_presence: Optional[float] = None) -> Iterator[np.ndarray]:
  """The enhanced `source` as consecutive blocks at its own rate, one segment
  (`SEGMENT_SECONDS`, at least two chunks) read and enhanced at a time, the segments
  cross-faded over `overlap_seconds`."""
  segment = int(max(SEGMENT_SECONDS, 2 * chunk_seconds) * source.rate)
  overlap = int(overlap_seconds * source.rate)
  starts = audio.window_starts(source.length, min(segment, source.length), segment - overlap)
  pieces = ((start, denoise_signal(module, source.read(start, start + segment), source.rate,
                                   chunk_seconds=chunk_seconds,
                                   overlap_seconds=overlap_seconds, keep_input=keep_input,
                                   keep_presence=keep_presence))
            for start in starts)
  return overlap_add(pieces, overlap=overlap)


def write_wav16(f, blocks: Iterable[np.ndarray], *, length: int, rate: int) -> int:
  """Writes a mono 16-bit PCM WAV of `length` samples from `blocks` to the binary file `f`;
  returns how many samples were beyond full scale (and clipped)."""
  f.write(wav.header(rate, length))
  clipped = 0
  for block in blocks:
    pcm, block_clipped = audio.to_int16(block)
    f.write(pcm.tobytes())
    clipped += block_clipped
  return clipped


def _same_file(a: str, b: str) -> bool:
  try:
    return os.path.samefile(a, b)
  except OSError:  # not both local files: compare the names
    return os.path.normpath(a) == os.path.normpath(b)


def check_output(input_path: str, output_path: str, *, saved_model: str, overwrite: bool,
                 wav_output: bool = True):
  """Raises unless writing `output_path` loses nothing and gives what its name says: a file
  (a .wav file if `wav_output`) that is not a directory, not the input, not inside the
  SavedModel, and new (or `overwrite`). Every command that writes enhanced audio checks its
  output with it, before reading any input."""
  if tf.io.gfile.isdir(output_path):
    raise ValueError(f"output {output_path} is a directory: name the file to write.")
  if wav_output and not output_path.lower().endswith(".wav"):
    raise ValueError(f"output {output_path} must end in .wav: the enhanced audio is written "
                     "as 16-bit WAV (convert it afterwards for another format).")
  if (tf.io.gfile.exists(os.path.join(saved_model, "saved_model.pb"))
      and files.inside(output_path, saved_model)):
    raise ValueError(f"output {output_path} lies inside the SavedModel {saved_model}, which "
                     "it would change: write the enhanced audio elsewhere.")
  if not tf.io.gfile.exists(output_path):
    return
  if _same_file(output_path, input_path):
    raise ValueError(f"output {output_path} is the input file {input_path}, which would be "
                     "replaced (even with --overwrite): write the enhanced audio to another "
                     "file.")
  if not overwrite:
    raise FileExistsError(f"output {output_path} exists; pass overwrite (--overwrite) to "
                          "replace it.")


def denoise_file(saved_model: str, input_path: str, output_path: str, *,
                 chunk_seconds: float = 10.0, overlap_seconds: float = 0.5,
                 overwrite: bool = False, keep_input: Optional[float] = None,
                 keep_presence: Optional[float] = None) -> int:
  """Writes the enhanced `input_path` to `output_path`; returns its number of samples.

  The WAV is streamed to a temporary name beside `output_path` and renamed
  when complete; an existing output is replaced only with `overwrite`, the
  input never. Samples beyond full scale are clipped, with a warning.
  """
  checks.positive("chunk_seconds", chunk_seconds)
  if not 0 <= overlap_seconds < chunk_seconds:
    raise checks.ArgumentError("overlap_seconds", overlap_seconds,
                               f"must be in [0, chunk_seconds={chunk_seconds:g}).")
  check_output(input_path, output_path, saved_model=saved_model, overwrite=overwrite)
  module = saved_model_lib.load_export(saved_model)
  keep_input, keep_presence = kept_shares(module, keep_input, keep_presence)
  source = audio.AudioFile(input_path)
  with files.atomic_writer(output_path, replace=overwrite) as f:
    clipped = write_wav16(f, denoise_stream(module, source, chunk_seconds=chunk_seconds,
                                            overlap_seconds=overlap_seconds,
                                            keep_input=keep_input,
                                            keep_presence=keep_presence),
                          length=source.length, rate=source.rate)
  if clipped:
    logging.warning("%s: %d of %d samples (%.1f%%) were beyond full scale and clipped: the "
                    "input is louder than full scale; scale it down and run again.",
                    output_path, clipped, source.length, 100.0 * clipped / source.length)
  return source.length
