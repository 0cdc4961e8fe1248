"""Benchmark: speech quality on held-out speech in noise, each file at its own rate: noisy input vs spectral gating vs pretrained denoisers vs trained models.

The path a user takes: input.heldout's set (real 48 kHz, festival 16 and 32
kHz, espeak-ng 22.05 kHz speech the corpus generator never made) is mixed with
white/pink/brown/hum/babble/recorded noise at 0, 5 and 10 dB at the
utterance's own rate, and each method enhances the file at that rate: spectral
gating is `noisereduce` (its default non-stationary mode and its stationary
mode), the pretrained denoisers people run (bench.anchors: RNNoise and
DeepFilterNet3 at 48 kHz, soxr there and back, their delay removed, a fresh
state per mixture), each model an exported SavedModel run through `trainer.denoise`'s code
(resampled to the model's rate and back, the share of the input the export
keeps, the band extension), or a causal one through `trainer.stream`'s path
(soxr's streaming resamplers around the export's stream step). SI-SDR is scored at the file's rate, wide-band PESQ and
STOI at 16 kHz. Prints Markdown tables for
BENCHMARKS.md, by rate, noise, SNR and speech source.

Run (pip install -e '.[bench,metrics]' and the Debian voices in input/heldout.py):
  python -m bench.quality --saved_model=default=exported/default [--saved_model=name=dir ...]
      [--stream_model=name=dir ...]
"""

import argparse
import collections
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # pylint: disable=g-import-not-at-top

from bench import anchors  # pylint: disable=g-import-not-at-top
from bench import timing  # pylint: disable=g-import-not-at-top
from input import heldout  # pylint: disable=g-import-not-at-top
from trainer.evaluation import metrics  # pylint: disable=g-import-not-at-top
from trainer.evaluation import perceptual  # pylint: disable=g-import-not-at-top
from trainer.serving import file_denoising  # pylint: disable=g-import-not-at-top
from trainer.serving import pipe  # pylint: disable=g-import-not-at-top
from trainer.serving import saved_model  # pylint: disable=g-import-not-at-top
from trainer.serving import streamer  # pylint: disable=g-import-not-at-top

SNRS_DB = (0, 5, 10)
GAP_TO = "DeepFilterNet3"  # the strongest anchor: each model's gap to it is printed
STREAM_BLOCK = 4096  # samples fed to a stream at a time (its output does not depend on it)


def methods(saved_models, baselines: bool = True, stream_models=()):
  """name -> fn(noisy float32, its rate) -> enhanced at that rate, and notes on the anchors
  that are not installed."""
  out, notes = {"noisy": lambda x, rate: x}, []
  if baselines:
    import noisereduce  # pylint: disable=g-import-not-at-top
    out["noisereduce"] = lambda x, rate: noisereduce.reduce_noise(
        y=x, sr=rate).astype(np.float32)
    out["noisereduce-stationary"] = lambda x, rate: noisereduce.reduce_noise(
        y=x, sr=rate, stationary=True).astype(np.float32)
    installed, notes = anchors.available()
    out.update({name: anchor.enhance for name, anchor in installed.items()})
  for name, path in saved_models:
    module = saved_model.load_export(path)
    out[name] = lambda x, rate, m=module: file_denoising.denoise_signal(m, x, rate)
  for name, path in stream_models:
    module = saved_model.load_export(path)
    out[name] = lambda x, rate, m=module: streamed(m, x, rate)
  return out, notes


def streamed(module, signal: np.ndarray, rate: int) -> np.ndarray:
  """`signal` through `trainer.stream`'s path: soxr's streaming resamplers around the
  export's stream step, fed STREAM_BLOCK samples at a time."""
  through = pipe.Pipe(streamer.Streamer.from_saved_model(module), rate=rate,
                      model_rate=int(module.sample_rate.numpy()))
  blocks = [through.feed(signal[start:start + STREAM_BLOCK])
            for start in range(0, len(signal), STREAM_BLOCK)]
  return np.concatenate(blocks + [through.flush()])


def score(clean, estimate, rate: int):
  """SI-SDR at `rate`; PESQ-WB and STOI at 16 kHz (perceptual resamples)."""
  si_sdr = float(metrics.si_sdr(clean[None], estimate[None])[0])
  return dict(si_sdr=si_sdr, **perceptual.scores(clean, estimate, rate))


def run(saved_models, work_dir: str, baselines: bool = True, stream_models=(),
        split: heldout.Split = heldout.SPLITS["heldout"]):
  if perceptual.missing():
    raise SystemExit(f"bench.quality needs PESQ and STOI: {perceptual.missing()}")
  utterances, notes = heldout.speech(work_dir, split)
  if split.alsa and "recorded" not in heldout.available_noises(split):
    notes.append(f"no recorded noise ({heldout.INSTALL})")
  if not utterances:
    raise SystemExit(f"No {split.name} speech: {heldout.INSTALL}")
  enhancers, anchor_notes = methods(saved_models, baselines, stream_models)
  for note in notes + anchor_notes:
    print(f"note: {note}")
  rows = []  # (method, Group, scores)
  start = time.monotonic()
  mixes = list(heldout.mixtures(utterances, SNRS_DB, split))
  for count, (utterance, kind, snr_db, noisy, clean) in enumerate(mixes, 1):
    group = Group(rate=utterance.rate, noise=kind, snr=snr_db, speech=utterance.source)
    for name, enhance in enhancers.items():
      rows.append((name, group, score(clean, enhance(noisy, utterance.rate), utterance.rate)))
    if count % 20 == 0 or count == len(mixes):
      rate = count / (time.monotonic() - start)
      print(f"  {count}/{len(mixes)} mixtures, {rate:.2f}/s, ETA "
            f"{(len(mixes) - count) / rate:.0f} s", flush=True)
  return rows, utterances


