"""Audio through a Streamer as it arrives: 16-bit PCM (a WAV or raw) read in blocks, resampled to the model's rate and back (soxr), the band above a lower-rate model's gated as the file path gates it, written as soon as it is enhanced."""

import time
from typing import BinaryIO, Callable, Iterator, Optional

import numpy as np
import soxr

from input import audio
from input import wav
from trainer.serving import band_extension
from trainer.serving import streamer as streamer_lib

def read_wav_header(f: BinaryIO, name: str = "the input") -> wav.Format:
  """Reads a mono 16-bit PCM WAV header from a stream (up to its data): its rate and data
  size (None: unknown, to the end of the stream).

  Raises:
    ValueError: naming `name`: not a WAV, a header that cannot be trusted, or not mono
      16-bit PCM (naming what it is).
  """
  try:
    found = wav.read_header(f)
  except wav.HeaderError as e:
    raise ValueError(f"{name}: {e}. Pass a WAV, or raw 16-bit PCM with --raw_rate.") from None
  if found.tag != wav.WAVE_FORMAT_PCM or found.bits != 16 or found.channels != 1:
    raise ValueError(f"{name}: the WAV holds {found.channels} channel(s) of {found.bits}-bit "
                     f"audio (format {found.tag}); stream mono 16-bit PCM (e.g. arecord -f "
                     "S16_LE -c 1).")
  return found


def pcm_blocks(f: BinaryIO, block_bytes: int,
               size: Optional[int] = None) -> Iterator[np.ndarray]:
  """Float32 samples of the 16-bit PCM read from `f`, as soon as each read returns
  (at most `block_bytes` at a time), until `size` bytes (a WAV's data chunk; what follows
  it is not audio) or the end of the stream."""
  carry, left = b"", size
  while left is None or left > 0:
    want = block_bytes if left is None else min(block_bytes, left)
    data = f.read1(want) if hasattr(f, "read1") else f.read(want)
    if not data:
      return
    if left is not None:
      left -= len(data)
    data = carry + data
    whole = len(data) - len(data) % 2
    carry = data[whole:]
    if whole:
      yield np.frombuffer(data[:whole], "<i2").astype(np.float32) / 32768.0


# soxr's qualities a stream may resample with: very high (the file path's), high, or low
# (16-bit precision, as the output has; the shortest delay at every rate; bench.stream
# measures each).
QUALITIES = ("VHQ", "HQ", "LQ")


def _resampler(rate_in: int, rate_out: int, quality: str) -> soxr.ResampleStream:
  return soxr.ResampleStream(rate_in, rate_out, 1, dtype="float32", quality=quality)


