"""Tests for input.wav and the readers built on it: headers that cannot be trusted are refused naming the problem, a data chunk is read exactly, and streamed WAVs (no data size) are read to their end."""

import io
import os
import struct
import time

import numpy as np
import tensorflow as tf

from input import audio
from input import wav
from trainer.serving import pipe


def wav_bytes(pcm: bytes, *, rate=16000, fmt_size=16, data_size=None, after=b"",
              before=b"", channels=1, bits=16, tag=wav.WAVE_FORMAT_PCM) -> bytes:
  """A WAV of `pcm` with the given fmt chunk and data size (default: the real one), `before`
  and `after` chunks around its data."""
  block = channels * bits // 8
  fmt = struct.pack("<HHIIHH", tag, channels, rate, (rate * block) % 2**32, block, bits)
  fmt = (fmt + b"\0" * 16)[:fmt_size]
  body = (b"WAVEfmt " + struct.pack("<I", fmt_size) + fmt + before + b"data"
          + struct.pack("<I", len(pcm) if data_size is None else data_size) + pcm + after)
  return b"RIFF" + struct.pack("<I", len(body)) + body


PCM = (np.sin(np.arange(1600) / 5.0) * 10000).astype("<i2")
LIST = b"LIST" + struct.pack("<I", 10) + b"INFOISFT\0\0"  # metadata after the audio


class HeaderTest(tf.test.TestCase):

  def test_a_header_is_read_up_to_its_data_with_chunks_skipped(self):
    f = io.BytesIO(wav_bytes(PCM.tobytes(), before=LIST, after=LIST))
    found = wav.read_header(f)
    self.assertEqual((found.tag, found.channels, found.rate, found.bits, found.data_size),
                     (1, 1, 16000, 16, 3200))
    self.assertEqual(f.read(4), PCM.tobytes()[:4])  # left at the samples

  def test_headers_that_cannot_be_trusted_are_refused_naming_why(self):
    for data, why in ((wav_bytes(b"", fmt_size=14), "fmt chunk is 14 bytes"),
                      (wav_bytes(b"", rate=0), "declares 0 Hz"),
                      (wav_bytes(b"", rate=1), "declares 1 Hz"),
                      (wav_bytes(b"", rate=2**31), "declares 2147483648 Hz"),
                      (wav_bytes(b"", channels=0), "0 channel"),
                      (b"ID3" + b"\0" * 40, "not a WAV file"),
                      (wav_bytes(b"")[:30], "ends inside its WAV header")):
      with self.assertRaisesRegex(wav.HeaderError, why):
        wav.read_header(io.BytesIO(data))

  def test_a_streams_header_leaves_the_data_size_unknown(self):
    for size in (0, wav.UNKNOWN_SIZE):
      self.assertIsNone(wav.read_header(io.BytesIO(wav_bytes(b"", data_size=size))).data_size)
    self.assertIsNone(wav.read_header(io.BytesIO(wav.header(16000))).data_size)


class ReadersTest(tf.test.TestCase):

  def write(self, data: bytes) -> str:
    path = os.path.join(self.create_tempdir().full_path, "x.wav")
    with open(path, "wb") as f:
      f.write(data)
    return path

  def test_the_stream_reads_exactly_the_data_chunk(self):
    f = io.BytesIO(wav_bytes(PCM.tobytes(), after=LIST))
    found = pipe.read_wav_header(f)
    samples = np.concatenate(list(pipe.pcm_blocks(f, 100, found.data_size)))
    self.assertAllEqual(samples, PCM / 32768.0)  # no metadata played as samples

  def test_a_streamed_wav_is_read_to_its_end_by_the_file_path(self):
    for size in (0, wav.UNKNOWN_SIZE):
      samples, rate = audio.read_file(self.write(wav_bytes(PCM.tobytes(), data_size=size)))
      self.assertEqual(rate, 16000)
      self.assertAllClose(samples, PCM / 32768.0, atol=1e-7)
    # what trainer.stream writes to stdout
    samples, _ = audio.read_file(self.write(wav.header(8000) + PCM.tobytes()))
    self.assertAllClose(samples, PCM / 32768.0, atol=1e-7)
    for bits, tag, values in ((24, 1, np.array([-2**23, -1, 0, 2**23 - 1])),
                              (32, 3, np.array([-0.5, 0.25, 1.0, 0.0]))):
      if bits == 24:
        pcm = b"".join(int(v).to_bytes(3, "little", signed=True) for v in values)
        expected = values / 2.0**23
      else:
        pcm, expected = values.astype("<f4").tobytes(), values
      path = self.write(wav_bytes(pcm, data_size=0, bits=bits, tag=tag))
      self.assertAllClose(audio.read_file(path)[0], expected, atol=1e-7)

  def test_an_implausible_rate_is_refused_at_once_naming_the_file(self):
    path = self.write(wav_bytes(PCM.tobytes() * 5, rate=1))  # "8000 s" of audio
    start = time.monotonic()
    with self.assertRaisesRegex(audio.AudioError, f"{path}: its header declares 1 Hz"):
      audio.AudioFile(path)
    self.assertLess(time.monotonic() - start, 5.0)
    cut = self.write(wav_bytes(PCM.tobytes(), data_size=100 * len(PCM.tobytes())))
    with self.assertRaisesRegex(audio.AudioError, f"{cut}: its header declares 320000 bytes "
                                "of audio, but the file holds 3200 after the header"):
      audio.AudioFile(cut)
    with self.assertRaisesRegex(ValueError, "stdin: its header declares 0 Hz"):
      pipe.read_wav_header(io.BytesIO(wav_bytes(b"", rate=0)), "stdin")


if __name__ == "__main__":
  tf.test.main()
