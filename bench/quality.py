"""Benchmark: speech quality on held-out speech in noise - noisy input vs spectral gating vs trained models.

Scores SI-SDR, wide-band PESQ and STOI at 16 kHz on bench.heldout's set
(real, festival and espeak-ng speech the corpus generator never made, in
white/pink/brown/hum/babble/recorded noise at 0, 5 and 10 dB). Spectral
gating is `noisereduce` (its default non-stationary mode and its stationary
mode); each model is an exported SavedModel run through the same code as
`python -m trainer.denoise`. Prints Markdown tables for BENCHMARKS.md.

Run (pip install -e '.[bench,metrics]' and the Debian voices in bench/heldout.py):
  python -m bench.quality --saved_model=default=exported/default [--saved_model=name=dir ...]
"""

import argparse
import collections
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # pylint: disable=g-import-not-at-top

from bench import heldout  # pylint: disable=g-import-not-at-top
from bench import timing  # pylint: disable=g-import-not-at-top
from trainer import denoise  # pylint: disable=g-import-not-at-top
from trainer.evaluation import metrics  # pylint: disable=g-import-not-at-top
from trainer.evaluation import perceptual  # pylint: disable=g-import-not-at-top

RATE = 16000  # wide-band PESQ's rate
SNRS_DB = (0, 5, 10)
TARGET_NOISES = ("white", "pink", "brown", "hum", "babble")  # the average


def methods(saved_models, baselines: bool = True):
  """name -> fn(noisy float32 at RATE) -> enhanced."""
  out = {"noisy": lambda x: x}
  if baselines:
    import noisereduce  # pylint: disable=g-import-not-at-top
    out["noisereduce"] = lambda x: noisereduce.reduce_noise(y=x, sr=RATE).astype(np.float32)
    out["noisereduce-stationary"] = lambda x: noisereduce.reduce_noise(
        y=x, sr=RATE, stationary=True).astype(np.float32)
  for name, path in saved_models:
    module = denoise.load(path)
    out[name] = lambda x, m=module: denoise.denoise_signal(m, x, RATE)
  return out


def score(clean, estimate):
  si_sdr = float(metrics.si_sdr(clean[None], estimate[None])[0])
  return dict(si_sdr=si_sdr, **perceptual.scores(clean, estimate, RATE))


def run(saved_models, work_dir: str, baselines: bool = True):
  if perceptual.missing():
    raise SystemExit(f"bench.quality needs PESQ and STOI: {perceptual.missing()}")
  utterances, notes = heldout.speech(RATE, work_dir)
  if "recorded" not in heldout.available_noises():
    notes.append(f"no recorded noise ({heldout.INSTALL})")
  for note in notes:
    print(f"note: {note}")
  if not utterances:
    raise SystemExit(f"No held-out speech: {heldout.INSTALL}")
  enhancers = methods(saved_models, baselines)
  rows = []  # (method, source, noise, snr, scores)
  start = time.monotonic()
  mixes = list(heldout.mixtures(utterances, SNRS_DB, RATE))
  for count, (utterance, kind, snr_db, noisy, clean) in enumerate(mixes, 1):
    for name, enhance in enhancers.items():
      rows.append((name, utterance.source, kind, snr_db, score(clean, enhance(noisy))))
    if count % 20 == 0 or count == len(mixes):
      rate = count / (time.monotonic() - start)
      print(f"  {count}/{len(mixes)} mixtures, {rate:.2f}/s, ETA "
            f"{(len(mixes) - count) / rate:.0f} s", flush=True)
  return rows, utterances


def means(rows, keep):
  """method -> metric -> mean over the rows `keep(source, noise, snr)` accepts."""
  sums = collections.defaultdict(lambda: collections.defaultdict(list))
  for name, source, kind, snr_db, scores in rows:
    if keep(source, kind, snr_db):
      for metric, value in scores.items():
        sums[name][metric].append(value)
  return {name: {m: float(np.nanmean(v)) for m, v in by.items()} for name, by in sums.items()}


def print_tables(rows, utterances):
  names = list(dict.fromkeys(r[0] for r in rows))
  sources = collections.Counter(u.source for u in utterances)
  print(f"\nHeld-out set: {len(utterances)} utterances ({dict(sources)}), noises "
        f"{', '.join(heldout.available_noises())}, SNR {SNRS_DB} dB, "
        f"{len(rows) // len(names)} mixtures; "
        f"{timing.machine()}\n")
  target = means(rows, lambda s, k, d: k in TARGET_NOISES)
  print("Average over white/pink/brown/hum/babble at 0-10 dB "
        "(SI-SDR improvement = SI-SDR - noisy SI-SDR):\n")
  base = target["noisy"]["si_sdr"]
  print(timing.table(["method", "SI-SDR dB", "SI-SDRi dB", "PESQ-WB", "STOI"],
                     [[n, target[n]["si_sdr"], target[n]["si_sdr"] - base, target[n]["pesq"],
                       target[n]["stoi"]] for n in names]))
  for title, groups, keep in (
      ("noise", heldout.available_noises(), lambda g: lambda s, k, d: k == g),
      ("SNR dB", SNRS_DB, lambda g: lambda s, k, d: d == g and k in TARGET_NOISES),
      ("speech", sorted(sources), lambda g: lambda s, k, d: s == g and k in TARGET_NOISES)):
    print(f"\nBy {title}: SI-SDR dB / PESQ-WB / STOI\n")
    table_rows = []
    for group in groups:
      by = means(rows, keep(group))
      table_rows.append([group] + [f"{by[n]['si_sdr']:.2f} / {by[n]['pesq']:.2f} / "
                                   f"{by[n]['stoi']:.3f}" for n in names])
    print(timing.table([title] + names, table_rows))


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--saved_model", action="append", default=[],
                      help="name=dir of a trainer.export SavedModel (repeatable).")
  parser.add_argument("--work_dir", default="/tmp/denoise-heldout",
                      help="Where synthesized held-out utterances are cached.")
  parser.add_argument("--no_baselines", action="store_true",
                      help="Score only the noisy input and the models (no noisereduce).")
  args = parser.parse_args()
  saved_models = []
  for item in args.saved_model:
    name, _, path = item.partition("=")
    if not path or not os.path.isdir(path):
      parser.error(f"--saved_model={item}: expected name=<trainer.export directory>.")
    saved_models.append((name, path))
  rows, utterances = run(saved_models, args.work_dir, not args.no_baselines)
  print_tables(rows, utterances)


if __name__ == "__main__":
  main()
