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
"""

import numpy as np

from input import audio

HOP_SECONDS = 0.008  # one gain every 8 ms, each from a 16 ms Hann frame
# The model's top band, as fractions of its Nyquist frequency (below resampling's transition
# band, which starts at 0.91).
TOP_BAND = (0.7, 0.9)
SMOOTH_FRAMES = 5  # powers are averaged over this many frames (40 ms) before the gain
SPEECH_SLOPE_DB = -10.0  # per octave: the long-term average speech spectrum above 1 kHz


def speech_ratio(model_rate: int, rate: int) -> float:
  """Speech power expected above `model_rate`'s Nyquist frequency (up to `rate`'s) per unit
  of speech power in the model's top band, for a spectrum falling SPEECH_SLOPE_DB per octave."""
  exponent = -SPEECH_SLOPE_DB / (10.0 * np.log10(2.0))  # power density ~ f ** -exponent
  energy = lambda low, high: (low ** (1 - exponent) - high ** (1 - exponent))  # pylint: disable=g-long-lambda
  nyquist = model_rate / 2.0
  return energy(nyquist, rate / 2.0) / energy(TOP_BAND[0] * nyquist, TOP_BAND[1] * nyquist)


def frame_power(x: np.ndarray, rate: int, low: float, high: float):
  """`(power, hop)`: the mean power of `x` in [low, high) Hz in each 16 ms frame (frame k
  centred on sample k * hop), averaged over SMOOTH_FRAMES frames."""
  hop = max(1, int(round(HOP_SECONDS * rate)))
  window = np.hanning(2 * hop + 1)[:-1]
  padded = np.pad(np.asarray(x, np.float64), (hop, 3 * hop))
  frames = np.lib.stride_tricks.sliding_window_view(padded, 2 * hop)[::hop]
  spectrum = np.abs(np.fft.rfft(frames[:len(x) // hop + 1] * window)) ** 2
  hz = np.fft.rfftfreq(2 * hop, 1.0 / rate)
  power = spectrum[:, (hz >= low) & (hz < high)].sum(axis=1) / (2 * hop) ** 2
  return np.convolve(power, np.ones(SMOOTH_FRAMES) / SMOOTH_FRAMES, mode="same"), hop


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
  nyquist = model_rate / 2.0
  speech, model_hop = frame_power(enhanced_model, model_rate, TOP_BAND[0] * nyquist,
                                  TOP_BAND[1] * nyquist)
  present, hop = frame_power(upper, rate, 0.0, rate / 2.0)
  frame_times = np.arange(len(present)) * hop / rate
  expected = speech_ratio(model_rate, rate) * np.interp(
      frame_times, np.arange(len(speech)) * model_hop / model_rate, speech)
  gains = np.maximum(np.sqrt(np.clip(expected / (present + 1e-20), 0.0, 1.0)), keep)
  return (upper * np.interp(np.arange(len(signal)) / rate, frame_times, gains)
          ).astype(np.float32)
