"""Benchmark: a dilated convolution stack forward and backward, three ways, on this CPU's backend.

The default mask model's stack (6 GLU blocks of kernel 3, dilations 1..32, 128
channels, 1 s at 16 kHz = 126 frames, batch 16), each block's dilated conv
computed as:
  space2batch  tf.nn.convolution, by space-to-batch (trainer.models.layers, Keras 3)
  native       tf.nn.conv1d(dilations=...) (its gradient needs oneDNN or XLA)
  taps         one matmul over the k dilated taps (slices, concat, matmul)
each eager-graph (tf.function) and XLA-compiled. Run it once per backend:
  TF_ENABLE_ONEDNN_OPTS=0 python -m bench.dilated_conv
  TF_ENABLE_ONEDNN_OPTS=1 python -m bench.dilated_conv
"""

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # pylint: disable=g-import-not-at-top

from bench import timing  # pylint: disable=g-import-not-at-top
from trainer.models import layers  # pylint: disable=g-import-not-at-top

BATCH, FRAMES, CHANNELS, KERNEL, DEPTH = 16, 126, 128, 3, 6


def dilated(how: str):
  """`conv(x, kernel, dilation)` with "SAME" padding, computed `how`."""

  def conv(x, kernel, dilation):
    if how == "native":
      return tf.nn.conv1d(x, kernel, 1, "SAME", dilations=dilation)
    if how == "space2batch":
      return tf.nn.convolution(x, kernel, padding="SAME", dilations=dilation)
    span = (KERNEL - 1) * dilation
    x = tf.pad(x, [[0, 0], [span // 2, span - span // 2], [0, 0]])
    frames = tf.shape(x)[1] - span
    taps = tf.concat([x[:, i * dilation:i * dilation + frames] for i in range(KERNEL)], -1)
    return tf.einsum("btk,ko->bto", taps, tf.reshape(kernel, [-1, kernel.shape[-1]]))

  return conv


def stack_step(how: str, jit: bool):
  """A compiled forward + backward of the stack; returns `(step, args)`."""
  conv = dilated(how)
  kernels = [tf.Variable(tf.random.stateless_normal([KERNEL, CHANNELS, 2 * CHANNELS], [0, i])
                         * 0.05) for i in range(DEPTH)]
  x = tf.random.stateless_normal([BATCH, FRAMES, CHANNELS], [1, 0])

  @tf.function(jit_compile=jit)
  def step(x):
    with tf.GradientTape() as tape:
      y = x
      for i, kernel in enumerate(kernels):
        y = y + layers.glu(conv(y, kernel, 2**i))
      loss = tf.reduce_mean(tf.square(y))
    return tape.gradient(loss, kernels)

  return step, x


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--runs", type=int, default=20)
  args = parser.parse_args()
  rows = []
  for how in ("space2batch", "native", "taps"):
    for jit in (False, True):
      step, x = stack_step(how, jit)
      try:
        ms = 1e3 * timing.median_seconds(lambda: step(x), runs=args.runs, warmup=2)  # pylint: disable=cell-var-from-loop
        rows.append([how, "XLA" if jit else "graph", f"{ms:.2f}"])
      except (tf.errors.InvalidArgumentError, tf.errors.UnimplementedError) as e:
        why = "no gradient for dilation > 1" if "dilation" in e.message else type(e).__name__
        rows.append([how, "XLA" if jit else "graph", f"fails: {why}"])
  print(f"Dilated stack ({DEPTH} blocks, {CHANNELS} ch, kernel {KERNEL}, {BATCH}x{FRAMES} "
        f"frames) forward+backward, median of {args.runs}; {timing.machine()}")
  print(timing.table(["conv", "compiled", "ms per step"], rows))


if __name__ == "__main__":
  main()
