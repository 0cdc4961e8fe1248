"""Audio files: decoding through tensorflow-io (with a clear fallback when its ops cannot load) and exact resampling through soxr."""

import functools
import re
import struct
from typing import List, Optional, Tuple

from absl import logging
import numpy as np
import soxr
import tensorflow as tf

WHY_TFIO = (
    "tensorflow-io 0.37.1's compiled ops (FLAC and 24/32-bit/float WAV decoding) load only "
    "with tensorflow 2.16/2.17; install the pinned pair (pip install -e .) to read every "
    "format.")
AUDIO_SUFFIXES = (".wav", ".flac")


class AudioError(ValueError):
  """An audio file cannot be read or converted; the message names it."""


@functools.lru_cache(maxsize=None)
def tfio_problem() -> Optional[str]:
  """None if tensorflow-io's audio ops work here, else why not."""
  try:
    import tensorflow_io as tfio  # pylint: disable=g-import-not-at-top
    tfio.audio.resample(tf.zeros([4, 1]), rate_in=2, rate_out=1)  # loads its compiled ops
  except Exception as e:  # pylint: disable=broad-except
    return f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
  return None


def _tfio():
  import tensorflow_io as tfio  # pylint: disable=g-import-not-at-top
  return tfio


def load(path: str) -> Tuple[np.ndarray, int]:
  """Decodes a whole WAV (8/16/24/32-bit PCM or float) or FLAC file (see `AudioFile`).

  Returns:
    `(samples, sample_rate)`: float32 mono samples (channels averaged), finite;
    in [-1, 1] for PCM, possibly beyond for float WAV.

  Raises:
    AudioError: naming the file, if it cannot be decoded.
  """
  audio = AudioFile(path)
  return audio.read(0, audio.length), audio.rate


class AudioFile:
  """An audio file decoded range by range, so a long file need not fit in memory.

  `rate`, `length` (samples) and `read(start, stop)`: float32 mono samples
  (channels averaged). Non-finite samples (NaN, inf: a damaged float WAV) are
  replaced by 0 with a warning saying how many and where the first is; one of
  them would otherwise turn every sample a model computes from it into NaN.
  Without tensorflow-io only 16-bit PCM WAV is read, and whole.

  Raises:
    AudioError: naming the file, if it cannot be decoded.
  """

  def __init__(self, path: str):
    self.path = path
    if tfio_problem() is not None:
      self._whole, self.rate = _load_wav16(path)
      self.length = len(self._whole)
      return
    self._whole = None
    try:
      self._audio = _tfio().audio.AudioIOTensor(path)
      self.rate = int(self._audio.rate.numpy())
      self.length = int(self._audio.shape[0])
    except (tf.errors.OpError, ValueError) as e:
      raise AudioError(f"{path}: cannot decode audio ({_summary(e)}).") from e
    self._int32_bits = (self._audio.dtype == tf.float32
                        and wav_format(path) == (WAVE_FORMAT_PCM, 32))
    if self.length == 0:
      raise AudioError(f"{path}: holds no audio samples.")

  def read(self, start: int, stop: int) -> np.ndarray:
    """Samples `[start, stop)` (clipped to the file) as finite float32 mono."""
    start, stop = max(0, start), min(self.length, stop)
    if self._whole is not None:
      return self._finite(self._whole[start:stop], start)
    try:
      samples = self._audio[start:stop].numpy()
    except (tf.errors.OpError, ValueError) as e:
      raise AudioError(f"{self.path}: cannot decode samples {start}-{stop} "
                       f"({_summary(e)}).") from e
    if self._int32_bits:
      samples = samples.view(np.int32)  # tensorflow-io hands 32-bit PCM over as float32 bits
    scale = {np.dtype("int16"): 2.0**15, np.dtype("int32"): 2.0**31,
             np.dtype("float32"): 1.0}.get(samples.dtype)
    if samples.dtype == np.uint8:
      samples, scale = samples.astype(np.float32) - 128.0, 128.0
    if scale is None:
      raise AudioError(f"{self.path}: unsupported sample type {samples.dtype}.")
    mono = (samples.astype(np.float64).mean(axis=1) / scale).astype(np.float32)
    return self._finite(mono, start)

  def _finite(self, samples: np.ndarray, start: int) -> np.ndarray:
    bad = ~np.isfinite(samples)
    if not bad.any():
      return samples
    first = start + int(np.argmax(bad))
    logging.warning("%s: %d non-finite sample(s) (NaN/inf) from %.3f s: replaced by 0.",
                    self.path, int(bad.sum()), first / self.rate)
    return np.where(bad, np.float32(0.0), samples)


WAVE_FORMAT_PCM, WAVE_FORMAT_EXTENSIBLE = 1, 0xFFFE


