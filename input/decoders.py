"""Audio decoders behind one reader: tensorflow-io where its compiled ops load, soundfile (libsndfile) on every supported TensorFlow; one is chosen per process and named once."""

import contextlib
import functools
import io
import re
from typing import Optional, Tuple
import warnings

from absl import logging
import numpy as np
import tensorflow as tf

from input import wav

TENSORFLOW_IO, SOUNDFILE = "tensorflow-io", "soundfile"
DECODERS = (TENSORFLOW_IO, SOUNDFILE)  # the order of preference
# What every decoder reads (the README's promise): kind -> (container, soundfile subtype).
FORMATS = {"wav8": ("WAV", "PCM_U8"), "wav16": ("WAV", "PCM_16"), "wav24": ("WAV", "PCM_24"),
           "wav32": ("WAV", "PCM_32"), "float": ("WAV", "FLOAT"),
           "flac": ("FLAC", "PCM_16"), "flac24": ("FLAC", "PCM_24")}


class AudioError(ValueError):
  """An audio file cannot be read or converted; the message names it."""


@functools.lru_cache(maxsize=None)
def problem(decoder: str) -> Optional[str]:
  """None if `decoder` (one of `DECODERS`) works here, else why not, in one line."""
  try:
    with warnings.catch_warnings():  # tensorflow-io warns at import where its ops cannot load
      warnings.simplefilter("ignore")
      if decoder == TENSORFLOW_IO:
        import tensorflow_io as tfio  # pylint: disable=g-import-not-at-top
        tfio.audio.resample(tf.zeros([4, 1]), rate_in=2, rate_out=1)  # loads its compiled ops
      elif decoder == SOUNDFILE:
        import soundfile  # pylint: disable=g-import-not-at-top,unused-import
      else:
        raise ValueError(f"unknown decoder {decoder!r}: use one of {', '.join(DECODERS)}")
  except Exception as e:  # pylint: disable=broad-except
    if "undefined symbol" in str(e):  # built against another TensorFlow's C++ ABI
      return (f"its compiled ops do not load with TensorFlow {tf.__version__} (undefined "
              "symbol); tensorflow-io 0.37.1, its last release, loads with 2.16/2.17")
    return f"{type(e).__name__}: {summary(e)}"
  return None


@functools.lru_cache(maxsize=None)
def chosen() -> str:
  """The decoder this process uses: the first of `DECODERS` that works, logged once.

  Raises:
    AudioError: if none works, with each one's reason.
  """
  for decoder in DECODERS:
    if problem(decoder) is None:
      others = "".join(f"; {other} cannot load ({problem(other)})"
                       for other in DECODERS[:DECODERS.index(decoder)])
      logging.info("Decoding audio with %s%s.", decoder, others)
      return decoder
  reasons = "; ".join(f"{decoder}: {problem(decoder)}" for decoder in DECODERS)
  raise AudioError(f"No audio decoder works here ({reasons}). Install soundfile "
                   "(pip install soundfile), which reads WAV and FLAC on every TensorFlow.")


def open_reader(path: str, decoder: Optional[str] = None):
  """A reader of `path` (`rate`, `length`, `read(start, stop)` -> float64 frames x
  channels, PCM scaled to [-1, 1)) through `decoder` (default: `chosen()`).

  Raises:
    AudioError: naming the file, if it cannot be decoded.
  """
  decoder = decoder or chosen()
  if problem(decoder) is not None:
    raise AudioError(f"{path}: the {decoder} decoder cannot load here ({problem(decoder)}).")
  header = wav_header(path)
  if header is not None and header[0].data_size is None:  # a stream's WAV: to the end
    return _StreamedWavReader(path, *header)
  if header is not None:
    found, offset = header
    held = tf.io.gfile.stat(path).length - offset
    if found.data_size > held:
      raise AudioError(f"{path}: its header declares {found.data_size} bytes of audio, but "
                       f"the file holds {held} after the header: it was cut short (or its "
                       "header is wrong). Re-save it whole, e.g. with sox.")
  return {TENSORFLOW_IO: _TensorflowIoReader, SOUNDFILE: _SoundfileReader}[decoder](path)


class _StreamedWavReader:
  """A WAV whose header leaves its data size unknown (0 or 0xFFFFFFFF, as `arecord`, `sox`
  and `trainer.stream` to stdout write it), which the decoders read as empty or refuse:
  its samples from the data chunk to the end of the file, PCM or float."""

  _SCALES = {(wav.WAVE_FORMAT_PCM, 16): ("<i2", 2.0**15), (wav.WAVE_FORMAT_PCM, 32): ("<i4", 2.0**31),
             (wav.WAVE_FORMAT_FLOAT, 32): ("<f4", 1.0), (wav.WAVE_FORMAT_FLOAT, 64): ("<f8", 1.0)}

  def __init__(self, path: str, found: wav.Format, offset: int):
    kind = (found.tag, found.bits)
    if kind not in self._SCALES and kind not in ((wav.WAVE_FORMAT_PCM, 8),
                                                 (wav.WAVE_FORMAT_PCM, 24)):
      raise AudioError(f"{path}: a WAV of format {found.tag}, {found.bits}-bit, with no data "
                       "size: convert it to PCM or float WAV.")
    self.path, self._format, self._offset = path, found, offset
    self.rate = found.rate
    self.length = (tf.io.gfile.stat(path).length - offset) // found.frame_bytes

  def read(self, start: int, stop: int) -> np.ndarray:
    found = self._format
    with tf.io.gfile.GFile(self.path, "rb") as f:
      f.seek(self._offset + start * found.frame_bytes)
      data = f.read((stop - start) * found.frame_bytes)
    if found.bits == 8:
      samples = (np.frombuffer(data, np.uint8).astype(np.float64) - 128.0) / 128.0
    elif found.bits == 24:
      triples = np.frombuffer(data, np.uint8).reshape(-1, 3).astype(np.int32)
      packed = triples[:, 0] | (triples[:, 1] << 8) | (triples[:, 2] << 16)
      samples = ((packed << 8) >> 8) / 2.0**23  # sign-extended
    else:
      dtype, scale = self._SCALES[(found.tag, found.bits)]
      samples = np.frombuffer(data, dtype).astype(np.float64) / scale
    return samples.reshape(-1, found.channels)


