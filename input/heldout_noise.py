"""The held-out set's noises, made by other algorithms than input/noise.py: white, pink (Voss-McCartney), brown (leaky-integrated white), mains hum, babble of other voices, and a recording repeated."""

from typing import List, Optional

import numpy as np
from scipy import signal

NOISES = ("white", "pink", "brown", "hum", "babble", "recorded")


def noise(kind: str, rng: np.random.Generator, num_samples: int, rate: int,
          others: List[np.ndarray], recording: Optional[np.ndarray] = None) -> np.ndarray:
  """Unit-RMS noise of `kind` at `rate`; babble is made of `others` (other voices at
  `rate`), "recorded" is `recording` (at `rate`) repeated."""
  if kind == "white":
    out = rng.normal(size=num_samples)
  elif kind == "pink":
    out = _voss_pink(rng, num_samples)
  elif kind == "brown":
    out = _leaky_brown(rng, num_samples, rate)
  elif kind == "hum":
    t = np.arange(num_samples) / rate
    mains = rng.choice([50.0, 60.0])
    out = sum(0.8 ** k * np.sin(2 * np.pi * k * mains * t + k) for k in range(1, 12))
  elif kind == "babble":
    out = np.zeros(num_samples)
    for row in rng.choice(len(others), size=min(4, len(others)), replace=False):
      tiled = np.resize(others[row], num_samples + len(others[row]))
      start = int(rng.integers(0, len(others[row])))
      out += _unit_rms(tiled[start:start + num_samples])
  elif kind == "recorded":
    if recording is None:
      raise ValueError("The recorded noise needs its recording.")
    out = np.resize(recording, num_samples)
  else:
    raise ValueError(f"Unknown noise {kind!r}: use one of {NOISES}.")
  return _unit_rms(out)


def _voss_pink(rng, num_samples, rows=16):
  """Pink noise by the Voss-McCartney algorithm: row k is redrawn every 2^k samples."""
  out = np.zeros(num_samples)
  for k in range(rows):
    held = rng.normal(size=num_samples // 2**k + 2)
    out += np.repeat(held, 2**k)[:num_samples]
  return out - out.mean()


def _leaky_brown(rng, num_samples, rate):
  """Brown noise: white noise through a leaky integrator (corner at 20 Hz)."""
  leak = np.exp(-2 * np.pi * 20.0 / rate)
  return signal.lfilter([1.0], [1.0, -leak], rng.normal(size=num_samples))


def _unit_rms(x):
  """`x` scaled to an RMS of 1."""
  return x / (np.sqrt(np.mean(np.square(x))) + 1e-12)
