"""Run flags: model_dir, strategy and devices, batch, steps and the outer loop's intervals."""

import dataclasses
from typing import Optional, Tuple

from common import checks
from trainer.loop import best
from trainer.program import config as config_lib

flag = config_lib.flag


_PROFILE_PAIR = config_lib.parse_pair("profile_steps", int,
                                      "START,END (two step numbers, e.g. 100,110)")


def parse_profile_steps(text: Optional[str]) -> Optional[Tuple[int, int]]:
  """"START,END" -> (START, END) with 0 <= START < END; None for no profile."""
  if not text:
    return None
  start, end = _PROFILE_PAIR(text)
  if not 0 <= start < end:
    raise checks.ArgumentError("profile_steps", repr(text), "needs 0 <= START < END.")
  return start, end


@config_lib.define
@dataclasses.dataclass(frozen=True)
class RunConfig:
  """What to run where, and when the outer loop acts (checked by the step, the controller
  and the strategy; the fields only the program uses are checked here)."""
  model_dir: str = flag("runs/default", "Checkpoints, TensorBoard logs and config.")
  mode: str = flag("train", "train (resumes from model_dir); eval of the newest checkpoint; "
                   "continuous_eval: a sidecar evaluator, in another process or machine, of "
                   "each new checkpoint of the run training in model_dir, once each (ends "
                   "with that run, or after --eval_timeout without a new checkpoint); "
                   "diagnose: time input alone, step alone and both, and say if training is "
                   "input-bound (writes model_dir/diagnosis.json, no checkpoint).",
                   choices=["train", "eval", "continuous_eval", "diagnose"])
  diagnose_steps: int = flag(30, "Timed steps per --mode=diagnose phase.")
  diagnose_warmup: int = flag(10, "Untimed steps before each diagnose phase.")
  strategy: str = flag("auto", "tf.distribute strategy. auto: mirrored over every GPU found "
                       "(one device if there is one GPU or none); multi_worker_mirrored "
                       "reads TF_CONFIG.",
                       choices=["auto", "mirrored", "one_device", "multi_worker_mirrored"])
  num_gpus: Optional[int] = flag(None, "GPUs to use with auto, mirrored or one_device "
                                 "(default: all found).")
  cluster_timeout: float = flag(300.0, "multi_worker_mirrored: seconds to wait at start-up "
                                "for every task of TF_CONFIG to answer (naming the missing "
                                "ones every 15 s) before ending with those named.")
  cpu_replicas: int = flag(1, "Split the CPU into this many logical devices and mirror over "
                           "them: try multi-replica runs without GPUs.")
  global_batch_size: int = flag(16, "Examples per step across all replicas (per micro-batch "
                                "with --accumulate_steps).")
  accumulate_steps: int = flag(1, "Micro-batches per update (gradient accumulation): each "
                               "update averages the gradients of this many consecutive global "
                               "batches, as one batch of global_batch_size x accumulate_steps "
                               "would; --train_steps, --steps_per_loop and the schedule count "
                               "updates.")
  train_steps: int = flag(2000, "Total training steps.")
  steps_per_loop: int = flag(10, "Steps per tf.function call (host round trip).")
  log_every: int = flag(100, "Steps between progress lines.")
  checkpoint_every: int = flag(500, "Steps between checkpoints.")
  input_stall_seconds: float = flag(60.0, "When no training step finishes for this long, "
                                    "log what to check (the tf.data service's workers, the "
                                    "data storage, a peer) and again each time it passes; a "
                                    "SIGTERM during such a wait saves and exits at once "
                                    "(0: not watched).")
  keep_checkpoints: int = flag(3, "Checkpoints to keep.")
  eval_every: int = flag(500, "Steps between evaluations (0: only at the end).")
  eval_timeout: float = flag(3600.0, "--mode=continuous_eval ends after this many seconds "
                             "without a new checkpoint.")
  eval_clips: int = flag(3, "Audio clips and spectrograms written per evaluation.")
  eval_perceptual_examples: int = flag(32, "Eval examples scored with PESQ and STOI on the "
                                       "host (needs pip install -e '.[metrics]'; 0: none).")
  max_skipped_steps: int = flag(50, "Diverged after this many non-finite steps in a row "
                                "(see --recover_attempts).")
  divergence_loss: Optional[float] = flag(
      None, "Diverged when a chunk of --steps_per_loop steps has a mean loss above this (the "
      "default loss is about -SI-SDR in dB; unset: no bound).")
  divergence_rise: float = flag(0.0, "Diverged when a chunk's mean loss is more than this "
                                "above the median of the last 20 chunks' (0: off).")
  recover_attempts: int = flag(3, "On divergence, restore the newest checkpoint and train on "
                               "with fresh data and augmentation draws, at most this many "
                               "times per run (recorded in model_dir/recoveries.json); then "
                               "stop with an error. 0: stop at the first divergence.")
  keep_best: str = flag("", "Keep the checkpoint with the best value of this eval metric "
                        "(si_sdr, si_sdr_improvement, pesq, stoi: higher is better; loss: "
                        "lower) in model_dir/best/, never removed by --keep_checkpoints "
                        "('': off).", choices=["", *best.METRICS])
  early_stop_patience: int = flag(0, "With --keep_best: stop after this many evals in a row "
                                  "without a new best (0: never).")
  seed: int = flag(0, "Seed of model init, input order and augmentation draws.")
  jit_compile: str = flag("auto", "XLA-compile each replica's step. auto: on for GPUs, off "
                          "on CPUs (where it is slower: BENCHMARKS.md).",
                          choices=["auto", "on", "off"])
  profile_steps: Optional[Tuple[int, int]] = flag(
      None, "START,END: write a TensorBoard profile (with step markers) of the steps from "
      "global step START to END, into model_dir/train.", parse=parse_profile_steps)

  def __post_init__(self):
    for name in ("diagnose_steps", "diagnose_warmup", "keep_checkpoints"):
      checks.at_least(name, getattr(self, name), 1)
    checks.positive("eval_timeout", self.eval_timeout)
    for name in ("eval_clips", "eval_perceptual_examples", "divergence_rise"):
      checks.at_least(name, getattr(self, name), 0)


def from_flags() -> RunConfig:
  return config_lib.from_flags(RunConfig)
