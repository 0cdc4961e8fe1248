"""A deterministic synthetic noisy/clean speech corpus in the project's record format.

Clean "speech" is a sequence of syllables: voiced ones (a gliding pitch with
harmonics shaped by three moving formants), unvoiced bursts (high-passed
noise) and pauses, over a faint room tone (-80 to -65 dBFS, as real
recordings have; digital silence would make log-spectral losses blow up). Noise is a mix of coloured noise, mains hum and babble of
other synthetic voices, added at an SNR drawn from [-5, 20] dB, with speech
levels like real recordings. Every example comes from its own generator keyed
by (seed, index), so a corpus is the same whatever the order of generation.

Run: python -m input.synthetic --output_dir=/tmp/synth --num_examples=64
"""

import os
from typing import Optional, Tuple

from absl import app
from absl import flags
from absl import logging
import numpy as np

from input import progress
from input import records

SNR_DB = (-5.0, 20.0)
SPEECH_LEVEL_DBFS = (-32.0, -20.0)
ROOM_TONE_DBFS = (-80.0, -65.0)  # real "clean" recordings are never digital silence


def voice(rng: np.random.Generator, num_samples: int, sample_rate: int,
          base_pitch: Optional[float] = None) -> np.ndarray:
  """One synthetic talker: syllables of voiced, unvoiced and silent segments."""
  base_pitch = base_pitch or rng.uniform(85.0, 240.0)
  out = np.zeros(num_samples)
  start = int(rng.uniform(0, 0.3) * sample_rate)
  while start < num_samples:
    length = min(int(rng.uniform(0.08, 0.35) * sample_rate), num_samples - start)
    kind = rng.choice(3, p=[0.65, 0.15, 0.20])
    if kind == 0:
      segment = _voiced(rng, length, sample_rate, base_pitch)
    elif kind == 1:
      segment = _unvoiced(rng, length, sample_rate)
    else:
      segment = np.zeros(length)
    out[start:start + length] = segment * _envelope(length, sample_rate)
    start += length
  return out


def _voiced(rng, length, sample_rate, base_pitch):
  t = np.arange(length) / sample_rate
  pitch = base_pitch * rng.uniform(0.8, 1.25) * (1 + rng.uniform(-0.2, 0.2) * t / t[-1]
                                                 if length > 1 else 1)
  phase = 2 * np.pi * np.cumsum(pitch) / sample_rate
  formants = np.array([rng.uniform(300, 900), rng.uniform(900, 2500),
                       rng.uniform(2400, 3500)])
  drift = 1 + rng.uniform(-0.15, 0.15, 3)[:, None] * (t / max(t[-1], 1e-9))[None]
  formant_tracks = formants[:, None] * drift                       # [3, time]
  bandwidths = rng.uniform(60, 200, 3)[:, None]
  top = min(5000.0, 0.45 * sample_rate)
  signal = np.zeros(length)
  for k in range(1, int(top / pitch.max()) + 1):
    frequency = k * pitch                                          # [time]
    gain = np.sum(1 / (1 + ((frequency[None] - formant_tracks) / bandwidths) ** 2), 0)
    signal += gain / np.sqrt(k) * np.sin(k * phase)
  return signal / (np.abs(signal).max() + 1e-9)


def _unvoiced(rng, length, sample_rate):
  noise = rng.normal(size=length)
  low_cut = rng.uniform(1500, 4000)
  burst = _shape_spectrum(noise, sample_rate, lambda f: (f > low_cut).astype(float))
  return burst / (np.abs(burst).max() + 1e-9) * rng.uniform(0.05, 0.2)  # ~20 dB below vowels


