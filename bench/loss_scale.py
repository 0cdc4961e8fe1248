"""Benchmark: what a loss scale does to bf16 gradients, beside float32 ones, for the default model and the a100.flags U-Net.

The step's arithmetic on one batch (synthetic speech in white noise, the
recipe's objective): the model computes in bfloat16 (variables float32), the
loss is multiplied by the scale, the gradients divided by it, as
`trainer.step` does. Reports, against the float32 gradients of the same
weights and batch: the relative L2 error of each, how many elements are zero
in bf16 but not in float32 (underflow), and how many differ between scale 1
and 2^15 once unscaled. Extra arguments are trainer.main flags.
  python -m bench.loss_scale
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import flags  # pylint: disable=g-import-not-at-top
import numpy as np  # pylint: disable=g-import-not-at-top
import tensorflow as tf  # pylint: disable=g-import-not-at-top

from bench import timing  # pylint: disable=g-import-not-at-top
from input import speech  # pylint: disable=g-import-not-at-top
from trainer.program.config import configs as configs_lib  # pylint: disable=g-import-not-at-top
from trainer.models import contract  # pylint: disable=g-import-not-at-top
from trainer.program import flagfiles  # pylint: disable=g-import-not-at-top

SETUPS = {"default (mask, 16 kHz)": [], "a100.flags U-Net (48 kHz)": ["--flagfile=a100.flags"]}
SCALES = (1.0, 2.0**15)
SECONDS, BATCH = 0.5, 4


def batch(sample_rate: int):
  """`(noisy, clean)`: synthetic speech at about 5 dB SNR in white noise."""
  rng = np.random.default_rng(0)
  length = int(SECONDS * sample_rate)
  clean = np.stack([0.3 * speech.utterance(rng, length, sample_rate) for _ in range(BATCH)])
  noise = 0.1 * rng.standard_normal(clean.shape)
  return tf.constant(clean + noise, tf.float32), tf.constant(clean, tf.float32)


def gradients(model, loss_fn, noisy, clean, dtype, scale):
  """The step's gradients of the batch's mean loss, computed in `dtype` with `scale`."""
  variables = contract.tf_variables(model)
  with tf.GradientTape() as tape:
    prediction = tf.cast(model(tf.cast(noisy, dtype)), tf.float32)
    loss = tf.reduce_mean(loss_fn(clean, prediction)) * scale
  return [g / scale for g in tape.gradient(loss, variables)]


def compare(reference, grads):
  flat = lambda gs: np.concatenate([np.ravel(g) for g in gs])  # pylint: disable=g-long-lambda
  ref, got = flat(reference), flat(grads)
  return (float(np.linalg.norm(got - ref) / np.linalg.norm(ref)),
          int(np.sum((got == 0) & (ref != 0))), got)


def main(argv):
  rows = []
  for name, setup in SETUPS.items():
    flags.FLAGS.unparse_flags()
    flags.FLAGS(flagfiles.resolve([argv[0], *setup, *argv[1:]]))
    configs = configs_lib.Configs.from_flags()
    card = configs.model.model_card(sample_rate=configs.data.sample_rate, seed=0)
    model = card.build()
    loss_fn = configs.model.loss(card.sample_rate)
    noisy, clean = batch(card.sample_rate)
    reference = [g.numpy() for g in gradients(model, loss_fn, noisy, clean, tf.float32, 1.0)]
    results = [compare(reference, [g.numpy() for g in gradients(
        model, loss_fn, noisy, clean, tf.bfloat16, scale)]) for scale in SCALES]
    differ = int(np.sum(results[0][2] != results[1][2]))
    for scale, (error, underflow, _) in zip(SCALES, results):
      rows.append([name, f"{scale:g}", f"{error:.4f}", f"{underflow} of {results[0][2].size}",
                   f"{differ}" if scale != 1.0 else "-"])
  print(f"bf16 gradients vs float32 ({BATCH} x {SECONDS:g} s of synthetic speech in white "
        f"noise, untrained weights); {timing.machine()}")
  print(timing.table(["model", "loss scale", "relative L2 error vs float32",
                      "zero in bf16, not in float32", "elements that differ from scale 1"],
                     rows))


if __name__ == "__main__":
  main(sys.argv)
