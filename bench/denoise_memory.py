"""Benchmark: trainer.denoise's peak memory (RSS) and speed against the length of the file.

Run: python -m bench.denoise_memory [--minutes 1 10] [--sample_rate 48000]

Each row runs `python -m trainer.denoise` in its own process on a WAV of noise
and tones at the file's rate, with an export of a small, untrained mask model
at 16 kHz (the memory comes from reading, resampling, enhancing and writing
the audio, not from the model's weights), and reads the process's peak RSS
from the kernel (wait4). Streaming keeps the peak bounded by one segment.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import tensorflow as tf

from bench import timing
from input import wav
from trainer.models import card as card_lib
from trainer.serving import saved_model

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_wav(path: str, minutes: float, rate: int):
  """A 16-bit WAV of noise and tones, written a second at a time (not held whole)."""
  length = int(minutes * 60 * rate)
  rng = np.random.default_rng(0)
  with open(path, "wb") as f:
    f.write(wav.header(rate, length))
    for start in range(0, length, rate):
      t = np.arange(start, min(start + rate, length)) / rate
      second = 0.2 * np.sin(2 * np.pi * 220 * t) + 0.05 * rng.normal(size=len(t))
      f.write(np.round(second * 32767).astype("<i2").tobytes())


def small_export(directory: str) -> str:
  model_dir = os.path.join(directory, "run")
  card = card_lib.ModelCard.create("mask", sample_rate=16000, hidden=16, depth=2)
  card.write(model_dir)
  tf.train.Checkpoint(model=card.build()).save(os.path.join(model_dir, "checkpoints", "ckpt"))
  return saved_model.export(model_dir, os.path.join(directory, "exported"))


def main():
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument("--minutes", type=float, nargs="+", default=[1.0, 10.0])
  parser.add_argument("--sample_rate", type=int, default=48000)
  args = parser.parse_args()
  directory = tempfile.mkdtemp()
  saved = small_export(directory)
  rows = []
  for minutes in args.minutes:
    path = os.path.join(directory, f"{minutes:g}min.wav")
    write_wav(path, minutes, args.sample_rate)
    output = os.path.join(directory, f"{minutes:g}min-enhanced.wav")
    command = [sys.executable, "-m", "trainer.denoise", f"--saved_model={saved}",
               f"--input={path}", f"--output={output}"]
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE,
                               env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    if status:
      raise SystemExit(f"{command} failed: {process.stderr.read().decode()[-2000:]}")
    rows.append((minutes, round(usage.ru_maxrss / 1024), round(seconds, 1),
                 round(minutes * 60 / seconds, 1)))
  print(f"trainer.denoise on {args.sample_rate} Hz 16-bit WAV (small mask model at 16 kHz); "
        f"{timing.machine()}")
  print(timing.table(["minutes", "peak RSS MB", "seconds", "x real time"], rows))
  print(f"peak RSS ratio, longest / shortest: {rows[-1][1] / rows[0][1]:.2f}")


if __name__ == "__main__":
  main()
