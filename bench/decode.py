"""Benchmark: the audio decoders (tensorflow-io where its ops load, soundfile everywhere) on the formats the README promises, read whole and in 10 s ranges.

Run: python -m bench.decode [--seconds 60] [--runs 3]

Speed: seconds of 48 kHz mono audio decoded per second of wall time (x real
time) through input.audio.AudioFile, to mono float32 as input.prepare and
trainer.denoise read it: "whole" opens the file and reads it in one range,
"10 s ranges" reads it range after range as trainer.denoise does.
"""

import argparse
import os
import tempfile

import numpy as np
import soundfile

from bench import timing
from input import audio
from input import decoders

RATE = 48000


def read_whole(path, decoder):
  source = audio.AudioFile(path, decoder)
  return source.read(0, source.length)


def read_ranges(path, decoder, seconds=10.0):
  source = audio.AudioFile(path, decoder)
  step = int(seconds * source.rate)
  return [source.read(start, start + step) for start in range(0, source.length, step)]


def main():
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument("--seconds", type=float, default=60.0)
  parser.add_argument("--runs", type=int, default=3)
  args = parser.parse_args()
  usable = [d for d in decoders.DECODERS if decoders.problem(d) is None]
  signal = 0.3 * np.random.default_rng(0).standard_normal(int(args.seconds * RATE))
  rows = []
  with tempfile.TemporaryDirectory() as directory:
    for name, (container, subtype) in decoders.FORMATS.items():
      path = os.path.join(directory, f"x.{container.lower()}")
      soundfile.write(path, np.clip(signal, -1, 1), RATE, subtype=subtype, format=container)
      row = [name]
      for decoder in usable:
        for read in (read_whole, read_ranges):
          row.append(round(args.seconds / timing.median_seconds(
              lambda read=read, decoder=decoder: read(path, decoder), runs=args.runs)))
      rows.append(row)
  print(timing.machine())
  print(f"Decoding, x real time ({args.seconds:g} s at {RATE // 1000} kHz mono, median of "
        f"{args.runs})")
  print(timing.table(["format", *(f"{d}, {how}" for d in usable
                                  for how in ("whole", "10 s ranges"))], rows))
  for decoder in decoders.DECODERS:
    if decoder not in usable:
      print(f"{decoder}: not measured, {decoders.problem(decoder)}")


if __name__ == "__main__":
  main()
