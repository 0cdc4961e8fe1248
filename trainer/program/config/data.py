"""Data flags: where the shards are (or the synthetic corpus), cropping, shuffling, reverb placement."""

import dataclasses
from typing import Optional

from absl import flags
import tensorflow as tf

from trainer.program import config as config_lib

flags.DEFINE_string("data_dir", None, "Directory with {split}.manifest.json and shards "
                    "(python -m input.prepare). Unset: use the synthetic corpus.")
flags.DEFINE_bool("synthetic", True, "Without --data_dir, train on the synthetic corpus "
                  "(generated on first use in --synthetic_dir).")
flags.DEFINE_string("synthetic_dir", None, "Where the synthetic corpus lives "
                    "(default: <model_dir>/../synthetic-v<version>-<rate>Hz-<seconds>s-<examples>).")
flags.DEFINE_integer("synthetic_examples", 1000, "Synthetic training examples.")
flags.DEFINE_integer("synthetic_eval_examples", 16, "Synthetic eval examples.")
flags.DEFINE_float("synthetic_seconds", 2.0, "Length of each synthetic example.")
flags.DEFINE_integer("sample_rate", 16000, "Sample rate of the synthetic corpus "
                     "(real data: taken from its manifest).")
flags.DEFINE_string("train_split", "train", "Split name for training.")
flags.DEFINE_string("eval_split", "eval", "Split name for evaluation ('' to skip eval).")
flags.DEFINE_float("crop_seconds", 1.0, "Random crop per training example (0: the whole "
                   "segment).")
flags.DEFINE_float("shuffle_buffer_mb", 256, "Shuffle buffer memory per input pipeline, "
                   "in MB of int16 records.")
flags.DEFINE_integer("cycle_length", 8, "Shards read in parallel per input pipeline.")
flags.DEFINE_integer("per_replica_buffer", 2, "Batches prefetched onto each device.")
flags.DEFINE_integer("ram_budget_mb", None, "tf.data autotune RAM budget.")
flags.DEFINE_bool("deterministic_input", False, "Deterministic element order (slower; "
                  "makes resumed runs match uninterrupted ones exactly).")
flags.DEFINE_enum("reverb", "device", ["device", "host", "off"],
                  "Where RevEcho reverb augmentation runs: in the compiled step on the "
                  "accelerator, in the tf.data pipeline on the host, or not at all.")
flags.DEFINE_float("reverb_proba", 0.2, "Probability that an example is reverberated.")
flags.DEFINE_float("reverb_keep_clean", 0.1, "Share of the clean reverb kept in the target.")
flags.DEFINE_float("remix_proba", 0.0, "Probability that an example's noise is swapped, in the "
                   "step, for another example's at a fresh -5..20 dB SNR (dynamic mixing).")
flags.DEFINE_string("data_service", None, "grpc://host:port of a tf.data service dispatcher "
                    "(python -m input.service): run the training pipeline's reading and "
                    "preprocessing on its workers.")
flags.DEFINE_float("data_service_timeout", 60.0, "Seconds to wait for the --data_service "
                   "dispatcher to answer before stopping with an error.")
flags.DEFINE_enum("data_service_sharding", "off", ["off", "dynamic"],
                  "off: each service worker produces full epochs (robust, may repeat "
                  "examples within an epoch); dynamic: each example at most once per epoch "
                  "(a dead worker loses the rest of its files for that epoch).")

FLAGS = flags.FLAGS


@dataclasses.dataclass(frozen=True)
class DataConfig:
  data_dir: Optional[str]
  synthetic_dir: Optional[str]
  synthetic_examples: int
  synthetic_eval_examples: int
  synthetic_seconds: float
  sample_rate: int
  train_split: str
  eval_split: str
  crop_seconds: Optional[float]
  shuffle_buffer_mb: float
  cycle_length: int
  per_replica_buffer: int
  ram_budget_mb: Optional[int]
  deterministic_input: bool
  reverb: str
  reverb_proba: float
  reverb_keep_clean: float
  remix_proba: float
  data_service: Optional[str]
  data_service_sharding: str
  data_service_timeout: float


def from_flags() -> DataConfig:
  """Validated data configuration; raises ValueError naming the flag to fix."""
  data_dir = FLAGS.data_dir
  if data_dir is not None and not tf.io.gfile.isdir(data_dir):
    raise ValueError(f"--data_dir={data_dir} does not exist. Prepare data with "
                     "python -m input.prepare, or drop --data_dir to use the synthetic corpus.")
  if data_dir is None and not FLAGS.synthetic:
    raise ValueError("No data: pass --data_dir=<prepared shards>, or --synthetic to train "
                     "on the generated corpus.")
  if FLAGS.crop_seconds < 0:
    raise ValueError(f"--crop_seconds must be >= 0 (0: the whole segment), got "
                     f"{FLAGS.crop_seconds}.")
  config_lib.check_at_least(1, FLAGS, "synthetic_examples", "synthetic_eval_examples",
                            "cycle_length", "per_replica_buffer", "sample_rate")
  for name in ("reverb_proba", "reverb_keep_clean", "remix_proba"):
    if not 0 <= getattr(FLAGS, name) <= 1:
      raise ValueError(f"--{name} must be in [0, 1], got {getattr(FLAGS, name)}.")
  if FLAGS.data_service_timeout <= 0:
    raise ValueError(f"--data_service_timeout must be > 0 seconds, got "
                     f"{FLAGS.data_service_timeout}.")
  return config_lib.from_flag_values(DataConfig, crop_seconds=FLAGS.crop_seconds or None)