def _envelope(length, sample_rate):
  ramp = min(length // 2, int(0.02 * sample_rate))
  env = np.ones(length)
  if ramp:
    rise = 0.5 - 0.5 * np.cos(np.pi * np.arange(ramp) / ramp)
    env[:ramp], env[-ramp:] = rise, rise[::-1]
  return env


def _shape_spectrum(noise, sample_rate, gain_fn):
  spectrum = np.fft.rfft(noise)
  frequencies = np.fft.rfftfreq(len(noise), 1 / sample_rate)
  return np.fft.irfft(spectrum * gain_fn(frequencies), len(noise))


def noise(rng: np.random.Generator, num_samples: int, sample_rate: int) -> np.ndarray:
  """Coloured noise, mains hum and babble, each present with some probability."""
  parts = []
  if rng.uniform() < 0.8:
    exponent = rng.uniform(0.0, 2.0)  # white .. brown
    coloured = _shape_spectrum(rng.normal(size=num_samples), sample_rate,
                               lambda f: 1 / np.maximum(f, 20.0) ** (exponent / 2))
    parts.append(_unit_rms(coloured))
  if rng.uniform() < 0.4:
    mains = rng.choice([50.0, 60.0])
    t = np.arange(num_samples) / sample_rate
    hum = sum(rng.uniform(0.1, 1) / k * np.sin(2 * np.pi * mains * k * t + rng.uniform(0, 6.3))
              for k in range(1, 8))
    parts.append(_unit_rms(hum) * rng.uniform(0.3, 1.0))
  if rng.uniform() < 0.5 or not parts:
    babble = sum(voice(rng, num_samples, sample_rate) for _ in range(rng.integers(3, 7)))
    parts.append(_unit_rms(babble) * rng.uniform(0.5, 1.0))
  return _unit_rms(sum(parts))


def _unit_rms(x):
  return x / (np.sqrt(np.mean(np.square(x))) + 1e-12)


def example(seed: int, index: int, num_samples: int, sample_rate: int
            ) -> Tuple[np.ndarray, np.ndarray]:
  """`(noisy, clean)` float64 in [-1, 1] for example `index` of corpus `seed`."""
  rng = np.random.default_rng([seed, index])
  clean = voice(rng, num_samples, sample_rate)
  active = np.abs(clean) > 1e-3 * np.abs(clean).max()
  speech_rms = np.sqrt(np.mean(np.square(clean[active]))) if active.any() else 1.0
  clean *= 10 ** (rng.uniform(*SPEECH_LEVEL_DBFS) / 20) / speech_rms
  clean += _unit_rms(_shape_spectrum(rng.normal(size=num_samples), sample_rate,
                                     lambda f: 1 / np.maximum(f, 50.0) ** 0.5)) * (
                                         10 ** (rng.uniform(*ROOM_TONE_DBFS) / 20))
  snr_db = rng.uniform(*SNR_DB)
  mixed_noise = noise(rng, num_samples, sample_rate) * (
      np.sqrt(np.mean(np.square(clean))) / 10 ** (snr_db / 20))
  noisy = clean + mixed_noise
  peak = np.abs(noisy).max()
  if peak > 0.99:
    noisy, clean = noisy * 0.99 / peak, clean * 0.99 / peak
  return noisy, clean


def write_corpus(output_dir: str, *, split: str = "train", num_examples: int,
                 seconds: float, sample_rate: int = 48000, seed: int = 0,
                 num_shards: int = 8, compression: str = "none") -> records.Manifest:
  """Generates `num_examples` examples and writes them as a split; returns its manifest."""
  if num_examples < 1 or seconds <= 0 or sample_rate <= 0:
    raise ValueError("num_examples, seconds and sample_rate must be positive, got "
                     f"{num_examples}, {seconds}, {sample_rate}.")
  num_samples = int(round(seconds * sample_rate))
  meter = progress.Progress(f"synthetic {split}", num_examples, "examples")

  def examples():
    for index in range(num_examples):
      noisy, clean = example(seed, index, num_samples, sample_rate)
      yield records.to_int16(noisy)[0], records.to_int16(clean)[0], f"synth-{seed}-{index}"
      meter.update(index + 1)

  return records.write_split(examples(), output_dir, split,
                             num_shards=min(num_shards, num_examples),
                             sample_rate=sample_rate, segment_samples=num_samples,
                             compression=compression)


def ensure_corpus(output_dir: str, *, split: str, **corpus_args) -> records.Manifest:
  """The split's manifest, generating the corpus first if it is not there yet."""
  if os.path.exists(records.manifest_path(output_dir, split)):
    return records.read_manifest(output_dir, split)
  logging.info("Generating the synthetic %s split in %s (first use).", split, output_dir)
  return write_corpus(output_dir, split=split, **corpus_args)


FLAGS = flags.FLAGS


def main(argv):
  del argv
  manifest = write_corpus(FLAGS.output_dir, split=FLAGS.split,
                          num_examples=FLAGS.num_examples, seconds=FLAGS.seconds,
                          sample_rate=FLAGS.sample_rate, seed=FLAGS.seed,
                          num_shards=FLAGS.num_shards, compression=FLAGS.compression)
  print(f"Wrote {manifest.num_examples} examples ({manifest.total_hours * 60:.1f} min) in "
        f"{len(manifest.shards)} shards to {FLAGS.output_dir}")


if __name__ == "__main__":
  flags.DEFINE_string("output_dir", None, "Where to write shards and manifest.")
  flags.DEFINE_string("split", "train", "Split name (file prefix).")
  flags.DEFINE_integer("num_examples", 256, "Examples to generate.")
  flags.DEFINE_float("seconds", 4.0, "Length of each example in seconds.")
  flags.DEFINE_integer("sample_rate", 48000, "Samples per second.")
  flags.DEFINE_integer("seed", 0, "Corpus seed: same seed, same corpus.")
  flags.DEFINE_integer("num_shards", 8, "Number of TFRecord shards.")
  flags.DEFINE_enum("compression", "none", sorted(records.COMPRESSIONS),
                    "TFRecord compression (none is fastest to read; audio barely compresses).")
  flags.mark_flag_as_required("output_dir")
  app.run(main)
