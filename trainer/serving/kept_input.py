"""How much of the unprocessed input goes back into a denoiser's output, by frequency.

Adding a share `k` of the input back (`enhanced + k * (input - enhanced)`)
limits the attenuation to about `20 log10(k)` dB and restores speech that the
model removed. The share depends on frequency: more is kept in the presence
band (3-5 kHz), where consonant cues live and where the default model, faced
with noise that is strong there (white, pink), removes most of the speech's
envelope; less is kept elsewhere, where the model is reliable. The share
ramps linearly in log frequency between the two (PRESENCE_HZ).
"""

import numpy as np

from common import checks
from ops import spectral

KEEP = 0.15  # share of the input kept outside the presence band (about -16.5 dB at most)
PRESENCE_KEEP = 0.5  # share kept in the presence band (about -6 dB at most)
# (start of the ramp up, presence band start, presence band end, end of the ramp down), Hz.
PRESENCE_HZ = (1500.0, 3000.0, 5000.0, 7000.0)
PAD_SECONDS = 0.05  # context each side of a block, far longer than the shares' impulse
# response; odd-reflected at the signal's ends (value and slope continue)
BLOCK_SECONDS = 5.0  # filtered at once: bounds the memory of a long segment


def shares(frequencies: np.ndarray, keep: float, presence_keep: float) -> np.ndarray:
  """The share of the input kept at each of `frequencies` (Hz)."""
  log_hz = np.log(np.maximum(np.asarray(frequencies, np.float64), 1.0))
  return np.interp(log_hz, np.log(PRESENCE_HZ), [keep, presence_keep, presence_keep, keep])


def add_back(enhanced: np.ndarray, signal: np.ndarray, rate: int, *, keep: float = KEEP,
            presence_keep: float = PRESENCE_KEEP) -> np.ndarray:
  """`enhanced` with `shares(f)` of `(signal - enhanced)` added back; same length, float32.

  A zero-phase FFT filter, applied BLOCK_SECONDS at a time with PAD_SECONDS of
  context each side, so the blocks join without seams.

  Args:
    enhanced: the denoiser's output at `rate`.
    signal: its input, the same length.
    rate: their sample rate in Hz.
    keep: the share kept outside the presence band, in [0, 1].
    presence_keep: the share kept in the presence band, in [0, 1]; equal to
      `keep`, the same share is kept at every frequency.
  """
  checks.probability("keep_input", keep)
  checks.probability("keep_presence", presence_keep)
  if np.shape(enhanced) != np.shape(signal):
    raise ValueError(f"enhanced {np.shape(enhanced)} and signal {np.shape(signal)} must have "
                     "the same shape.")
  enhanced = np.asarray(enhanced, np.float32)
  residual = np.asarray(signal, np.float32) - enhanced
  if keep == presence_keep or len(residual) < 2:
    return enhanced + np.float32(keep) * residual
  edge = min(len(residual) - 1, int(PAD_SECONDS * rate))
  padded = np.pad(residual, edge, mode="reflect", reflect_type="odd")
  block = max(1, int(BLOCK_SECONDS * rate))
  size = spectral.fft_length(block + 2 * edge)
  gains = shares(np.fft.rfftfreq(size, 1.0 / rate), keep, presence_keep)
  out = enhanced.copy()
  for start in range(0, len(residual), block):  # each block with `edge` of context each side
    piece = padded[start:start + block + 2 * edge]
    length = len(piece) - 2 * edge
    out[start:start + length] += np.fft.irfft(np.fft.rfft(piece, size) * gains,
                                              size)[edge:edge + length].astype(np.float32)
  return out