class _SoundfileReader:
  """libsndfile through soundfile: seeks to each range, so a long file need not fit in
  memory; a path with a scheme (gs://, ram://, ...) is read through TensorFlow's file
  systems, as tensorflow-io reads it."""

  def __init__(self, path: str):
    import soundfile  # pylint: disable=g-import-not-at-top
    self._soundfile, self.path = soundfile, path
    with self._open("audio") as f:
      self.rate, self.length = int(f.samplerate), int(f.frames)

  def read(self, start: int, stop: int) -> np.ndarray:
    with self._open(f"samples {start}-{stop}") as f:
      f.seek(start)
      return f.read(stop - start, dtype="float64", always_2d=True)

  @contextlib.contextmanager
  def _open(self, what: str):
    """The file as a soundfile.SoundFile; its errors as an AudioError naming it."""
    try:
      with contextlib.ExitStack() as stack:
        source = (stack.enter_context(_GFileStream(self.path)) if "://" in self.path
                  else self.path)
        yield stack.enter_context(self._soundfile.SoundFile(source))
    except (self._soundfile.SoundFileError, RuntimeError, OSError, TypeError,
            tf.errors.OpError) as e:
      raise AudioError(f"{self.path}: cannot decode {what} ({summary(e)}).") from e


class _GFileStream(io.RawIOBase):
  """A file read through TensorFlow's file systems, with the `readinto` soundfile reads by."""

  def __init__(self, path: str):
    super().__init__()
    self._file = tf.io.gfile.GFile(path, "rb")
    self._file.size()  # a missing file fails here, not inside libsndfile's callback

  def readable(self):
    return True

  def seekable(self):
    return True

  def readinto(self, buffer) -> int:
    data = self._file.read(len(buffer))
    buffer[:len(data)] = data
    return len(data)

  def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
    self._file.seek(offset, whence)
    return self._file.tell()

  def tell(self) -> int:
    return self._file.tell()

  def close(self):
    self._file.close()
    super().close()


class _TensorflowIoReader:
  """tensorflow-io's AudioIOTensor: ranged reads through TensorFlow's file systems."""

  def __init__(self, path: str):
    import tensorflow_io as tfio  # pylint: disable=g-import-not-at-top
    self.path = path
    try:
      self._audio = tfio.audio.AudioIOTensor(path)
      self.rate = int(self._audio.rate.numpy())
      self.length = int(self._audio.shape[0])
    except (tf.errors.OpError, ValueError) as e:
      raise AudioError(f"{path}: cannot decode audio ({summary(e)}).") from e
    # tensorflow-io hands 32-bit PCM over as float32 bit patterns
    header = wav_header(path) if self._audio.dtype == tf.float32 else None
    self._int32_bits = header is not None and (header[0].tag, header[0].bits) == (
        wav.WAVE_FORMAT_PCM, 32)

  def read(self, start: int, stop: int) -> np.ndarray:
    try:
      samples = self._audio[start:stop].numpy()
    except (tf.errors.OpError, ValueError) as e:
      raise AudioError(f"{self.path}: cannot decode samples {start}-{stop} "
                       f"({summary(e)}).") from e
    if self._int32_bits:
      samples = samples.view(np.int32)
    if samples.dtype == np.uint8:
      return (samples.astype(np.float64) - 128.0) / 128.0
    scale = {np.dtype("int16"): 2.0**15, np.dtype("int32"): 2.0**31,
             np.dtype("float32"): 1.0}.get(samples.dtype)
    if scale is None:
      raise AudioError(f"{self.path}: unsupported sample type {samples.dtype}.")
    return samples.astype(np.float64) / scale


def wav_header(path: str) -> Optional[Tuple[wav.Format, int]]:
  """`(format, where its data starts)` of a WAV file; None for a file of another format (or
  one that cannot be opened: the decoder names why).

  Raises:
    AudioError: naming the file, if its WAV header cannot be trusted (wav.read_header).
  """
  try:
    with tf.io.gfile.GFile(path, "rb") as f:
      if f.read(4) != b"RIFF":
        return None
      f.seek(0)
      return wav.read_header(f), f.tell()
  except wav.HeaderError as e:
    raise AudioError(f"{path}: {e}.") from None
  except (tf.errors.OpError, OSError):
    return None


def summary(error: Exception) -> str:
  """The useful part of an error: no function-node prefix, one line, bounded."""
  text = re.sub(r"\{\{.*?\}\}\s*", "", getattr(error, "message", None) or str(error))
  text = " ".join(text.split())
  return text[:200] or type(error).__name__
