"""TensorBoard summaries: training scalars per chunk, and eval scalars with audio clips and spectrograms."""

from typing import Dict

import numpy as np
import tensorflow as tf

from common import files
from ops import spectral
from trainer.loop import actions


def file_writer(directory: str):
  """A TensorBoard writer for `directory`.

  Raises:
    OSError: the directory cannot be written (read-only, full), naming it.
  """
  try:
    return tf.summary.create_file_writer(directory)
  except tf.errors.OpError as e:
    raise OSError(f"Cannot write TensorBoard summaries to {directory} ({files.reason(e)}): "
                  "the run writes them into its model_dir; make it writable.") from None


class TrainSummaries:
  """Loss, gradient norm, schedule, loss scale, throughput and per-replica values to TensorBoard."""

  def __init__(self, writer):
    self._writer = writer

  def __call__(self, chunk: actions.Chunk):
    metrics = chunk.metrics
    with self._writer.as_default(step=chunk.after):
      for key in ("loss", "grad_norm", "learning_rate", "loss_scale", "skipped_steps"):
        tf.summary.scalar(key, float(metrics[key]))
      tf.summary.scalar("examples_per_second", chunk.examples_per_second)
      tf.summary.scalar("audio_seconds_per_second", chunk.audio_seconds_per_second)
      replica_loss = metrics["replica_loss_sum"] / np.maximum(metrics["replica_examples"], 1)
      for i, (loss, norm) in enumerate(zip(replica_loss, metrics["replica_grad_norm"])):
        tf.summary.scalar(f"replica_{i}/loss", float(loss))
        tf.summary.scalar(f"replica_{i}/grad_norm", float(norm))
        tf.summary.scalar(f"replica_{i}/nonfinite_steps",
                          float(metrics["replica_nonfinite"][i]))


def write_eval(writer, step: int, results: Dict[str, float], clips, sample_rate: int):
  """Eval scalars, audio clips and log-spectrogram images to TensorBoard."""
  with writer.as_default(step=step):
    for key, value in results.items():
      tf.summary.scalar(f"eval/{key}", value)
    for i, (noisy, enhanced, clean) in enumerate(clips):
      for name, audio in (("noisy", noisy), ("enhanced", enhanced), ("clean", clean)):
        tf.summary.audio(f"clip_{i}/{name}", np.clip(audio, -1, 1)[None, :, None],
                         sample_rate, max_outputs=1)
        tf.summary.image(f"clip_{i}/{name}_spectrogram", spectrogram_image(audio, sample_rate))
  writer.flush()


def spectrogram_image(audio: np.ndarray, sample_rate: int) -> tf.Tensor:
  """`[1, freq, time, 1]` log-magnitude spectrogram in [0, 1], low frequencies at the bottom."""
  window = max(16, int(0.032 * sample_rate))
  magnitude = spectral.stft_magnitude(tf.constant(audio[None], tf.float32), window, window // 4)
  db = 20.0 * tf.math.log(magnitude[0] + 1e-5) / tf.math.log(10.0)
  db = tf.clip_by_value(db - tf.reduce_max(db), -80.0, 0.0)
  image = tf.reverse(tf.transpose((db + 80.0) / 80.0), axis=[0])
  return image[None, :, :, None]
