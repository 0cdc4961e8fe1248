"""Audio files: ranged decoding to mono float32 (input.decoders chooses the decoder) and exact resampling through soxr."""

from typing import List, Optional, Tuple

from absl import logging
import numpy as np
import soxr

from input import decoders
from input import wav
from input.decoders import AudioError  # pylint: disable=unused-import  (raised to callers)

AUDIO_SUFFIXES = (".wav", ".flac")


def read_file(path: str) -> Tuple[np.ndarray, int]:
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
  Every format is read by either decoder (`decoder`: one of `decoders.DECODERS`;
  default the one `decoders.chosen()` names).

  Raises:
    AudioError: naming the file, if it cannot be decoded.
  """

  def __init__(self, path: str, decoder: Optional[str] = None):
    self.path = path
    self._reader = decoders.open_reader(path, decoder)
    self.rate, self.length = self._reader.rate, self._reader.length
    try:
      wav.check_rate(self.rate)
    except wav.HeaderError as e:
      raise AudioError(f"{path}: {e}.") from None
    if self.length == 0:
      raise AudioError(f"{path}: holds no audio samples.")

  def read(self, start: int, stop: int) -> np.ndarray:
    """Samples `[start, stop)` (clipped to the file) as finite float32 mono."""
    start, stop = max(0, start), min(self.length, stop)
    mono = self._reader.read(start, stop).mean(axis=1).astype(np.float32)
    return self._finite(mono, start)

  def _finite(self, samples: np.ndarray, start: int) -> np.ndarray:
    bad = ~np.isfinite(samples)
    if not bad.any():
      return samples
    first = start + int(np.argmax(bad))
    logging.warning("%s: %d non-finite sample(s) (NaN/inf) from %.3f s: replaced by 0.",
                    self.path, int(bad.sum()), first / self.rate)
    return np.where(bad, np.float32(0.0), samples)


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
