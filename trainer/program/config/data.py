"""Data flags: where the shards are (or the synthetic corpus), cropping, shuffling, reverb and remix placement."""

import dataclasses
from typing import Optional

from common import checks
from trainer.program import config as config_lib

flag = config_lib.flag


@config_lib.define
@dataclasses.dataclass(frozen=True)
class DataConfig:
  """The training and eval data (checked by the input pipeline and the augmentations; where
  the data is, by the program's build; the synthetic corpus's size here)."""
  data_dir: Optional[str] = flag(None, "Directory with {split}.manifest.json and shards "
                                 "(python -m input.prepare). Unset: use the synthetic corpus.")
  synthetic: bool = flag(True, "Without --data_dir, train on the synthetic corpus "
                         "(generated on first use in --synthetic_dir).")
  synthetic_dir: Optional[str] = flag(None, "Where the synthetic corpus lives (default: "
                                      "<model_dir>/../synthetic-v<version>-<rate>Hz-<seconds>s-"
                                      "<examples>).")
  synthetic_examples: int = flag(1000, "Synthetic training examples.")
  synthetic_eval_examples: int = flag(16, "Synthetic eval examples.")
  synthetic_seconds: float = flag(2.0, "Length of each synthetic example.")
  sample_rate: int = flag(16000, "Sample rate of the synthetic corpus (real data: taken from "
                          "its manifest).")
  train_split: str = flag("train", "Split name for training.")
  eval_split: str = flag("eval", "Split name for evaluation ('' to skip eval).")
  crop_seconds: float = flag(1.0, "Random crop per training example (0: the whole segment).")
  shuffle_buffer_mb: float = flag(256.0, "Shuffle buffer memory per input pipeline, in MB of "
                                  "int16 records.")
  cycle_length: int = flag(8, "Shards read in parallel per input pipeline.")
  per_replica_buffer: int = flag(2, "Batches prefetched onto each device.")
  ram_budget_mb: Optional[int] = flag(None, "tf.data autotune RAM budget.")
  deterministic_input: bool = flag(False, "Deterministic element order (slower; makes resumed "
                                   "runs match uninterrupted ones exactly).")
  reverb: str = flag("device", "Where RevEcho reverb augmentation runs: in the compiled step "
                     "on the accelerator, in the tf.data pipeline on the host, or not at all.",
                     choices=["device", "host", "off"])
  reverb_proba: float = flag(0.2, "Probability that an example is reverberated.")
  reverb_keep_clean: float = flag(0.1, "Share of the clean reverb kept in the target.")
  remix_proba: float = flag(0.5, "Probability that an example's noise is swapped, in the step, "
                            "for another example's at a fresh -5..20 dB SNR (dynamic mixing; "
                            "measured on held-out speech: +0.6 dB SI-SDRi, higher PESQ and "
                            "STOI for the default model).")
  data_service: Optional[str] = flag(None, "grpc://host:port of a tf.data service dispatcher "
                                     "(python -m input.service): run the training pipeline's "
                                     "reading and preprocessing on its workers.")
  data_service_sharding: str = flag(
      "off", "off: each service worker produces full epochs (robust, may repeat examples "
      "within an epoch); dynamic: each example at most once per epoch (a dead worker loses "
      "the rest of its files for that epoch).", choices=["off", "dynamic"])
  data_service_timeout: float = flag(60.0, "Seconds to wait for the --data_service dispatcher "
                                     "to answer before stopping with an error.")

  def __post_init__(self):
    for name in ("synthetic_examples", "synthetic_eval_examples"):
      checks.at_least(name, getattr(self, name), 1)
    checks.positive("synthetic_seconds", self.synthetic_seconds)


def from_flags() -> DataConfig:
  return config_lib.from_flags(DataConfig)
