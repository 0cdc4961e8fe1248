"""Full-band output from a model of a lower rate: the band above its Nyquist frequency, kept where speech is predicted there and removed where noise dominates.

A 16 kHz model sees 0-8 kHz of a 48 kHz file. Dropping the rest loses the
speech's air and sibilance; passing it through raw keeps all the noise up
there (white noise puts two thirds of its power above 8 kHz at 48 kHz). So
each frame's upper band gets a Wiener-like gain: the speech power expected
there, predicted from the power of the model's enhanced top band (the top
5.6-7.2 kHz for a 16 kHz model) by the slope of the
long-term average speech spectrum (about -10 dB per octave above 1 kHz),
over the power the input actually has there. A fricative the model let
through keeps its upper band; a frame of noise loses it.

`BandExtension` computes it block by block, for the stream path
(trainer.serving.pipe) as for the file path (`extend`, one block): the same
gains, LOOKAHEAD_HOPS later.
"""

import numpy as np

from input import audio

HOP_SECONDS = 0.008  # one gain every 8 ms, each from a 16 ms Hann frame
# The model's top band, as fractions of its Nyquist frequency (below resampling's transition
# band, which starts at 0.91).
TOP_BAND = (0.7, 0.9)
SMOOTH_FRAMES = 5  # powers are averaged over this many frames (40 ms) before the gain
SPEECH_SLOPE_DB = -10.0  # per octave: the long-term average speech spectrum above 1 kHz
# A sample's gain depends on frames this many hops after it (its frame, the next one it is
# interpolated with, the smoothing's reach and the frame's own half-width) and before it.
LOOKAHEAD_HOPS = 6
CONTEXT_HOPS = 6


def speech_ratio(model_rate: int, rate: int) -> float:
  """Speech power expected above `model_rate`'s Nyquist frequency (up to `rate`'s) per unit
  of speech power in the model's top band, for a spectrum falling SPEECH_SLOPE_DB per octave."""
  exponent = -SPEECH_SLOPE_DB / (10.0 * np.log10(2.0))  # power density ~ f ** -exponent
  energy = lambda low, high: (low ** (1 - exponent) - high ** (1 - exponent))  # pylint: disable=g-long-lambda
  nyquist = model_rate / 2.0
  return energy(nyquist, rate / 2.0) / energy(TOP_BAND[0] * nyquist, TOP_BAND[1] * nyquist)


def frame_hop(rate: int) -> int:
  """Samples between gains (HOP_SECONDS) at `rate`."""
  return max(1, int(round(HOP_SECONDS * rate)))


