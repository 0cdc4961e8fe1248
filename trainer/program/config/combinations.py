"""The rules between flags of different concerns, checked together before the program does any work."""

from common import checks
from trainer.program.config import data as data_config
from trainer.program.config import model as model_config
from trainer.program.config import run as run_config
from trainer.evaluation import perceptual
from trainer.loop import best


def check(run: run_config.RunConfig, data: data_config.DataConfig,
          model: model_config.ModelConfig):
  """Raises ArgumentError naming the flag of the first combination that cannot run."""
  checks.at_least("train_steps", run.train_steps, 1)  # before the schedules it bounds
  shape = model.shape()
  for name, what in (("attention_seconds", "attends to"), ("level_seconds", "normalises by")):
    window = shape.get(name)
    if shape.get("causal") and window and data.crop_seconds and window > data.crop_seconds:
      raise checks.ArgumentError(name, window,
                                 f"is longer than --crop_seconds={data.crop_seconds:g}: "
                                 "training would never show the model a full window, which a "
                                 f"stream then {what}.")
  if run.mode in ("eval", "continuous_eval") and not data.eval_split:
    raise checks.ArgumentError("mode", run.mode, "needs an eval split (--eval_split).")
  if run.early_stop_patience:
    if not run.keep_best:
      raise checks.ArgumentError("early_stop_patience", run.early_stop_patience,
                                 "needs --keep_best=METRIC, the metric it watches.")
    if run.mode == "continuous_eval":
      raise checks.ArgumentError("early_stop_patience", run.early_stop_patience,
                                 "acts in training: a sidecar evaluator cannot stop the "
                                 "trainer (give it to the trainer's own evals).")
  if run.keep_best:
    if not data.eval_split:
      raise checks.ArgumentError("keep_best", run.keep_best, "needs an eval split "
                                 "(--eval_split) to score checkpoints on.")
    if run.keep_best in best.PERCEPTUAL:
      if not run.eval_perceptual_examples:
        raise checks.ArgumentError("keep_best", run.keep_best, "is scored only on "
                                   "--eval_perceptual_examples, which is 0.")
      if perceptual.missing():
        raise checks.ArgumentError("keep_best", run.keep_best,
                                   f"needs PESQ and STOI: {perceptual.missing()}")
