"""Noise for the synthetic corpus: coloured, hum and buzz, machines, transients, babble, level changes.

Every generator takes a NumPy Generator and returns unit-RMS float64 noise of
the requested length, so a mixture's parts are weighted by explicit gains.
"""

from typing import Callable, Dict

import numpy as np


def unit_rms(signal: np.ndarray) -> np.ndarray:
  return signal / (np.sqrt(np.mean(np.square(signal))) + 1e-12)


def shape_spectrum(signal: np.ndarray, sample_rate: int,
                   gain: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
  """`signal` filtered (zero phase, circularly) by the magnitude `gain(frequencies_hz)`."""
  frequencies = np.fft.rfftfreq(len(signal), 1.0 / sample_rate)
  return np.fft.irfft(np.fft.rfft(signal) * gain(frequencies), len(signal))


def coloured(rng: np.random.Generator, num_samples: int, sample_rate: int) -> np.ndarray:
  """1/f^a noise (a in [0, 2]: white .. brown) with a random smooth equaliser."""
  exponent = rng.uniform(0.0, 2.0)
  peaks = rng.uniform(np.log(100.0), np.log(0.45 * sample_rate), size=3)
  boosts = rng.uniform(-9.0, 9.0, size=3) / 20.0

  def gain(frequencies):
    octave = np.log(np.maximum(frequencies, 20.0))
    equaliser = sum(b * np.exp(-0.5 * ((octave - p) / 0.5) ** 2)
                    for p, b in zip(peaks, boosts))
    return 10.0 ** equaliser / np.maximum(frequencies, 20.0) ** (exponent / 2)

  return unit_rms(shape_spectrum(rng.normal(size=num_samples), sample_rate, gain))


def hum(rng: np.random.Generator, num_samples: int, sample_rate: int) -> np.ndarray:
  """Mains hum or buzz: 50/60 Hz (slightly off) with random harmonics, some odd-heavy."""
  fundamental = rng.choice([50.0, 60.0]) * rng.uniform(0.995, 1.005)
  harmonics = int(rng.integers(3, 40))
  t = np.arange(num_samples) / sample_rate
  odd_only = rng.uniform() < 0.3
  out = np.zeros(num_samples)
  for k in range(1, harmonics + 1):
    if (odd_only and k % 2 == 0) or k * fundamental > 0.45 * sample_rate:
      continue
    out += (rng.uniform(0.2, 1.0) / k ** rng.uniform(0.3, 1.5)
            * np.sin(2 * np.pi * k * fundamental * t + rng.uniform(0, 2 * np.pi)))
  return unit_rms(out)


def machine(rng: np.random.Generator, num_samples: int, sample_rate: int) -> np.ndarray:
  """Fan or engine: a drifting rotation tone with harmonics over rotation-modulated noise."""
  t = np.arange(num_samples) / sample_rate
  base = rng.uniform(15.0, 150.0)
  drift = 1.0 + rng.uniform(0.0, 0.2) * np.sin(2 * np.pi * rng.uniform(0.05, 0.5) * t
                                               + rng.uniform(0, 2 * np.pi))
  phase = 2 * np.pi * np.cumsum(base * drift) / sample_rate
  tones = sum(rng.uniform(0.1, 1.0) / k * np.sin(k * phase + rng.uniform(0, 2 * np.pi))
              for k in range(1, int(rng.integers(2, 12)) + 1))
  centre = rng.uniform(200.0, 3000.0)
  rumble = shape_spectrum(rng.normal(size=num_samples), sample_rate,
                          lambda f: 1.0 / (1.0 + ((f - centre) / centre) ** 2))
  rumble *= 1.0 + rng.uniform(0.0, 0.8) * np.sin(phase)
  return unit_rms(unit_rms(tones) * rng.uniform(0.2, 1.0) + unit_rms(rumble))


def transients(rng: np.random.Generator, num_samples: int, sample_rate: int) -> np.ndarray:
  """Clicks, knocks and clatter: decaying noise bursts at random times over faint noise."""
  out = rng.normal(size=num_samples) * 0.01
  events = max(1, rng.poisson(rng.uniform(0.5, 6.0) * num_samples / sample_rate))
  for _ in range(events):
    length = max(2, int(rng.uniform(0.001, 0.08) * sample_rate))
    start = int(rng.integers(0, max(1, num_samples - 1)))
    decay = np.exp(-np.arange(length) / (length * rng.uniform(0.1, 0.4)))
    burst = rng.normal(size=length) * decay * rng.uniform(0.2, 1.0)
    cutoff = rng.uniform(300.0, 0.45 * sample_rate)
    burst = shape_spectrum(burst, sample_rate, lambda f: 1.0 / (1.0 + (f / cutoff) ** 2))
    end = min(num_samples, start + length)
    out[start:end] += burst[:end - start]
  return unit_rms(out)


def babble(rng: np.random.Generator, num_samples: int, bank: np.ndarray) -> np.ndarray:
  """3-8 talkers from `bank` (`[talkers, samples]` of speech), each at a random offset and
  level; a talker whose utterance is shorter than `num_samples` starts it again, so babble
  lasts as long as the clip."""
  talkers = int(rng.integers(3, 9))
  out = np.zeros(num_samples)
  for row in rng.choice(len(bank), size=min(talkers, len(bank)), replace=False):
    start = int(rng.integers(0, max(1, bank.shape[1] - num_samples)))
    piece = np.take(bank[row], np.arange(start, start + num_samples), mode="wrap")
    out += unit_rms(piece) * 10 ** (rng.uniform(-6.0, 0.0) / 20)
  return unit_rms(out)


def level_changes(rng: np.random.Generator, num_samples: int, sample_rate: int) -> np.ndarray:
  """A slowly varying gain (up to +-8 dB) that makes stationary noise non-stationary."""
  points = max(2, int(num_samples / sample_rate * rng.uniform(1.0, 4.0)) + 2)
  db = rng.uniform(-8.0, 8.0, size=points)
  return 10 ** (np.interp(np.arange(num_samples), np.linspace(0, num_samples, points), db)
                / 20)


GENERATORS: Dict[str, Callable] = {
    "coloured": coloured, "hum": hum, "machine": machine, "transients": transients,
}
# How often each kind is part of a training mixture (babble: of the corpus's own talkers).
PROBABILITIES = {"coloured": 0.6, "hum": 0.25, "machine": 0.2, "transients": 0.15,
                 "babble": 0.45}
# The share of mixtures that are one coloured noise alone with no level changes (the steady
# hiss of fans, vents and electronics) instead of the kinds above (BENCHMARKS.md, corpus v5).
STEADY_ALONE = 0.4


def mixture(rng: np.random.Generator, num_samples: int, sample_rate: int,
            bank: np.ndarray) -> np.ndarray:
  """Unit-RMS noise: a steady coloured noise alone (STEADY_ALONE of the time), else each
  kind joins with its probability (at least one joins) at a random gain, with level
  changes a third of the time.

  Args:
    rng: the only source of randomness.
    num_samples: output length.
    sample_rate: samples per second.
    bank: `[talkers, samples]` speech that babble is made of.
  """
  if rng.uniform() < STEADY_ALONE:
    return coloured(rng, num_samples, sample_rate)
  makers = dict(GENERATORS, babble=lambda r, n, _: babble(r, n, bank))
  kinds = [kind for kind, p in PROBABILITIES.items() if rng.uniform() < p]
  kinds = kinds or [list(PROBABILITIES)[rng.integers(len(PROBABILITIES))]]
  out = sum(makers[kind](rng, num_samples, sample_rate) * 10 ** (rng.uniform(-10.0, 0.0) / 20)
            for kind in kinds)
  if rng.uniform() < 1 / 3:
    out = out * level_changes(rng, num_samples, sample_rate)
  return unit_rms(out)
