"""Model flags: the architecture (spectral mask or waveform U-Net), its shape and the loss.

Each shape flag left unset takes the chosen architecture's own default (from
its constructor, through the model card), so the flags never repeat them;
but `--noise_floor`, which the mask model's constructor leaves off (as every
model before it had it) and the program turns on unless the model is causal.
"""

import dataclasses
from typing import Optional

from absl import logging

from trainer import losses
from trainer.models import card
from trainer.models import mask
from trainer.program import config as config_lib

flag = config_lib.flag
_UNET = card.shape_arguments("unet")
# Every shape flag: the union of the architectures' arguments.
_SHAPE_FLAGS = sorted(set().union(*map(card.shape_arguments, card.ARCHITECTURES)))


@config_lib.define
@dataclasses.dataclass(frozen=True)
class ModelConfig:
  """The model and its loss (the shape is checked by the model, the loss by DenoiseLoss)."""
  architecture: str = flag(
      "mask", "mask: a spectral-mask model over the STFT (trainer/models/mask.py), the "
      "default: it learns from a CPU-minutes budget; unet: the Demucs-style waveform U-Net "
      "(trainer/models/unet.py), the GPU flagfiles' model.", choices=sorted(card.ARCHITECTURES))
  hidden: Optional[int] = flag(None, "unet: channels of the first encoder layer; mask: "
                               "channels of the conv stack (default: the architecture's).")
  depth: Optional[int] = flag(None, "unet: encoder/decoder layers; mask: residual blocks with "
                              "dilations 1, 2, 4, ... (default: the architecture's).")
  kernel_size: Optional[int] = flag(None, "Conv kernel size; unet: samples, >= --stride; "
                                    "mask: frames (default: the architecture's).")
  causal: Optional[bool] = flag(None, "No look-ahead (streaming-capable) model.")
  level: Optional[str] = flag(None, "mask: the level its features are relative to: power "
                              "(the log of the mean power over bins, the default: bins with "
                              "no energy, as in band-limited audio, barely move it) or log "
                              "(the mean log power of the first models).",
                              choices=["power", "log"])
  level_seconds: Optional[float] = flag(
      None, "Causal models: the level (mask: of the features; unet: the RMS the input is "
      "normalised by) is over the latest this many seconds, so a stream's level follows "
      "the audio however long it runs (0: everything so far; default 1, the training "
      "crop).")
  attention_seconds: Optional[float] = flag(
      None, "unet, causal: the bottleneck attention sees the latest this many seconds, with "
      "a penalty growing with distance instead of absolute positions, so a stream's state "
      "is bounded (0: every frame so far; default 1; no longer than --crop_seconds).")
  fft_length: Optional[int] = flag(
      None, "mask: the STFT's length, at least its 32 ms window (default: the smallest "
      "2^a 3^b 5^c that holds it). A power of two lets the TFLite stream step use RFFT2D: "
      "at 48 kHz 2048 streams about 4x faster than 1536 (BENCHMARKS.md).")
  noise_floor: Optional[float] = flag(
      None, "mask, non-causal: the features also hold each bin's quantile over the clip at "
      "this share, where the bin is quietest: its steady noise (0: off; default 0.2, and 0 "
      "for a causal model; what it gains: BENCHMARKS.md).")
  stride: Optional[int] = flag(None, f"unet: conv stride (time downsampling per layer; "
                               f"default {_UNET['stride']}).")
  growth: Optional[int] = flag(None, f"unet: channel growth per layer (default "
                               f"{_UNET['growth']}).")
  max_hidden: Optional[int] = flag(None, f"unet: channel cap (default {_UNET['max_hidden']}).")
  attention_heads: Optional[int] = flag(None, "unet: heads of the bottleneck self-attention "
                                        f"(default {_UNET['attention_heads']}).")
  attention_layers: Optional[int] = flag(None, "unet: bottleneck self-attention blocks "
                                         f"(default {_UNET['attention_layers']}).")
  waveform_loss: str = flag("si_sdr", "Waveform term of the loss: -SI-SDR in dB (scale-free: "
                            "quiet and loud examples count alike), or L1 in waveform units.",
                            choices=["l1", "si_sdr"])
  stft_weight: float = flag(0.3, "Weight of the multi-resolution STFT loss (0: the waveform "
                            "term only). Its terms are about 1-2; with -SI-SDR (about -10 dB) "
                            "0.3 makes it a spectral anchor whose log-magnitude term counts "
                            "noise left in quiet bins (0.1 and 0.3 on real speech: "
                            "BENCHMARKS.md). With L1 (about 0.01 at speech levels) use about "
                            "0.01, or it drowns the L1 term.")
  intelligibility_weight: float = flag(20.0, "Weight of an intelligibility term: 1 - a "
                                       "differentiable STOI (envelope correlation in 1/3 "
                                       "octave bands over 384 ms), 0 for a perfect estimate "
                                       "(0: off; its effect on held-out speech: "
                                       "BENCHMARKS.md).")
  suppression_weight: float = flag(10.0, "Weight of an over-suppression term: the compressed "
                                   "spectral energy (|X|^0.3) the estimate takes away from "
                                   "the clean speech, over the speech's (0-1; residual noise "
                                   "costs nothing), so the model keeps speech it is unsure of "
                                   "(0: off; its effect on held-out speech: BENCHMARKS.md).")

  def shape(self) -> dict:
    """The architecture's shape arguments set by flags (its defaults fill the rest); a
    shape flag of the other architecture is ignored with a warning (so one set of small
    overrides serves every flagfile)."""
    taken = card.shape_arguments(self.architecture)
    given = {name: getattr(self, name) for name in _SHAPE_FLAGS
             if getattr(self, name) is not None}
    for name in sorted(set(given) - set(taken)):
      logging.warning("--%s is not an argument of the %s model: ignored.", name,
                      self.architecture)
    shape = {name: value for name, value in given.items() if name in taken}
    if self.architecture == "mask" and self.noise_floor is None:
      shape["noise_floor"] = mask.default_noise_floor(bool(self.causal))
    return shape

  def loss(self, sample_rate: int) -> losses.DenoiseLoss:
    """The training objective these flags describe at `sample_rate`."""
    return losses.DenoiseLoss(sample_rate, stft_weight=self.stft_weight,
                              waveform_loss=self.waveform_loss,
                              intelligibility_weight=self.intelligibility_weight,
                              suppression_weight=self.suppression_weight)

  def model_card(self, *, sample_rate: int, seed: int) -> card.ModelCard:
    """The model card these flags describe at `sample_rate`."""
    return card.ModelCard.create(self.architecture, sample_rate=sample_rate, seed=seed,
                                 **self.shape())


def from_flags() -> ModelConfig:
  return config_lib.from_flags(ModelConfig)