Group = collections.namedtuple("Group", "rate noise snr speech")


def means(rows, keep):
  """method -> metric -> mean over the rows whose Group `keep` accepts."""
  sums = collections.defaultdict(lambda: collections.defaultdict(list))
  for name, group, scores in rows:
    if keep(group):
      for metric, value in scores.items():
        sums[name][metric].append(value)
  return {name: {m: float(np.nanmean(v)) for m, v in by.items()} for name, by in sums.items()}


def print_tables(rows, utterances, split: heldout.Split):
  names = list(dict.fromkeys(r[0] for r in rows))
  sources = collections.Counter(f"{u.source} {u.rate / 1000:g} kHz" for u in utterances)
  print(f"\n{split.name.capitalize()} set: {len(utterances)} utterances at their own rates "
        f"({dict(sources)}), noises {', '.join(heldout.available_noises(split))}, "
        f"SNR {SNRS_DB} dB, "
        f"{len(rows) // len(names)} mixtures; {timing.machine()}\n")
  overall = means(rows, lambda g: True)
  print("Average over every noise and SNR (SI-SDR at the file's rate, improvement = SI-SDR "
        "- noisy SI-SDR; PESQ-WB and STOI at 16 kHz):\n")
  base = overall["noisy"]["si_sdr"]
  print(timing.table(["method", "SI-SDR dB", "SI-SDRi dB", "PESQ-WB", "STOI"],
                     [[n, overall[n]["si_sdr"], overall[n]["si_sdr"] - base,
                       overall[n]["pesq"], overall[n]["stoi"]] for n in names]))
  for field, title in (("rate", "rate Hz"), ("noise", "noise"), ("snr", "SNR dB"),
                       ("speech", "speech")):
    values = sorted({getattr(r[1], field) for r in rows}, key=str)
    print(f"\nBy {title}: SI-SDRi dB / PESQ-WB / STOI\n")
    table_rows = []
    for value in values:
      by = means(rows, lambda g, f=field, v=value: getattr(g, f) == v)
      noisy = by["noisy"]["si_sdr"]
      table_rows.append([value] + [f"{by[n]['si_sdr'] - noisy:+.2f} / {by[n]['pesq']:.2f} / "
                                   f"{by[n]['stoi']:.3f}" for n in names])
    print(timing.table([title] + names, table_rows))
  if GAP_TO in names:
    print_gap(rows, [n for n in names if n not in ("noisy", GAP_TO)
                     and not n.startswith("noisereduce")])


def print_gap(rows, names):
  """Each of `names` minus GAP_TO, by metric, over everything, by rate and by noise."""
  print(f"\nGap to {GAP_TO} (method minus {GAP_TO}): SI-SDR dB / PESQ-WB / STOI\n")
  groups = [("all", lambda g: True)]
  for field in ("rate", "noise"):
    groups += [(f"{field} {v}", lambda g, f=field, v=v: getattr(g, f) == v)
               for v in sorted({getattr(r[1], field) for r in rows}, key=str)]
  table_rows = []
  for label, keep in groups:
    by = means(rows, keep)
    table_rows.append([label] + [" / ".join(
        f"{by[n][m] - by[GAP_TO][m]:+.{digits}f}"
        for m, digits in (("si_sdr", 2), ("pesq", 2), ("stoi", 3))) for n in names])
  print(timing.table(["set"] + names, table_rows))


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--saved_model", action="append", default=[],
                      help="name=dir of a trainer.export SavedModel (repeatable).")
  parser.add_argument("--stream_model", action="append", default=[],
                      help="name=dir of a causal mask model's export, scored through "
                      "trainer.stream's path (repeatable).")
  parser.add_argument("--work_dir", default="/tmp/denoise-heldout",
                      help="Where synthesized held-out utterances are cached.")
  parser.add_argument("--set", choices=sorted(heldout.SPLITS), default="heldout",
                      help="heldout reports; development decides a recipe (input.heldout).")
  parser.add_argument("--no_baselines", action="store_true",
                      help="Score only the noisy input and the models (no noisereduce, RNNoise "
                      "or DeepFilterNet3).")
  args = parser.parse_args()
  named = {}
  for flag in ("saved_model", "stream_model"):
    named[flag] = []
    for item in getattr(args, flag):
      name, _, path = item.partition("=")
      if not path or not os.path.isdir(path):
        parser.error(f"--{flag}={item}: expected name=<trainer.export directory>.")
      named[flag].append((name, path))
  split = heldout.SPLITS[args.set]
  rows, utterances = run(named["saved_model"], args.work_dir, not args.no_baselines,
                         named["stream_model"], split)
  print_tables(rows, utterances, split)


if __name__ == "__main__":
  main()
