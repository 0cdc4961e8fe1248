"""The synthetic corpus: synthesized talkers in synthesized noise, as noisy/clean pairs or as separate clean and noise stores.

Clean speech comes from input.speech (a source-filter synthesizer: random
talkers of every size saying random syllables in phrases), with a mild random
microphone colour and a faint room tone (-80 to -65 dBFS, as real recordings
have; digital silence would make log-spectral losses blow up). Noise comes
from input.noise (coloured, hum and buzz, machines, transients, babble of
the corpus's own talkers, level changes) at an SNR drawn from [-5, 20] dB.
Above 16 kHz some examples are recorded at a lower common rate: speech and
noise end at its band edge, as a file resampled up to the model's rate does.
Each example is drawn from its own generator keyed by (seed, index), and
babble from a bank of talkers keyed by the seed, so a corpus is the same
whatever the order of generation or the number of processes generating it.
The clean and noise stores of a seed hold exactly the speech and the noise its
pairs are mixed from (noisy = clean + noise), so a run that mixes on the fly
and a run on the stored pairs see the same material.

Run: python -m input.synthetic --output_dir=/tmp/synth --num_examples=64
"""

import concurrent.futures
import functools
import multiprocessing
import os
from typing import Tuple

from absl import app
from absl import flags
from absl import logging
import numpy as np
import tensorflow as tf

from common import checks
from common import cli
from common import progress
from input import audio
from input import noise
from input import records
from input import speech

VERSION = 6  # changes whenever the same seed would give different audio
SNR_DB = (-5.0, 20.0)
MIN_SAMPLE_RATE = 8000
SPEECH_LEVEL_DBFS = (-32.0, -20.0)
ROOM_TONE_DBFS = (-80.0, -65.0)  # real "clean" recordings are never digital silence
BANK_TALKERS, BANK_SECONDS = 24, 6.0
PARALLEL_FROM = 64  # examples; smaller corpora are generated in this process
# Rates recordings come at; a corpus above one of them has this share of its examples'
# speech and noise end at the band edge of one (a 16 kHz corpus: none, so it is as before).
RECORDED_RATES, LOWER_RATE_SHARE = (16000, 22050, 32000, 44100), 0.3


@functools.lru_cache(maxsize=4)
def babble_bank(seed: int, sample_rate: int) -> np.ndarray:
  """`[talkers, samples]` utterances of the corpus's own talkers that babble is cut from."""
  samples = int(BANK_SECONDS * sample_rate)
  return np.stack([speech.utterance(np.random.default_rng([seed, 1, talker]), samples,
                                    sample_rate) for talker in range(BANK_TALKERS)])


def example(seed: int, index: int, num_samples: int, sample_rate: int
            ) -> Tuple[np.ndarray, np.ndarray]:
  """`(noisy, clean)` float64 in [-1, 1] for example `index` of corpus `seed`."""
  rng = np.random.default_rng([seed, 0, index])
  clean = speech.utterance(rng, num_samples, sample_rate)
  clean = _microphone(rng, clean, sample_rate)
  active = np.abs(clean) > 1e-3 * np.abs(clean).max()
  speech_rms = np.sqrt(np.mean(np.square(clean[active]))) if active.any() else 1.0
  clean *= 10 ** (rng.uniform(*SPEECH_LEVEL_DBFS) / 20) / speech_rms
  room_tone = noise.shape_spectrum(rng.normal(size=num_samples), sample_rate,
                                   lambda f: 1 / np.maximum(f, 50.0) ** 0.5)
  clean += noise.unit_rms(room_tone) * 10 ** (rng.uniform(*ROOM_TONE_DBFS) / 20)
  snr_db = rng.uniform(*SNR_DB)
  mixed_noise = noise.mixture(rng, num_samples, sample_rate, babble_bank(seed, sample_rate))
  recorded_at = _recorded_rate(rng, sample_rate)
  if recorded_at < sample_rate:
    clean, mixed_noise = (_band_edge(x, sample_rate, recorded_at) for x in (clean, mixed_noise))
  noisy = clean + mixed_noise * np.sqrt(np.mean(np.square(clean))) / 10 ** (snr_db / 20)
  peak = np.abs(noisy).max()
  if peak > 0.99:
    noisy, clean = noisy * 0.99 / peak, clean * 0.99 / peak
  return noisy, clean


def _microphone(rng, signal, sample_rate):
  """A mild random tilt and low/high cut, as different microphones and rooms give."""
  tilt = rng.uniform(-3.0, 3.0)  # dB per octave around 1 kHz
  # The high cut is the microphone's or the converter's, never below 7 kHz (nor the band edge).
  low_cut = rng.uniform(40.0, 200.0)
  high_cut = min(rng.uniform(7000.0, 20000.0), 0.47 * sample_rate)

  def gain(f):
    f = np.maximum(f, 1.0)
    return (10 ** (tilt * np.log2(f / 1000.0) / 20) / np.sqrt(1 + (low_cut / f) ** 4)
            / np.sqrt(1 + (f / high_cut) ** 8))

  return noise.shape_spectrum(signal, sample_rate, gain)