def wav_format(path: str) -> Optional[Tuple[int, int]]:
  """`(format tag, bits per sample)` from a WAV file's fmt chunk (the extensible format's
  sub-format resolved), or None if `path` is not a readable WAV file."""
  try:
    with tf.io.gfile.GFile(path, "rb") as f:
      header = f.read(12)
      if header[:4] != b"RIFF" or header[8:12] != b"WAVE":
        return None
      while True:
        chunk = f.read(8)
        if len(chunk) < 8:
          return None
        size = int.from_bytes(chunk[4:8], "little")
        if chunk[:4] == b"fmt ":
          fmt = f.read(size)
          tag, bits = int.from_bytes(fmt[0:2], "little"), int.from_bytes(fmt[14:16], "little")
          if tag == WAVE_FORMAT_EXTENSIBLE and len(fmt) >= 26:
            tag = int.from_bytes(fmt[24:26], "little")
          return tag, bits
        f.seek(size + size % 2, 1)
  except (tf.errors.OpError, OSError):
    return None


def _load_wav16(path: str) -> Tuple[np.ndarray, int]:
  """The fallback without tensorflow-io: 16-bit PCM WAV only (tf.audio.decode_wav)."""
  if not path.lower().endswith(".wav"):
    raise AudioError(f"{path}: cannot decode FLAC without tensorflow-io ({tfio_problem()}). "
                     + WHY_TFIO)
  try:
    samples, rate = tf.audio.decode_wav(tf.io.read_file(path))
  except tf.errors.OpError as e:
    raise AudioError(f"{path}: tf.audio.decode_wav reads only 16-bit PCM WAV and failed "
                     f"({_summary(e)}); tensorflow-io is unavailable "
                     f"({tfio_problem()}). " + WHY_TFIO) from e
  return samples.numpy().mean(axis=1), int(rate)


# soxr's very-high-quality filter: flat (under 0.01 dB) to 95.7% of the lower Nyquist
# frequency, 175 dB of stopband rejection, linear phase with its delay removed.
RESAMPLE_QUALITY = "VHQ"


def resample(samples: np.ndarray, rate_in: int, rate_out: int, *, name: str = "",
             length: Optional[int] = None) -> np.ndarray:
  """Resamples mono float32 `samples` from `rate_in` to `rate_out` Hz with soxr (any
  rational pair), aligned to the sample and length-preserving: the result has `length`
  samples (default `round(len(samples) * rate_out / rate_in)`; a round trip's may differ
  by one from the original's) and starts where the input does.

  Measured against exact values: passband error (tones up to 0.9 x the lower
  Nyquist frequency) at most -71 dB for every pair of 8, 16, 22.05, 24, 32, 44.1
  and 48 kHz; tensorflow-io's is -11 to -18 dB for non-integer ratios
  (bench/resample.py, tests/input/test_resample.py).
  """
  if rate_in == rate_out and length in (None, len(samples)):
    return samples
  if length is None:
    length = int(round(len(samples) * rate_out / rate_in))
  if rate_in == rate_out:
    out = samples
  else:
    for argument, rate in (("rate_in", rate_in), ("rate_out", rate_out)):
      if not (isinstance(rate, (int, np.integer)) and rate > 0):
        raise AudioError(f"{name}: {argument}={rate} must be a positive whole number of Hz.")
    out = soxr.resample(np.asarray(samples, np.float32), rate_in, rate_out,
                        quality=RESAMPLE_QUALITY)
  return np.pad(out, (0, max(0, length - len(out))))[:length].astype(np.float32)


UNKNOWN_SIZE = 0xFFFFFFFF  # a WAV header's size for a stream of unknown length


def wav16_header(rate: int, samples: Optional[int] = None) -> bytes:
  """The header of a mono 16-bit PCM WAV of `samples` samples; sizes unknown (as streams
  write them) without `samples`."""
  data = UNKNOWN_SIZE if samples is None else 2 * samples
  riff = UNKNOWN_SIZE if samples is None else 36 + data
  return (b"RIFF" + struct.pack("<I", riff) + b"WAVEfmt "
          + struct.pack("<IHHIIHH", 16, 1, 1, rate, 2 * rate, 2, 16)
          + b"data" + struct.pack("<I", data))


def to_int16(signal: np.ndarray) -> Tuple[np.ndarray, int]:
  """float [-1, 1) -> int16 PCM; returns `(pcm, number_of_clipped_samples)`."""
  scaled = np.round(np.asarray(signal, np.float64) * 32768.0)
  clipped = int(np.count_nonzero((scaled > 32767) | (scaled < -32768)))
  return np.clip(scaled, -32768, 32767).astype("<i2"), clipped


def window_starts(length: int, window: int, hop: int, *, tail: bool = True) -> List[int]:
  """Starts of `window`-sample windows every `hop` samples within `length` samples, none
  padded: with `tail`, a last one that ends at `length` where the hops stop short of it
  (overlapping the one before). A length shorter than `window` has none."""
  starts = list(range(0, length - window + 1, hop))
  if tail and starts and starts[-1] + window < length:
    starts.append(length - window)
  return starts


def _summary(error: Exception) -> str:
  """The useful part of an op error: no function-node prefix, one line, bounded."""
  text = re.sub(r"\{\{.*?\}\}\s*", "", getattr(error, "message", None) or str(error))
  text = " ".join(text.split())
  return text[:200] or type(error).__name__
