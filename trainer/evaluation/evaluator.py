"""Distributed evaluation: exact weighted loss, SI-SDR and its improvement, PESQ and STOI, plus clips for TensorBoard."""

import os
from typing import Callable, Dict

from absl import logging
import numpy as np
import tensorflow as tf

from common import files

from trainer.evaluation import losses
from trainer.evaluation import metrics
from trainer.evaluation import perceptual


class Evaluator:
  """One pass over a distributed eval dataset (`{noisy, clean, weight}` batches).

  SI-SDR and the loss are exact weighted means over every example. PESQ and
  STOI (host-side, optional packages) cover the first `perceptual_examples`
  examples this worker sees, for the noisy input and the enhanced output.
  """

  def __init__(self, strategy: tf.distribute.Strategy, model, loss_fn: Callable,
               dataset: tf.distribute.DistributedDataset, *, sample_rate: int,
               precision_dtype=tf.float32, perceptual_examples: int = 0):
    self._strategy, self._model, self._loss_fn = strategy, model, loss_fn
    self._dataset, self._dtype = dataset, precision_dtype
    self._sample_rate = sample_rate
    self._perceptual_examples = perceptual_examples if perceptual.missing() is None else 0
    self._noisy_scores = None  # the eval set never changes: its inputs are scored once
    self._step = tf.function(self._distributed_step)

  def _replica_step(self, batch):
    noisy, clean, weight = batch["noisy"], batch["clean"], batch["weight"]
    enhanced = tf.cast(self._model(tf.cast(noisy, self._dtype)), tf.float32)
    before = metrics.si_sdr(clean, noisy)
    after = metrics.si_sdr(clean, enhanced)
    sums = dict(loss=self._loss_fn(clean, enhanced) * weight, si_sdr=after * weight,
                si_sdr_noisy=before * weight, si_sdr_improvement=(after - before) * weight)
    sums = {k: tf.reduce_sum(v) for k, v in sums.items()}
    sums["examples"] = tf.reduce_sum(weight)
    return sums, enhanced

  def _distributed_step(self, batch):
    sums, enhanced = self._strategy.run(self._replica_step, args=(batch,))
    reduced = {k: self._strategy.reduce(tf.distribute.ReduceOp.SUM, v, axis=None)
               for k, v in sums.items()}
    return reduced, enhanced

  def evaluate(self, *, clips: int = 0):
    """Returns `(metrics, clips)`: the metrics over the eval split, and up to `clips`
    (noisy, enhanced, clean) float32 arrays from the first batch."""
    totals, examples, kept = {}, None, []
    for batch in self._dataset:
      sums, enhanced = self._step(batch)
      for key, value in sums.items():
        totals[key] = totals.get(key, 0.0) + float(value)
      if (clips and examples is None) or len(kept) < self._perceptual_examples:
        host = self._host_examples(batch, enhanced)
        examples = host[:clips] if examples is None else examples
        kept += host[:self._perceptual_examples - len(kept)]
    if not totals or totals["examples"] == 0:
      raise ValueError("The eval split delivered no examples.")
    count = totals.pop("examples")
    results = {k: v / count for k, v in totals.items()}
    results["examples"] = count
    if kept:
      if self._noisy_scores is None:
        self._noisy_scores = {f"{k}_noisy": v for k, v in perceptual_means(
            [(c, n) for n, _, c in kept], self._sample_rate).items()}
      results.update(self._noisy_scores)
      results.update(perceptual_means([(c, e) for _, e, c in kept], self._sample_rate))
    return results, examples or []

  def _host_examples(self, batch, enhanced):
    """This worker's real (weight > 0) examples as (noisy, enhanced, clean) NumPy arrays."""
    local = lambda t: np.concatenate(  # pylint: disable=g-long-lambda
        [x.numpy() for x in self._strategy.experimental_local_results(t)])
    noisy, clean, weight = local(batch["noisy"]), local(batch["clean"]), local(batch["weight"])
    return [(n, e, c) for n, e, c, w in zip(noisy, local(enhanced), clean, weight) if w > 0]


def perceptual_means(pairs, sample_rate: int) -> Dict[str, float]:
  """Mean PESQ and STOI over `(reference, estimate)` pairs (pairs PESQ finds no speech in are
  left out)."""
  rows = [perceptual.scores(reference, estimate, sample_rate) for reference, estimate in pairs]
  return {key: float(np.nanmean([row[key] for row in rows])) for key in rows[0]}


class PeriodicEval:
  """`evaluate(step)` for the training loop: runs the Evaluator, writes TensorBoard
  summaries, `out_dir/eval_results.json` and a log line; remembers `last_step`."""

  def __init__(self, evaluator: Evaluator, *, out_dir: str, sample_rate: int, clips: int):
    self._evaluator, self._out_dir = evaluator, out_dir
    self._sample_rate, self._clips = sample_rate, clips
    self._writer = tf.summary.create_file_writer(os.path.join(out_dir, "eval"))
    self.last_step = None

  def __call__(self, step: int) -> Dict[str, float]:
    results, clips = self._evaluator.evaluate(clips=self._clips)
    write_summaries(self._writer, step, results, clips, self._sample_rate)
    files.write_json(os.path.join(self._out_dir, "eval_results.json"),
                     dict({k: float(v) for k, v in results.items()}, step=step))
    logging.info("eval at step %d: loss %.4f, SI-SDR %.2f dB (noisy %.2f dB), improvement "
                 "%.2f dB over %d examples%s", step, results["loss"], results["si_sdr"],
                 results["si_sdr_noisy"], results["si_sdr_improvement"], results["examples"],
                 _perceptual_text(results))
    self.last_step = step
    return results


def _perceptual_text(results: Dict[str, float]) -> str:
  if "pesq" not in results:
    return f"; no PESQ/STOI: {perceptual.missing()}" if perceptual.missing() else ""
  return (f"; PESQ {results['pesq']:.2f} (noisy {results['pesq_noisy']:.2f}), STOI "
          f"{results['stoi']:.3f} (noisy {results['stoi_noisy']:.3f})")


def write_summaries(writer, step: int, results: Dict[str, float], clips, sample_rate: int):
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
  magnitude = losses.stft_magnitude(tf.constant(audio[None], tf.float32), window, window // 4)
  db = 20.0 * tf.math.log(magnitude[0] + 1e-5) / tf.math.log(10.0)
  db = tf.clip_by_value(db - tf.reduce_max(db), -80.0, 0.0)
  image = tf.reverse(tf.transpose((db + 80.0) / 80.0), axis=[0])
  return image[None, :, :, None]
