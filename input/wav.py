"""WAV headers, the one place they are parsed and made: read a header from a stream up to its data (format, channels, rate, bits), and write a mono 16-bit PCM one."""

import dataclasses
import struct
from typing import BinaryIO, Optional

WAVE_FORMAT_PCM, WAVE_FORMAT_EXTENSIBLE = 1, 0xFFFE
UNKNOWN_SIZE = 0xFFFFFFFF  # a WAV header's size for a stream of unknown length


class HeaderError(ValueError):
  """Not a WAV header, or one cut short; the message says which."""


@dataclasses.dataclass(frozen=True)
class Format:
  """A WAV file's fmt chunk: `tag` (WAVE_FORMAT_PCM, 3 for float, ...; the extensible
  format's sub-format resolved), `channels`, `rate` (Hz) and `bits` per sample."""
  tag: int
  channels: int
  rate: int
  bits: int


def read_header(f: BinaryIO) -> Format:
  """Reads a WAV header from `f` (a stream, read forwards only) up to the start of its data
  chunk, where `f` is left.

  Raises:
    HeaderError: `f` does not start with RIFF/WAVE, it has no fmt chunk before its data,
      or it ends inside the header.
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
      return found
    body = _read_exactly(f, size + size % 2)
    if chunk == b"fmt ":
      tag, channels, rate, _, _, bits = struct.unpack("<HHIIHH", body[:16])
      if tag == WAVE_FORMAT_EXTENSIBLE and size >= 26:
        tag = struct.unpack("<H", body[24:26])[0]
      found = Format(tag, channels, rate, bits)


def header(rate: int, samples: Optional[int] = None) -> bytes:
  """The header of a mono 16-bit PCM WAV of `samples` samples; sizes unknown (as streams
  write them) without `samples`."""
  data = UNKNOWN_SIZE if samples is None else 2 * samples
  riff = UNKNOWN_SIZE if samples is None else 36 + data
  return (b"RIFF" + struct.pack("<I", riff) + b"WAVEfmt "
          + struct.pack("<IHHIIHH", 16, WAVE_FORMAT_PCM, 1, rate, 2 * rate, 2, 16)
          + b"data" + struct.pack("<I", data))


def _read_exactly(f: BinaryIO, size: int) -> bytes:
  data = b""
  while len(data) < size:
    more = f.read(size - len(data))
    if not more:
      raise HeaderError("the input ended inside its WAV header: it is not a whole WAV")
    data += more
  return data