def measure_latency(new_pipe: Callable[[], "Pipe"], block: int, seconds: float = 2.0) -> float:
  """The end-to-end latency of a configuration, in seconds: the longest an input sample
  waits for its output once the stream has settled (the resamplers hold more at their
  start), measured over the second half of `seconds` of silence fed in blocks of `block`
  samples through a fresh pipe from `new_pipe()`: the model's latency, the resamplers'
  filters and the blocks they release in, and the band extension's look-ahead."""
  through = new_pipe()
  blocks = max(2, int(seconds * through.rate) // block)
  fed = returned = longest = 0
  for n in range(blocks):
    returned += len(through.feed(np.zeros(block, np.float32)))
    fed += block
    if n >= blocks // 2:
      longest = max(longest, fed - returned)
  # Seen at the ends of blocks, a wait can look shorter than the model's own, its floor.
  return max(longest / through.rate, through.model_latency_seconds)


class Pipe:
  """Enhances audio at `rate` through `streamer` (at `model_rate`), block by block.

  Above a lower-rate model's band, the input's band is gated as the file path
  gates it (`band_extension.BandExtension`, its gain at least `keep_input`),
  which waits band_extension.LOOKAHEAD_HOPS hops longer; `extend_band=False`
  returns the model's band alone, sooner. `quality`: soxr's resampling quality (one
  of QUALITIES; LQ resamples with the least delay). `measure_latency` says how long the
  configuration makes a sample wait, before any audio.

  `seconds_in` counts the audio taken, `busy_seconds` the time spent enhancing it
  (resampling included, waiting for input not), so `busy_seconds / seconds_in`
  is the real-time factor.
  """

  def __init__(self, streamer: streamer_lib.Streamer, *, rate: int, model_rate: int,
               keep_input: float = 0.0, extend_band: bool = True, quality: str = "VHQ"):
    self.streamer, self.rate, self.model_rate = streamer, rate, model_rate
    same = rate == model_rate
    self._down = None if same else _resampler(rate, model_rate, quality)
    self._up = None if same else _resampler(model_rate, rate, quality)
    self._extension = None
    if extend_band and rate > model_rate:
      self._extension = band_extension.BandExtension(rate, model_rate, keep_input)
      self._up_noisy = _resampler(model_rate, rate, quality)  # the input's model band, at rate
      self._signal = np.zeros(0, np.float32)  # input whose upper band is not yet known
      self._model_band = self._upper_band = np.zeros(0, np.float32)  # not yet returned
    self.samples_in = self.samples_out = 0
    self.stopped_by = None  # what ended the input early (trainer.stream: a signal)
    self.latency_seconds = None  # end to end, once measured (measure_latency)
    self.busy_seconds = 0.0

  @property
  def model_latency_seconds(self) -> float:
    """The model's algorithmic latency: the part of `measure_latency`'s that is the model's."""
    return self.streamer.latency / self.model_rate

  @property
  def seconds_in(self) -> float:
    return self.samples_in / self.rate

  def feed(self, samples: np.ndarray) -> np.ndarray:
    """Enhanced samples at `rate` that are ready after `samples` (at `rate`)."""
    start = time.perf_counter()
    self.samples_in += len(samples)
    out = self._through(samples, last=False)
    self.samples_out += len(out)
    self.busy_seconds += time.perf_counter() - start
    return out

  def flush(self) -> np.ndarray:
    """The rest: as many samples in all as were fed."""
    start = time.perf_counter()
    out = self._through(np.zeros(0, np.float32), last=True)
    missing = self.samples_in - self.samples_out
    out = np.pad(out, (0, max(0, missing - len(out))))[:missing]
    self.samples_out += len(out)
    self.busy_seconds += time.perf_counter() - start
    return out

  def _through(self, samples: np.ndarray, *, last: bool) -> np.ndarray:
    at_model_rate = samples
    if self._down is not None:
      at_model_rate = self._down.resample_chunk(samples, last=last)
    enhanced = self.streamer.feed(at_model_rate)
    if last:
      enhanced = np.concatenate([enhanced, self.streamer.flush()])
    if self._up is None:
      return enhanced
    out = self._up.resample_chunk(enhanced.astype(np.float32), last=last)
    if self._extension is None:
      return out
    return self._extended(samples, at_model_rate, enhanced, out, last=last)

  def _extended(self, samples, at_model_rate, enhanced, out, *, last: bool) -> np.ndarray:
    """`out` (the model's band at `rate`) plus the gated upper band, as far as both are
    known; the same samples of each, from the first."""
    self._signal = np.concatenate([self._signal, samples])
    back = self._up_noisy.resample_chunk(at_model_rate, last=last)
    if last:  # as long as the input, as the file path makes it
      back = np.pad(back, (0, max(0, len(self._signal) - len(back))))[:len(self._signal)]
    upper = self._signal[:len(back)] - back
    self._signal = self._signal[len(back):]
    self._upper_band = np.concatenate([self._upper_band, self._extension.feed(
        upper, enhanced, last=last)])
    self._model_band = np.concatenate([self._model_band, out])
    if last:  # the resamplers' last samples: each band as long as the other
      longest = max(len(self._model_band), len(self._upper_band))
      self._model_band = np.pad(self._model_band, (0, longest - len(self._model_band)))
      self._upper_band = np.pad(self._upper_band, (0, longest - len(self._upper_band)))
    ready = min(len(self._upper_band), len(self._model_band))
    result = self._model_band[:ready] + self._upper_band[:ready]
    self._model_band, self._upper_band = self._model_band[ready:], self._upper_band[ready:]
    return result


def to_pcm16(samples: np.ndarray) -> bytes:
  """Float samples as little-endian 16-bit PCM (beyond full scale: clipped)."""
  return audio.to_int16(samples)[0].tobytes()
