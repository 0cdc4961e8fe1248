"""The periodic eval action: evaluate, then TensorBoard summaries, eval_results.json and a log line."""

import contextlib
import os
from typing import Callable, Dict, Optional, Tuple

from absl import logging

from common import files
from trainer.evaluation import evaluator as evaluator_lib
from trainer.loop import summaries

RESULTS_FILE = "eval_results.json"


class PeriodicEval:
  """`evaluate(step)` for the training loop: runs the Evaluator, writes TensorBoard
  summaries, `out_dir/eval_results.json` and a log line; remembers `last_step`.

  `weights`: `(name, swap)`, where `swap()` is a context manager in which the model
  holds the weights to evaluate (e.g. `("ema", lambda: ema.swapped(variables))`).
  """

  def __init__(self, evaluator: evaluator_lib.Evaluator, *, out_dir: str, sample_rate: int,
               clips: int, weights: Tuple[str, Optional[Callable]] = ("raw", None)):
    self._evaluator, self._out_dir = evaluator, out_dir
    self._weights, self._swap = weights[0], weights[1] or contextlib.nullcontext
    self._sample_rate, self._clips = sample_rate, clips
    self._writer = summaries.file_writer(os.path.join(out_dir, "eval"))
    self.last_step = None

  def __call__(self, step: int) -> Dict[str, float]:
    with self._swap():
      results, clips = self._evaluator.evaluate(clips=self._clips)
    summaries.write_eval(self._writer, step, results, clips, self._sample_rate)
    files.write_json(os.path.join(self._out_dir, RESULTS_FILE),
                     dict({k: float(v) for k, v in results.items()}, step=step,
                          weights=self._weights))
    logging.info("eval at step %d (%s weights): loss %.4f, SI-SDR %.2f dB (noisy %.2f dB), "
                 "improvement %.2f dB over %d examples%s", step, self._weights,
                 results["loss"], results["si_sdr"], results["si_sdr_noisy"],
                 results["si_sdr_improvement"], results["examples"],
                 _perceptual_text(results, self._evaluator.perceptual_missing))
    self.last_step = step
    return results


def _perceptual_text(results: Dict[str, float], missing: Optional[str]) -> str:
  if "pesq" not in results:
    return f"; no PESQ/STOI: {missing}" if missing else ""
  return (f"; PESQ {results['pesq']:.2f} (noisy {results['pesq_noisy']:.2f}), STOI "
          f"{results['stoi']:.3f} (noisy {results['stoi_noisy']:.3f})")
