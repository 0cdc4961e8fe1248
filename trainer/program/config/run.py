"""Run flags: model_dir, strategy and devices, batch, steps and the outer loop's intervals."""

import dataclasses
from typing import Optional, Tuple

from absl import flags

from trainer.program import config as config_lib

flags.DEFINE_string("model_dir", "runs/default", "Checkpoints, TensorBoard logs and config.")
flags.DEFINE_enum("mode", "train", ["train", "eval", "diagnose"],
                  "train (resumes from model_dir); eval of the latest checkpoint; diagnose: "
                  "time input alone, step alone and both, and say if training is input-bound "
                  "(writes model_dir/diagnosis.json, no checkpoint).")
flags.DEFINE_integer("diagnose_steps", 30, "Timed steps per --mode=diagnose phase.")
flags.DEFINE_integer("diagnose_warmup", 10, "Untimed steps before each diagnose phase.")
flags.DEFINE_enum("strategy", "default",
                  ["default", "mirrored", "one_device", "multi_worker_mirrored"],
                  "tf.distribute strategy; multi_worker_mirrored reads TF_CONFIG.")
flags.DEFINE_integer("num_gpus", None, "GPUs to use with mirrored (default: all found).")
flags.DEFINE_integer("cpu_replicas", 1, "Split the CPU into this many logical devices and "
                     "mirror over them: try multi-replica runs without GPUs.")
flags.DEFINE_integer("global_batch_size", 16, "Examples per step across all replicas.")
flags.DEFINE_integer("train_steps", 2000, "Total training steps.")
flags.DEFINE_integer("steps_per_loop", 10, "Steps per tf.function call (host round trip).")
flags.DEFINE_integer("log_every", 100, "Steps between progress lines.")
flags.DEFINE_integer("checkpoint_every", 500, "Steps between checkpoints.")
flags.DEFINE_integer("keep_checkpoints", 3, "Checkpoints to keep.")
flags.DEFINE_integer("eval_every", 500, "Steps between evaluations (0: only at the end).")
flags.DEFINE_integer("eval_clips", 3, "Audio clips and spectrograms written per evaluation.")
flags.DEFINE_integer("eval_perceptual_examples", 32, "Eval examples scored with PESQ and STOI "
                     "on the host (needs pip install -e '.[metrics]'; 0: none).")
flags.DEFINE_integer("max_skipped_steps", 50, "Stop after this many non-finite steps in a row.")
flags.DEFINE_integer("seed", 0, "Seed of model init, input order and augmentation draws.")
flags.DEFINE_enum("jit_compile", "auto", ["auto", "on", "off"],
                  "XLA-compile each replica's step. auto: on for GPUs, off on CPUs (measured "
                  "here: the default model's step runs 2x slower under XLA on a 2-core CPU).")

flags.DEFINE_string("profile_steps", None, "START,END: write a TensorBoard profile (with step "
                    "markers) of the steps from global step START to END, into "
                    "model_dir/train.")

FLAGS = flags.FLAGS


@dataclasses.dataclass(frozen=True)
class RunConfig:
  model_dir: str
  mode: str
  strategy: str
  num_gpus: int
  cpu_replicas: int
  global_batch_size: int
  train_steps: int
  steps_per_loop: int
  log_every: int
  checkpoint_every: int
  keep_checkpoints: int
  eval_every: int
  eval_clips: int
  eval_perceptual_examples: int
  max_skipped_steps: int
  seed: int
  jit_compile: str
  diagnose_steps: int
  diagnose_warmup: int
  profile_steps: Optional[Tuple[int, int]]


def parse_profile_steps(text: Optional[str]) -> Optional[Tuple[int, int]]:
  """"START,END" -> (START, END) with 0 <= START < END; None for no profile."""
  if not text:
    return None
  try:
    start, end = (int(part) for part in text.split(","))
  except ValueError:
    raise ValueError(f"--profile_steps={text!r} must be START,END (two step numbers, e.g. "
                     "100,110).") from None
  if not 0 <= start < end:
    raise ValueError(f"--profile_steps={text!r} needs 0 <= START < END.")
  return start, end


def from_flags() -> RunConfig:
  config = config_lib.from_flag_values(
      RunConfig, profile_steps=parse_profile_steps(FLAGS.profile_steps))
  config_lib.check_at_least(1, config, "global_batch_size", "train_steps", "steps_per_loop",
                            "log_every", "checkpoint_every", "keep_checkpoints",
                            "cpu_replicas", "max_skipped_steps", "diagnose_steps",
                            "diagnose_warmup")
  config_lib.check_at_least(0, config, "eval_every", "eval_clips",
                            "eval_perceptual_examples", "num_gpus")
  return config
