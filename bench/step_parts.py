"""Benchmark: where the default recipe's training step spends its time on this CPU.

Builds the step exactly as `python -m trainer.main` does (the program's own
flags and builder, one device), feeds it one cached batch (so the input is
not timed: `--mode=diagnose` times the input), and times it with parts taken
away one at a time: the intelligibility term, the STFT and over-suppression
terms, remix and reverb; then the model alone (-SI-SDR only, no
augmentation) and its forward pass. Extra arguments are trainer.main flags:
  TF_ENABLE_ONEDNN_OPTS=0 python -m bench.step_parts
  TF_ENABLE_ONEDNN_OPTS=1 python -m bench.step_parts --jit_compile=on
"""

import dataclasses
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import flags  # pylint: disable=g-import-not-at-top
import numpy as np  # pylint: disable=g-import-not-at-top
import tensorflow as tf  # pylint: disable=g-import-not-at-top

from bench import timing  # pylint: disable=g-import-not-at-top
from trainer.program.config import configs as configs_lib  # pylint: disable=g-import-not-at-top
from trainer.program import build_step  # pylint: disable=g-import-not-at-top

RUNS = 5


def variants(configs):
  """`(name, configs)` pairs: the default recipe, then with one part taken away each."""
  model, data = configs.model, configs.data
  no_terms = dict(intelligibility_weight=0.0, stft_weight=0.0, suppression_weight=0.0)
  plain = dict(remix_proba=0.0, reverb="off")
  rows = [("default recipe", {}, {}),
          ("- intelligibility term", dict(intelligibility_weight=0.0), {}),
          ("- STFT and over-suppression terms", dict(stft_weight=0.0, suppression_weight=0.0),
           {}),
          ("- remix and reverb", {}, plain),
          ("model and -SI-SDR only", no_terms, plain)]
  for name, model_changes, data_changes in rows:
    yield name, dataclasses.replace(configs, model=dataclasses.replace(model, **model_changes),
                                    data=dataclasses.replace(data, **data_changes))


def main(argv):
  flags.FLAGS(argv)
  configs = configs_lib.Configs.from_flags()
  run = configs.run
  strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
  samples = int(configs.data.crop_seconds * configs.data.sample_rate)
  rng = np.random.default_rng(0)
  clean = (0.1 * rng.standard_normal([run.global_batch_size, samples])).astype(np.float32)
  batch = {"clean": clean, "noisy": clean + 0.05 * rng.standard_normal(clean.shape).astype(
      np.float32)}
  dataset = tf.data.Dataset.from_tensors(batch).repeat()
  rows, card = [], configs.model.model_card(sample_rate=configs.data.sample_rate, seed=run.seed)
  for name, changed in variants(configs):
    train_step, _, _ = build_step.train_step(changed, strategy, card)
    iterator = iter(strategy.experimental_distribute_dataset(dataset))
    seconds = timing.median_seconds(lambda: train_step(iterator), runs=RUNS)  # pylint: disable=cell-var-from-loop
    rows.append([name, 1e3 * seconds / run.steps_per_loop])
  model = card.build()
  forward = tf.function(model, jit_compile=run.jit_compile == "on")
  rows.append(["model forward only", 1e3 * timing.median_seconds(
      lambda: forward(tf.constant(batch["noisy"])), runs=RUNS * run.steps_per_loop)])
  print(f"Default recipe's step ({card.architecture}, batch {run.global_batch_size} x "
        f"{configs.data.crop_seconds:g} s at {configs.data.sample_rate} Hz, jit_compile="
        f"{run.jit_compile}), median of {RUNS} calls of {run.steps_per_loop} steps; "
        f"{timing.machine()}")
  print(timing.table(["step", "ms per step"], [[n, f"{ms:.0f}"] for n, ms in rows]))


if __name__ == "__main__":
  main(sys.argv)
