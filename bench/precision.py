"""Benchmark: training step time in float32 vs mixed_bfloat16 for the project's denoisers on this CPU.

oneDNN may use AVX512-BF16/AMX for bf16 convolutions here; this reports, it
does not assert. Models: a small U-Net (hidden 16, depth 3, 1 s at 16 kHz; the
program's default before the spectral-mask model) and the a100.flags U-Net
(hidden 48, depth 5) on 1 s at 48 kHz.

Run: python -m bench.precision [--runs 5]
"""

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # pylint: disable=g-import-not-at-top
import tensorflow as tf  # pylint: disable=g-import-not-at-top

from bench import timing  # pylint: disable=g-import-not-at-top
from trainer.models import unet  # pylint: disable=g-import-not-at-top
from trainer import losses  # pylint: disable=g-import-not-at-top
from trainer import optim  # pylint: disable=g-import-not-at-top
from trainer import step as step_lib  # pylint: disable=g-import-not-at-top

MODELS = {  # name -> (model kwargs, sample rate, batch)
    "small U-Net (hidden 16, depth 3), 16 kHz": (dict(hidden=16, depth=3), 16000, 8),
    "a100 (hidden 48, depth 5), 48 kHz": (dict(hidden=48, depth=5, attention_heads=8),
                                          48000, 2),
}


def step_seconds(kwargs, sample_rate, batch, precision, *, runs, steps, jit):
  strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
  with strategy.scope():
    model = unet.UNet(sample_rate=sample_rate, **kwargs)
    optimizer = optim.AdamW(1e-4)
  train = step_lib.make_train_step(
      model, losses.DenoiseLoss(sample_rate), optimizer, strategy, global_batch_size=batch,
      precision=precision, steps_per_loop=steps, jit_compile=jit)
  rng = np.random.default_rng(0)
  clean = rng.normal(0, 0.1, [batch, sample_rate]).astype(np.float32)
  examples = {"noisy": clean + rng.normal(0, 0.05, clean.shape).astype(np.float32),
              "clean": clean}
  iterator = iter(strategy.distribute_datasets_from_function(
      lambda _: tf.data.Dataset.from_tensors(examples).repeat()))
  return timing.median_seconds(lambda: train(iterator)["loss"], runs=runs) / steps


def main():
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument("--runs", type=int, default=5)
  parser.add_argument("--steps", type=int, default=5)
  args = parser.parse_args()
  rows = []
  for name, (kwargs, rate, batch) in MODELS.items():
    for jit in (False, True):
      times = {p: step_seconds(kwargs, rate, batch, p, runs=args.runs, steps=args.steps,
                               jit=jit) for p in ("float32", "mixed_bfloat16")}
      rows.append((name, batch, "on" if jit else "off", times["float32"] * 1e3,
                   times["mixed_bfloat16"] * 1e3,
                   times["float32"] / times["mixed_bfloat16"]))
  print(f"Training step time, 1 s examples, one CPU device, medians of {args.runs} runs of "
        f"{args.steps} steps; {timing.machine()}")
  print(timing.table(["model", "batch", "XLA", "float32 ms", "bf16 ms", "bf16 speed-up"],
                     rows))


if __name__ == "__main__":
  main()
