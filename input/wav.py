"""WAV headers, the one place they are parsed and made: read a header from a stream up to its data (format, channels, rate, bits, data size), checked for what a reader can trust, and write a mono 16-bit PCM one."""

import dataclasses
import struct
from typing import BinaryIO, Optional

WAVE_FORMAT_PCM, WAVE_FORMAT_FLOAT, WAVE_FORMAT_EXTENSIBLE = 1, 3, 0xFFFE
UNKNOWN_SIZE = 0xFFFFFFFF  # a WAV header's size for a stream of unknown length
# Rates a WAV file may declare (Hz): below, a damaged or hand-made header (1 Hz makes a
# 16 KB file hours long); above, no audio interface runs.
MIN_RATE, MAX_RATE = 1000, 768000


class HeaderError(ValueError):
  """Not a WAV header, or one that cannot be trusted; the message says why."""


@dataclasses.dataclass(frozen=True)
class Format:
  """A WAV file's fmt chunk: `tag` (WAVE_FORMAT_PCM, WAVE_FORMAT_FLOAT, ...; the extensible
  format's sub-format resolved), `channels`, `rate` (Hz) and `bits` per sample; and its
  data chunk's size in bytes, None where the header leaves it unknown (0 or 0xFFFFFFFF:
  what streams such as `arecord` and `trainer.stream` to stdout write, read to the end)."""
  tag: int
  channels: int
  rate: int
  bits: int
  data_size: Optional[int] = None

  @property
  def frame_bytes(self) -> int:
    return self.channels * ((self.bits + 7) // 8)


def check_rate(rate: int) -> int:
  """`rate` if a file may declare it (MIN_RATE to MAX_RATE Hz), else HeaderError."""
  if not MIN_RATE <= rate <= MAX_RATE:
    raise HeaderError(f"its header declares {rate} Hz, outside the {MIN_RATE}-{MAX_RATE} Hz "
                      "of any audio (a damaged or hand-made header)")
  return rate


def read_header(f: BinaryIO) -> Format:
  """Reads a WAV header from `f` (a stream, read forwards only) up to the start of its data
  chunk, where `f` is left.

  Raises:
    HeaderError: `f` does not start with RIFF/WAVE, its fmt chunk is missing, short or
      implausible (no channels or bits, a rate outside MIN_RATE-MAX_RATE), or it ends
      inside the header.
  """
  riff = _read_exactly(f, 12)
  if riff[:4] != b"RIFF" or riff[8:] != b"WAVE":
    raise HeaderError("not a WAV file (no RIFF/WAVE header)")
  found = None
  while True:
    chunk, size = struct.unpack("<4sI", _read_exactly(f, 8))
    if chunk == b"data":
      if found is None:
        raise HeaderError("the WAV has no fmt chunk before its data")
      return dataclasses.replace(found, data_size=None if size in (0, UNKNOWN_SIZE) else size)
    if chunk == b"fmt ":
      found = _format(_read_exactly(f, size + size % 2)[:size])
    else:
      _skip(f, size + size % 2)


def _format(body: bytes) -> Format:
  """The checked Format of a fmt chunk's `body`."""
  if len(body) < 16:
    raise HeaderError(f"its fmt chunk is {len(body)} bytes, shorter than a WAV's 16")
  tag, channels, rate, _, _, bits = struct.unpack("<HHIIHH", body[:16])
  if tag == WAVE_FORMAT_EXTENSIBLE and len(body) >= 26:
    tag = struct.unpack("<H", body[24:26])[0]
  if channels < 1 or bits < 1:
    raise HeaderError(f"its header declares {channels} channel(s) of {bits}-bit samples")
  return Format(tag, channels, check_rate(rate), bits)


def header(rate: int, samples: Optional[int] = None) -> bytes:
  """The header of a mono 16-bit PCM WAV of `samples` samples; sizes unknown (as streams
  write them) without `samples`."""
  data = UNKNOWN_SIZE if samples is None else 2 * samples
  riff = UNKNOWN_SIZE if samples is None else 36 + data
  return (b"RIFF" + struct.pack("<I", riff) + b"WAVEfmt "
          + struct.pack("<IHHIIHH", 16, WAVE_FORMAT_PCM, 1, rate, 2 * rate, 2, 16)
          + b"data" + struct.pack("<I", data))


def _skip(f: BinaryIO, size: int):
  while size > 0:  # in pieces: a damaged size must not be read into memory at once
    size -= len(_read_exactly(f, min(size, 1 << 16)))


def _read_exactly(f: BinaryIO, size: int) -> bytes:
  data = b""
  while len(data) < size:
    more = f.read(size - len(data))
    if not more:
      raise HeaderError("it ends inside its WAV header: it is not a whole WAV")
    data += more
  return data
