"""Model flags: the architecture (waveform U-Net or spectral mask), its shape and the loss."""

import dataclasses

from absl import flags

from trainer.program import config as config_lib

# hidden, depth and kernel_size when their flags are unset: each architecture's small default.
DEFAULTS = {"unet": dict(hidden=16, depth=3, kernel_size=8),
            "mask": dict(hidden=128, depth=6, kernel_size=3)}
# The model-shape fields each architecture takes (the rest of ModelConfig is the loss's).
ARCHITECTURES = {
    "unet": ("hidden", "depth", "kernel_size", "stride", "growth", "max_hidden", "causal",
             "attention_heads", "attention_layers"),
    "mask": ("hidden", "depth", "kernel_size", "causal"),
}

flags.DEFINE_enum("architecture", "mask", sorted(ARCHITECTURES),
                  "mask: a spectral-mask model over the STFT (trainer/mask_denoiser.py), the "
                  "default: it learns from a CPU-minutes budget; unet: the Demucs-style "
                  "waveform U-Net (trainer/denoiser.py), the GPU flagfiles' model.")
flags.DEFINE_integer("hidden", None, "unet: channels of the first encoder layer; mask: "
                     "channels of the conv stack (default: the architecture's).")
flags.DEFINE_integer("depth", None, "unet: encoder/decoder layers; mask: residual blocks "
                     "with dilations 1, 2, 4, ... (default: the architecture's).")
flags.DEFINE_integer("kernel_size", None, "Conv kernel size; unet: samples, >= --stride; "
                     "mask: frames (default: the architecture's).")
flags.DEFINE_integer("stride", 4, "unet: conv stride (time downsampling per layer).")
flags.DEFINE_integer("growth", 2, "unet: channel growth per layer.")
flags.DEFINE_integer("max_hidden", 10000, "unet: channel cap.")
flags.DEFINE_bool("causal", False, "No look-ahead (streaming-capable) model.")
flags.DEFINE_integer("attention_heads", 4, "unet: heads of the bottleneck self-attention.")
flags.DEFINE_integer("attention_layers", 1, "unet: bottleneck self-attention blocks.")
flags.DEFINE_enum("waveform_loss", "si_sdr", ["l1", "si_sdr"],
                  "Waveform term of the loss: -SI-SDR in dB (scale-free: quiet and loud "
                  "examples count alike), or L1 in waveform units.")
flags.DEFINE_float("stft_weight", 0.1, "Weight of the multi-resolution STFT loss (0: the "
                   "waveform term only). Its terms are about 1-2; with -SI-SDR (about -10 "
                   "dB) 0.1 makes it a light spectral anchor. With L1 (about 0.01 at speech "
                   "levels) use about 0.01, or it drowns the L1 term.")

FLAGS = flags.FLAGS


@dataclasses.dataclass(frozen=True)
class ModelConfig:
  architecture: str
  hidden: int
  depth: int
  kernel_size: int
  stride: int
  growth: int
  max_hidden: int
  causal: bool
  attention_heads: int
  attention_layers: int
  waveform_loss: str
  stft_weight: float

  def model_kwargs(self) -> dict:
    """The architecture's constructor arguments (what config.json stores as "model")."""
    return {name: getattr(self, name) for name in ARCHITECTURES[self.architecture]}


def from_flags() -> ModelConfig:
  unset = {name: value for name, value in DEFAULTS[FLAGS.architecture].items()
           if getattr(FLAGS, name) is None}
  config = config_lib.from_flag_values(ModelConfig, **unset)
  config_lib.check_at_least(1, config, "hidden", "depth", "kernel_size")
  config_lib.check_at_least(0, config, "stft_weight")
  if config.architecture == "mask":
    return config
  if config.kernel_size < config.stride or config.stride < 1:
    raise ValueError(f"--kernel_size={config.kernel_size} must be >= --stride={config.stride} "
                     ">= 1.")
  config_lib.check_at_least(1, config, "attention_heads", "attention_layers", "growth")
  bottleneck = min(config.hidden * config.growth ** (config.depth - 1), config.max_hidden)
  if bottleneck % config.attention_heads:
    raise ValueError(f"The bottleneck has {bottleneck} channels, not divisible by "
                     f"--attention_heads={config.attention_heads}.")
  return config
