"""Full-band output from a model of a lower rate: the band above its Nyquist frequency, gated frame by frame by the gain the model gave its own top band.

A 16 kHz model sees 0-8 kHz of a 48 kHz file. Dropping the rest loses the
speech's air and sibilance; passing it through raw keeps all the noise up
there. Instead the upper band is kept and attenuated, frame by frame, as much
as the model attenuated its own top band (the top quarter of its band, 6-8
kHz for a 16 kHz model): where the model let speech through up there, the
upper band passes; where it removed noise, the upper band is removed too.
"""

import numpy as np

from input import audio

HOP_SECONDS = 0.008  # one gain every 8 ms, each from a 16 ms Hann frame
TOP_BAND = 0.75  # the model's top band starts at this fraction of its Nyquist frequency


def top_band_gains(noisy: np.ndarray, enhanced: np.ndarray, rate: int) -> np.ndarray:
  """The amplitude gain in [0, 1] the model gave its top band in each frame (frame k
  centred on sample k * hop), from `noisy` and `enhanced` at the model's `rate`."""
  hop = max(1, int(round(HOP_SECONDS * rate)))
  window = np.hanning(2 * hop + 1)[:-1]

  def band_energy(x):
    padded = np.pad(np.asarray(x, np.float64), (hop, hop + 2 * hop))
    frames = np.lib.stride_tricks.sliding_window_view(padded, 2 * hop)[::hop]
    power = np.abs(np.fft.rfft(frames[:len(x) // hop + 1] * window)) ** 2
    top = np.fft.rfftfreq(2 * hop, 1.0 / rate) >= TOP_BAND * rate / 2
    return power[:, top].sum(axis=1)

  ratio = band_energy(enhanced) / (band_energy(noisy) + 1e-12)
  return np.sqrt(np.clip(ratio, 0.0, 1.0))


def extend(signal: np.ndarray, rate: int, noisy_model: np.ndarray,
           enhanced_model: np.ndarray, model_rate: int) -> np.ndarray:
  """The band of `signal` (at `rate`) above `model_rate`'s Nyquist frequency, gated by the
  model's top-band gains; add it to the enhanced output resampled to `rate`.

  Args:
    signal: the input at its own `rate` (> `model_rate`).
    noisy_model: `signal` resampled to `model_rate` (what the model was given).
    enhanced_model: the model's output at `model_rate`.
  """
  upper = signal - audio.resample(noisy_model, model_rate, rate, name="input",
                                  length=len(signal))
  gains = top_band_gains(noisy_model, enhanced_model, model_rate)
  hop_seconds = max(1, int(round(HOP_SECONDS * model_rate))) / model_rate
  times = np.arange(len(signal)) / rate
  return (upper * np.interp(times, np.arange(len(gains)) * hop_seconds, gains)
          ).astype(np.float32)
