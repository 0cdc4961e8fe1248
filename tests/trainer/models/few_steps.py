"""A few real training steps of a tiny model of each architecture: what the CPU-backend tests compare.

`python -m tests.trainer.models.few_steps OUT.npz` trains both architectures
on two logical CPUs in a fresh process (so its TF_ENABLE_ONEDNN_OPTS decides
the backend) and saves the weights, the losses and whether oneDNN was on.
"""

import sys

import numpy as np
import tensorflow as tf
from tensorflow.python.util import _pywrap_util_port  # pylint: disable=g-direct-tensorflow-import

import ops
from trainer import optim
from trainer import step as step_lib
from trainer import losses
from trainer.models import card as card_lib
from trainer.models import contract
from trainer.program import strategy as strategy_lib

ARCHITECTURES = ("mask", "unet")
RATE, SAMPLES, BATCH, STEPS = 8000, 4000, 4, 3


def onednn_enabled() -> bool:
  """Whether this process's TensorFlow runs its oneDNN CPU kernels."""
  return bool(_pywrap_util_port.IsMklEnabled())


def examples(num=BATCH * STEPS, seed=0):
  """Noisy/clean pairs: decaying tone bursts in white noise."""
  rng = np.random.default_rng(seed)
  t = np.arange(SAMPLES) / RATE
  tones = np.sin(2 * np.pi * rng.uniform(200, 1500, [num, 1]) * t) * np.exp(-3 * t)
  clean = (0.3 * tones).astype(np.float32)
  return {"noisy": clean + rng.normal(0, 0.05, clean.shape).astype(np.float32),
          "clean": clean}


def train(architecture: str, strategy: tf.distribute.Strategy, *, precision="float32",
          jit_compile=False):
  """`(weights, losses)` after STEPS steps of a tiny `architecture` model with the default
  run's loss terms, remix and reverb (dilations 1, 2, 4 in the mask model)."""
  card = card_lib.ModelCard.create(architecture, sample_rate=RATE, hidden=8, depth=3,
                                   **({"attention_heads": 2} if architecture == "unet" else {}))
  with strategy.scope():
    model = card.build()
    optimizer = optim.AdamW(1e-3, weight_decay=0.01)
  loss_fn = losses.DenoiseLoss(RATE, stft_weight=0.1, waveform_loss="si_sdr",
                               intelligibility_weight=20.0, suppression_weight=10.0)
  train_step = step_lib.make_train_step(
      model, loss_fn, optimizer, strategy, global_batch_size=BATCH, precision=precision,
      augment=ops.chain(ops.Remix(proba=0.5), ops.RevEcho(sample_rate=RATE, proba=0.5)),
      steps_per_loop=1, jit_compile=jit_compile)
  dataset_fn = lambda context: tf.data.Dataset.from_tensor_slices(examples()).batch(  # pylint: disable=g-long-lambda
      context.get_per_replica_batch_size(BATCH), drop_remainder=True)
  iterator = iter(strategy.distribute_datasets_from_function(dataset_fn))
  step_losses = [float(train_step(iterator)["loss"]) for _ in range(STEPS)]
  return [v.numpy() for v in contract.tf_variables(model)], step_losses


def main(argv):
  strategy = strategy_lib.make("mirrored", cpu_replicas=2)  # as the suite's two logical CPUs
  saved = {"onednn": onednn_enabled()}
  for architecture in ARCHITECTURES:
    weights, step_losses = train(architecture, strategy)
    saved[f"{architecture}/losses"] = step_losses
    saved.update({f"{architecture}/{i}": w for i, w in enumerate(weights)})
  np.savez(argv[1], **saved)


if __name__ == "__main__":
  main(sys.argv)
