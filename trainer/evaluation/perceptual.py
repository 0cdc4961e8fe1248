"""PESQ (wide band) and STOI through the optional `pesq` and `pystoi` packages (pip install -e '.[metrics]').

Both are host-side NumPy metrics of one reference/estimate pair. PESQ's wide
band mode is defined at 16 kHz, so other rates are resampled to it first;
STOI resamples internally. Without the packages `missing()` says what to
install and the metrics are simply not reported.
"""

import functools
import importlib
from typing import Dict, Optional

import numpy as np

from input import audio

PESQ_RATE = 16000
INSTALL = "pip install -e '.[metrics]' (the pesq and pystoi packages)"


@functools.lru_cache(maxsize=None)
def missing() -> Optional[str]:
  """None if PESQ and STOI can be computed here, else which packages are missing and how to
  install them."""
  absent = []
  for package in ("pesq", "pystoi"):
    try:
      importlib.import_module(package)
    except ImportError:
      absent.append(package)
  return f"{' and '.join(absent)} not installed: {INSTALL}" if absent else None


def pesq_wb(reference: np.ndarray, estimate: np.ndarray, sample_rate: int) -> float:
  """Wide-band PESQ (MOS-LQO, about 1.0-4.6) of `estimate` against `reference`.

  Returns NaN where PESQ finds no speech in the reference (e.g. silence).
  """
  import pesq  # pylint: disable=g-import-not-at-top
  if not np.any(reference):
    return float("nan")
  reference, estimate = (_at_pesq_rate(x, sample_rate) for x in (reference, estimate))
  score = pesq.pesq(PESQ_RATE, reference, estimate, "wb",
                    on_error=pesq.PesqError.RETURN_VALUES)
  return float(score) if score >= 0 else float("nan")


def stoi(reference: np.ndarray, estimate: np.ndarray, sample_rate: int) -> float:
  """Short-time objective intelligibility in [0, 1] (NaN for a silent reference)."""
  import pystoi  # pylint: disable=g-import-not-at-top
  if not np.any(reference):
    return float("nan")
  return float(pystoi.stoi(np.asarray(reference, np.float64),
                           np.asarray(estimate, np.float64), sample_rate))


def scores(reference: np.ndarray, estimate: np.ndarray, sample_rate: int) -> Dict[str, float]:
  """`{"pesq": ..., "stoi": ...}` for one pair."""
  return dict(pesq=pesq_wb(reference, estimate, sample_rate),
              stoi=stoi(reference, estimate, sample_rate))


def _at_pesq_rate(signal: np.ndarray, sample_rate: int) -> np.ndarray:
  signal = np.asarray(signal, np.float32)
  return audio.resample(signal, sample_rate, PESQ_RATE, name="PESQ input").astype(np.float64)
