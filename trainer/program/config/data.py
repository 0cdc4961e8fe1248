"""Data flags: where the shards are (or the synthetic corpus), pairs or sources to mix, cropping, shuffling, reverb and remix placement."""

import dataclasses
from typing import Callable, Dict, Optional, Tuple

from common import checks
from trainer.program import config as config_lib

flag = config_lib.flag
SNR_DB = (-5.0, 20.0)
SPEECH_LEVEL_DB = (-35.0, -15.0)  # the DNS Challenge synthesizer's range


def parse_range(name: str, default: Tuple[float, float]) -> Callable:
  """A parser of "LO,HI" into `(lo, hi)` floats (`default` when the flag is unset)."""
  return config_lib.parse_pair(
      name, float, f"LO,HI (two numbers, e.g. {default[0]:g},{default[1]:g})", default)


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
  train_split: str = flag("train", "Split name for training (stored noisy/clean pairs).")
  clean_split: str = flag("", "Clean-speech store to mix from (input.prepare --kind=clean; "
                          "synthetic: the corpus's own talkers). With --noise_split, training "
                          "mixes speech and noise on the fly in the step (ops.Mix) instead of "
                          "reading --train_split pairs.")
  noise_split: str = flag("", "Noise store to mix from (input.prepare --kind=noise; synthetic: "
                          "the corpus's own noises).")
  rir_split: str = flag("", "Room store for --rir_proba (input.prepare --kind=rir: measured "
                        "or simulated responses). Unset: --simulated_rooms rooms simulated at "
                        "startup (input.rooms).")
  simulated_rooms: int = flag(200, "Rooms simulated at startup for --rir_proba without "
                              "--rir_split.")
  snr_db: Tuple[float, float] = flag(SNR_DB, "LO,HI: SNR range of the on-the-fly mix, in dB "
                                     "(default -5,20).", parse=parse_range("snr_db", SNR_DB))
  speech_level_db: Tuple[float, float] = flag(
      SPEECH_LEVEL_DB, "LO,HI: speech RMS of the on-the-fly mix, in dBFS (default -35,-15).",
      parse=parse_range("speech_level_db", SPEECH_LEVEL_DB))
  rir_proba: float = flag(0.0, "Probability that a mixed example's speech and noise are "
                          "convolved with a room response (the target keeps the direct path "
                          "and --early_reflections_ms).")
  early_reflections_ms: float = flag(50.0, "How much of the room response after the direct "
                                     "path the target of a reverberated mix keeps.")
  second_noise_proba: float = flag(0.0, "Probability that a mixed example gets a second "
                                   "noise (another example's) at -5..5 dB to the first.")
  clip_proba: float = flag(0.0, "Probability that a mixed example is clipped 1-12 dB below "
                           "its peak.")
  band_limit_proba: float = flag(0.0, "Probability that a mixed example and its target are "
                                 "low-passed at 3.4-8 kHz (telephone, codecs).")
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
                            "its effect on held-out speech: BENCHMARKS.md).")
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
    if bool(self.clean_split) != bool(self.noise_split):
      given, missing = (("clean_split", "noise_split") if self.clean_split
                        else ("noise_split", "clean_split"))
      raise checks.ArgumentError(given, getattr(self, given), f"needs --{missing} too: "
                                 "training mixes a clean store with a noise store.")
    if not self.mixing:
      for name in ("rir_split", "rir_proba", "second_noise_proba", "clip_proba",
                   "band_limit_proba"):
        if getattr(self, name):
          raise checks.ArgumentError(name, getattr(self, name), "is for runs that mix "
                                     "(--clean_split and --noise_split).")
    checks.at_least("simulated_rooms", self.simulated_rooms, 1)

  @property
  def mixing(self) -> bool:
    """Whether training mixes clean and noise stores on the fly (else: stored pairs)."""
    return bool(self.clean_split)

  def train_splits(self) -> Dict[str, str]:
    """The training splits, each with the kind of records it holds: the stored pairs, or the
    clean speech and the noise a mixing run reads."""
    if self.mixing:
      return {self.clean_split: "clean", self.noise_split: "noise"}
    return {self.train_split: "pairs"}


def from_flags() -> DataConfig:
  return config_lib.from_flags(DataConfig)
