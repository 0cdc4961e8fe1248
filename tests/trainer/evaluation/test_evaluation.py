"""Tests for trainer.evaluation.evaluator on 2 replicas: exact weighted means, PESQ/STOI with and without the packages."""

import contextlib
import json
import os
import sys
from unittest import mock

import numpy as np
import tensorflow as tf

from input import audio
from input import decoders
from input import speech
from trainer.evaluation import evaluator as evaluator_lib
from trainer import losses
from trainer.evaluation import perceptual
from trainer.loop import periodic_eval
from tests import helpers

RATE = 8000
LENGTH = 2 * RATE


def eval_data(num_examples=6, batch=4):
  """Noisy/clean pairs, padded with one weight-0 example to full batches of `batch`."""
  rng = np.random.default_rng(0)
  clean = np.stack([0.3 * speech.utterance(np.random.default_rng(i), LENGTH, RATE)
                    for i in range(num_examples)])
  noisy = clean + 0.05 * rng.normal(size=clean.shape)
  padding = -num_examples % batch
  weight = np.concatenate([np.ones(num_examples), np.zeros(padding)])
  pad = lambda x: np.concatenate([x, np.zeros((padding, LENGTH))])  # pylint: disable=g-long-lambda
  data = dict(noisy=pad(noisy), clean=pad(clean), weight=weight)
  return {k: v.astype(np.float32) for k, v in data.items()}, noisy, clean


class EvaluationTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.strategy = helpers.mirrored()
    cls.data, cls.noisy, cls.clean = eval_data()
    cls.dataset = cls.strategy.experimental_distribute_dataset(
        tf.data.Dataset.from_tensor_slices(cls.data).batch(4))

  def evaluator(self, examples):
    return evaluator_lib.Evaluator(self.strategy, lambda x: x, losses.l1, self.dataset,
                                sample_rate=RATE, perceptual_examples=examples)

  def test_identity_model_scores_the_noisy_input_exactly(self):
    results, clips = self.evaluator(4).evaluate(clips=2)
    self.assertEqual(results["examples"], 6)  # the weight-0 padding is not counted
    self.assertAllClose(results["si_sdr_improvement"], 0.0, atol=1e-4)
    self.assertAllClose(results["pesq"], results["pesq_noisy"])
    self.assertAllClose(results["stoi"], results["stoi_noisy"])
    expected = np.mean([perceptual.pesq_wb(c, n, RATE)
                        for n, c in zip(self.noisy[:4], self.clean[:4])])
    self.assertAllClose(results["pesq"], expected, atol=1e-4)  # the first 4 examples
    self.assertLen(clips, 2)
    self.assertAllClose(clips[0][2], self.clean[0], atol=1e-6)

  def test_the_noisy_inputs_are_scored_once(self):
    evaluator = self.evaluator(4)
    with mock.patch.object(evaluator_lib.perceptual, "scores",
                           wraps=perceptual.scores) as scores:
      first, _ = evaluator.evaluate()
      self.assertEqual(scores.call_count, 8)  # 4 noisy + 4 enhanced
      second, _ = evaluator.evaluate()
      self.assertEqual(scores.call_count, 12)  # only the 4 enhanced again
    self.assertEqual(first["pesq_noisy"], second["pesq_noisy"])

  def test_pesq_at_48k_needs_no_tensorflow_io(self):
    # PESQ's resampling to 16 kHz once needed tensorflow-io, so eval failed at its first
    # PESQ (possibly hours in) where its ops could not load; soxr resamples everywhere.
    clean48, noisy48 = (audio.resample(x[0], RATE, 48000) for x in (self.clean, self.noisy))
    no_tfio = lambda decoder: (  # pylint: disable=g-long-lambda
        "NotFoundError: no ops" if decoder == decoders.TENSORFLOW_IO else None)
    with mock.patch.object(decoders, "problem", no_tfio):
      scores = perceptual.scores(clean48, noisy48, 48000)
    self.assertAllClose(scores["pesq"], perceptual.scores(self.clean[0], self.noisy[0],
                                                          RATE)["pesq"], atol=0.3)

  def test_periodic_eval_evaluates_inside_the_weight_swap_and_says_which(self):
    events = []

    @contextlib.contextmanager
    def swap():
      events.append("in")
      yield
      events.append("out")

    class Recorder:
      perceptual_missing = None

      def evaluate(self, clips):
        events.append("evaluate")
        return dict(loss=0.5, si_sdr=10.0, si_sdr_noisy=5.0, si_sdr_improvement=5.0,
                    examples=4.0), []

    out_dir = self.create_tempdir().full_path
    periodic_eval.PeriodicEval(Recorder(), out_dir=out_dir, sample_rate=RATE, clips=0,
                               weights=("ema", swap))(step=7)
    self.assertEqual(events, ["in", "evaluate", "out"])
    with open(os.path.join(out_dir, "eval_results.json")) as f:
      self.assertEqual(json.load(f)["weights"], "ema")

  def test_without_the_packages_eval_runs_and_says_what_is_missing(self):
    logged = []
    try:
      with mock.patch.dict(sys.modules, {"pesq": None, "pystoi": None}):
        perceptual.missing.cache_clear()
        evaluator = self.evaluator(4)
        periodic = periodic_eval.PeriodicEval(evaluator, out_dir=self.create_tempdir().full_path,
                                                sample_rate=RATE, clips=0)
        with mock.patch.object(periodic_eval.logging, "info",
                               lambda *args: logged.append(args[0] % args[1:])):
          results = periodic(step=3)
    finally:
      perceptual.missing.cache_clear()
    self.assertNotIn("pesq", results)
    self.assertIn("si_sdr", results)
    self.assertIn("no PESQ/STOI: pesq and pystoi not installed", logged[-1])


if __name__ == "__main__":
  tf.test.main()
