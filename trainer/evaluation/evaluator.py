"""Distributed evaluation: exact weighted loss, SI-SDR and its improvement, PESQ and STOI, plus clips for TensorBoard."""

from typing import Callable, Dict

from absl import logging
import numpy as np
import tensorflow as tf

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
    # Known before the first eval (possibly hours in): what keeps PESQ/STOI from being scored.
    self.perceptual_missing = perceptual.missing() if perceptual_examples else None
    if self.perceptual_missing:
      logging.warning("Eval will not report PESQ/STOI: %s", self.perceptual_missing)
    self._perceptual_examples = 0 if self.perceptual_missing else perceptual_examples
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