def frame_power(x: np.ndarray, rate: int, low: float, high: float) -> np.ndarray:
  """The mean power of `x` in [low, high) Hz in each 16 ms frame (frame k centred on
  sample k * hop, zeros beyond `x`), averaged over SMOOTH_FRAMES frames."""
  hop = frame_hop(rate)
  window = np.hanning(2 * hop + 1)[:-1]
  padded = np.pad(np.asarray(x, np.float64), (hop, 3 * hop))
  frames = np.lib.stride_tricks.sliding_window_view(padded, 2 * hop)[::hop]
  spectrum = np.abs(np.fft.rfft(frames[:len(x) // hop + 1] * window)) ** 2
  hz = np.fft.rfftfreq(2 * hop, 1.0 / rate)
  power = spectrum[:, (hz >= low) & (hz < high)].sum(axis=1) / (2 * hop) ** 2
  return np.convolve(power, np.ones(SMOOTH_FRAMES) / SMOOTH_FRAMES, mode="same")


class BandExtension:
  """The gated upper band, block by block: `feed(upper, enhanced_model)` returns the
  gated `upper` for the samples whose gain is final, `last=True` the rest.

  Gains are computed as the module docstring says, over a buffer that keeps
  CONTEXT_HOPS hops before the first sample not yet returned, so a sample's
  gain is the one the whole signal gives it; a sample is final once
  LOOKAHEAD_HOPS hops after it have arrived in both inputs. Fed whole, it is
  the file path's; fed in blocks, the stream path's, LOOKAHEAD_HOPS later.

  Args:
    rate: the rate of `upper` (the file's).
    model_rate: the rate of `enhanced_model` (the model's, below `rate`).
    keep: the least gain: the share of the input kept up there (`extend`).
  """

  def __init__(self, rate: int, model_rate: int, keep: float = 0.0):
    self.rate, self.model_rate, self.keep = rate, model_rate, keep
    self.hop, self.model_hop = frame_hop(rate), frame_hop(model_rate)
    self._upper, self._upper_start = np.zeros(0), 0  # a hop multiple
    self._model, self._model_start = np.zeros(0), 0  # a model hop multiple
    self._returned = 0

  def feed(self, upper: np.ndarray, enhanced_model: np.ndarray, *,
           last: bool = False) -> np.ndarray:
    self._upper = np.concatenate([self._upper, np.asarray(upper, np.float64)])
    self._model = np.concatenate([self._model, np.asarray(enhanced_model, np.float64)])
    upper_end = self._upper_start + len(self._upper)
    final = upper_end
    if not last:  # the zeros past the buffers reach only gains that are not final
      model_end = (self._model_start + len(self._model)) / self.model_rate
      final = min(upper_end - LOOKAHEAD_HOPS * self.hop,
                  int((model_end - LOOKAHEAD_HOPS * HOP_SECONDS) * self.rate))
    if final <= self._returned:
      return np.zeros(0, np.float32)
    gains = self._gains()
    first = self._returned - self._upper_start
    count = final - self._returned
    out = (self._upper[first:first + count] * gains[first:first + count]).astype(np.float32)
    self._returned = final
    self._trim()
    return out

  def _gains(self) -> np.ndarray:
    """The gain of each buffered upper-band sample."""
    nyquist = self.model_rate / 2.0
    speech = frame_power(self._model, self.model_rate, TOP_BAND[0] * nyquist,
                         TOP_BAND[1] * nyquist)
    present = frame_power(self._upper, self.rate, 0.0, self.rate / 2.0)
    frame_times = (self._upper_start + np.arange(len(present)) * self.hop) / self.rate
    model_times = (self._model_start + np.arange(len(speech)) * self.model_hop
                   ) / self.model_rate
    expected = speech_ratio(self.model_rate, self.rate) * np.interp(frame_times, model_times,
                                                                    speech)
    gains = np.maximum(np.sqrt(np.clip(expected / (present + 1e-20), 0.0, 1.0)), self.keep)
    times = (self._upper_start + np.arange(len(self._upper))) / self.rate
    return np.interp(times, frame_times, gains)

  def _trim(self):
    """Drops what no later gain needs: all but CONTEXT_HOPS hops before the next sample."""
    keep_from = max(0, (self._returned // self.hop - CONTEXT_HOPS) * self.hop)
    self._upper = self._upper[keep_from - self._upper_start:]
    self._upper_start = keep_from
    model_from = max(0, int(keep_from / self.rate * self.model_rate) // self.model_hop
                     * self.model_hop - CONTEXT_HOPS * self.model_hop)
    if model_from > self._model_start:
      self._model = self._model[model_from - self._model_start:]
      self._model_start = model_from


def extend(signal: np.ndarray, rate: int, noisy_model: np.ndarray,
           enhanced_model: np.ndarray, model_rate: int, *, keep: float = 0.0) -> np.ndarray:
  """The band of `signal` (at `rate`) above `model_rate`'s Nyquist frequency, gated frame by
  frame as the module docstring says; add it to the enhanced output resampled to `rate`.

  Args:
    signal: the input at its own `rate` (> `model_rate`).
    noisy_model: `signal` resampled to `model_rate` (what the model was given).
    enhanced_model: the model's output at `model_rate`.
    keep: the least share of the input kept up there: the gain is at least `keep`
      (`enhanced_model`, the export's output, holds its kept input already, which the
      gain from its top band follows; where the model removed noise, that is less).
  """
  upper = signal - audio.resample(noisy_model, model_rate, rate, name="input",
                                  length=len(signal))
  return BandExtension(rate, model_rate, keep).feed(upper, enhanced_model, last=True)