def _recorded_rate(rng, sample_rate: int) -> int:
  """The rate an example is recorded at: the corpus's own, or in LOWER_RATE_SHARE of
  examples one of the RECORDED_RATES below it (drawn only if there is one)."""
  lower = [rate for rate in RECORDED_RATES if rate < sample_rate]
  if not lower or rng.uniform() >= LOWER_RATE_SHARE:
    return sample_rate
  return int(rng.choice(lower))


def _band_edge(signal, sample_rate: int, recorded_at: int):
  """`signal` as a recording at `recorded_at` resampled up to `sample_rate` gives it: flat
  to 0.45 times that rate, nothing from its Nyquist frequency on (a linear ramp between)."""
  edge = 0.5 * recorded_at
  return noise.shape_spectrum(signal, sample_rate,
                              lambda f: np.clip((edge - f) / (0.1 * edge), 0.0, 1.0))


def _pcm_example(seed: int, num_samples: int, sample_rate: int, kind: str, index: int):
  """The int16 signals of example `index` that a `kind` store holds (records.KINDS order)."""
  noisy, clean = example(seed, index, num_samples, sample_rate)
  signals = {"noisy": noisy, "clean": clean, "noise": noisy - clean}
  return tuple(audio.to_int16(signals[name])[0] for name in records.KINDS[kind])


def write_corpus(output_dir: str, *, split: str = "train", num_examples: int,
                 seconds: float, sample_rate: int = 48000, seed: int = 0,
                 num_shards: int = 8, compression: str = "none",
                 processes: int = 0, overwrite: bool = False,
                 kind: str = "pairs") -> records.Manifest:
  """Generates `num_examples` examples and writes them as a split; returns its manifest.

  Args:
    kind: pairs, or the examples' clean speech or noise alone (records.KINDS).
    processes: generator processes (0: one per CPU core); corpora of fewer than
      64 examples are generated in this process.
    overwrite: replace the split if `output_dir` holds it (else FileExistsError).
  """
  checks.at_least("num_examples", num_examples, 1)
  checks.positive("seconds", seconds)
  if records.check_kind(kind) == "rir":
    raise checks.ArgumentError("kind", kind, "is not synthesized here: simulate rooms with "
                               "python -m input.prepare --kind=rir --simulated_rooms=N.")
  # The talkers' formants and fricatives reach about 3.5 kHz: below 8 kHz they would alias.
  checks.at_least("sample_rate", sample_rate, MIN_SAMPLE_RATE)
  num_samples = int(round(seconds * sample_rate))
  meter = progress.Progress(f"synthetic {split}", num_examples, "examples")
  make = functools.partial(_pcm_example, seed, num_samples, sample_rate, kind)
  processes = processes or os.cpu_count() or 1
  pool = None
  if processes > 1 and num_examples >= PARALLEL_FROM:
    pool = concurrent.futures.ProcessPoolExecutor(
        processes, mp_context=multiprocessing.get_context("spawn"))

  def examples():
    pcm = pool.map(make, range(num_examples), chunksize=8) if pool else map(
        make, range(num_examples))
    for index, signals in enumerate(pcm):
      yield (*signals, f"synth-{seed}-{index}")
      if index == 0:
        meter.restart(1)  # the first one also waited for the processes to start
      meter.update(index + 1)

  try:
    return records.write_split(examples(), output_dir, split,
                               num_shards=min(num_shards, num_examples),
                               sample_rate=sample_rate, segment_samples=num_samples,
                               compression=compression, overwrite=overwrite, kind=kind)
  finally:
    if pool:
      pool.shutdown(cancel_futures=True)


def ensure_corpus(output_dir: str, *, split: str, **corpus_args) -> records.Manifest:
  """The split's manifest, generating the corpus first if it is not there yet."""
  if tf.io.gfile.exists(records.manifest_path(output_dir, split)):
    return records.read_manifest(output_dir, split, kind=corpus_args.get("kind", "pairs"))
  logging.info("Generating the synthetic %s split in %s (first use).", split, output_dir)
  return write_corpus(output_dir, split=split, **corpus_args)


FLAGS = flags.FLAGS


def main(argv):
  del argv
  with cli.one_line_errors("input.synthetic"):  # OSError: an existing split, or the disk
    manifest = write_corpus(FLAGS.output_dir, split=FLAGS.split,
                            num_examples=FLAGS.num_examples, seconds=FLAGS.seconds,
                            sample_rate=FLAGS.sample_rate, seed=FLAGS.seed,
                            num_shards=FLAGS.num_shards, compression=FLAGS.compression,
                            processes=FLAGS.processes, overwrite=FLAGS.overwrite,
                            kind=FLAGS.kind)
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
  flags.DEFINE_integer("processes", 0, "Generator processes (0: one per CPU core).")
  flags.DEFINE_bool("overwrite", False, "Replace the split if --output_dir already holds it.")
  flags.DEFINE_enum("kind", "pairs", ["pairs", "clean", "noise"],
                    "What to store: noisy/clean pairs, or the same examples' clean speech "
                    "or noise alone (for training that mixes on the fly).")
  flags.DEFINE_enum("compression", "none", sorted(records.COMPRESSIONS),
                    "TFRecord compression (none is fastest to read; audio barely compresses).")
  flags.mark_flag_as_required("output_dir")
  app.run(main, flags_parser=cli.parse_flags)
