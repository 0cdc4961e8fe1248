"""A spectral-mask waveform denoiser as a tf.Module: STFT -> dilated conv stack -> bounded mask -> inverse STFT.

Waveform in, waveform out, like the U-Net in trainer.models.unet, but the
network only estimates a gain per time-frequency bin from log-magnitude
features (normalised per example, so the model is level-invariant; beside
them, non-causal, each bin's noise floor over the clip) and the noisy STFT's
phase is kept. Such a model learns to suppress stationary and
slowly varying noise from far fewer steps than a waveform model, which is why
it is the default for short CPU runs (measured in BENCHMARKS.md). Frames are
set in seconds so one configuration serves every sample rate; FFTs run in
float32, the convolutions in the input's dtype (bfloat16 under mixed precision).
A causal one streams a hop at a time (`MaskStep`, composed of its layers'
steps and a frame STFT from ops.frame_stft); the input it keeps is a floor on
its gain per bin.
"""

from typing import Optional, Tuple

import tensorflow as tf

from common import checks
from ops import frame_stft
from ops import kept_input
from ops import spectral
from trainer.models import layers
from trainer.models import level as level_lib
from trainer.models import streaming

WINDOW_SECONDS, HOP_SECONDS = 0.032, 0.008
FLOOR = 1e-4  # lower bound of the mask (-80 dB): keeps a trace of every bin
# How a frame's level is measured: "power", the log of its mean power (bins with no energy,
# as in band-limited audio, add next to nothing); "log", the mean of its log power (what
# the first models used: dragged down by empty bins).
LEVELS = ("power", "log")
NOISE_FLOOR = 0.2  # the quantile of each bin non-causal models see beside it (BENCHMARKS.md)
FEATURE_FLOOR = 10.0  # "power" features stop this far (in nats, 43 dB) below the level
LEVEL_SECONDS = 1.0  # a causal model's level: the mean over this much of the latest audio


def default_noise_floor(causal: bool) -> float:
  """The program's `noise_floor` for a mask model: NOISE_FLOOR, or 0 if it is causal."""
  return 0.0 if causal else NOISE_FLOOR


class ResidualBlock(tf.Module):
  """Dilated Conv1D over frames with a GLU, added back to its input."""

  def __init__(self, channels: int, kernel_size: int, dilation: int, *, causal: bool,
               seed, name=None):
    super().__init__(name=name)
    self.conv = layers.Conv1D(channels, 2 * channels, kernel_size, dilation=dilation,
                              causal=causal, seed=seed)

  def __call__(self, x):
    return x + layers.glu(self.conv(x))

  @property
  def state_shape(self) -> list:
    return self.conv.state_shape

  def step(self, x, history):
    """The block on the next frames `x` `[frames, channels]` after `history`."""
    y, history = self.conv.step(x, history)
    return x + layers.glu(y), history


class MaskDenoiser(tf.Module):
  """`[batch, time]` noisy audio -> `[batch, time]` estimate, by a mask on the STFT.

  Args:
    sample_rate: the audio's rate (frames are WINDOW_SECONDS long, every HOP_SECONDS).
    hidden: channels of the conv stack.
    depth: residual blocks; block i has dilation 2**i, so the context grows
      exponentially (depth 6, kernel 3: +-63 frames, about +-0.5 s).
    kernel_size: frames each conv sees.
    causal: no look-ahead (each frame's mask depends on past frames only).
    level: how the features' level is measured (see LEVELS).
    level_seconds: causal models: the level is the mean over the latest this many
      seconds (the frames so far until then), so it follows the audio however long a
      stream runs; 0: over everything so far (the first causal models). No longer than
      the training crop, so a stream's level is one of the kind the model was trained on.
    fft_length: the STFT's length, at least the window (zero-padded to it); 0: the
      smallest 2^a 3^b 5^c that holds the window. A power of two lets the TFLite step use
      the RFFT2D op (at 48 kHz, 2048 instead of 1536 streams about 4x faster).
    noise_floor: non-causal models: the features also hold each bin's quantile over the
      clip at this share (`bin_floor`: the steady noise a bin carries, which a conv stack
      of +-0.5 s only glimpses); 0: off (every model before it; a causal model). The
      program's default: `default_noise_floor`.
    seed: initialisation seed.
  """

  def __init__(self, *, sample_rate: int, hidden: int = 128, depth: int = 6,
               kernel_size: int = 3, causal: bool = False, level: str = "power",
               level_seconds: float = LEVEL_SECONDS, fft_length: int = 0,
               noise_floor: float = 0.0, seed: int = 0, name: str = "mask_denoiser"):
    super().__init__(name=name)
    for argument, value in (("hidden", hidden), ("depth", depth),
                            ("kernel_size", kernel_size)):
      checks.at_least(argument, value, 1)
    self.sample_rate = sample_rate
    self.window = max(16, int(round(WINDOW_SECONDS * sample_rate)))
    self.hop = max(4, int(round(HOP_SECONDS * sample_rate)))
    checks.at_least("fft_length", fft_length, 0)
    if 0 < fft_length < self.window:
      raise checks.ArgumentError("fft_length", fft_length, f"is shorter than the window "
                                 f"({self.window} samples at {sample_rate} Hz): use at least "
                                 f"that, or 0 for the default.")
    self.fft_length = fft_length or spectral.fft_length(self.window)
    self.causal = causal
    if not 0 <= noise_floor < 1:
      raise checks.ArgumentError("noise_floor", noise_floor, "is a quantile: use 0 (off) "
                                 "up to below 1.")
    if noise_floor and causal:
      raise checks.ArgumentError("noise_floor", noise_floor, "needs the whole clip, so a "
                                 "causal model cannot have it: use 0.")
    self.noise_floor = noise_floor
    self.level = checks.one_of("level", level, LEVELS)
    checks.at_least("level_seconds", level_seconds, 0)
    # Frames a causal level averages (None: all so far).
    self.level_frames = (max(1, int(round(level_seconds / HOP_SECONDS))) if level_seconds
                         else None)
    self.sliding_level = level_lib.SlidingMean(self.level_frames)
    # The frame STFT a TFLite step uses: TFLite's RFFT2D takes powers of two only.
    self.tflite_transform = frame_stft.for_tflite(self.fft_length)
    # Future input samples each output sample depends on: its frames reach this far ahead.
    self.lookahead = self.window - 1 if causal else None
    bins = self.fft_length // 2 + 1
    with self.name_scope:
      self.project_in = layers.Conv1D(bins * (2 if noise_floor else 1), hidden, 1,
                                      seed=(seed, 1))
      self.blocks = [ResidualBlock(hidden, kernel_size, 2**i, causal=causal,
                                   seed=(seed, 10 + 2 * i)) for i in range(depth)]
      self.project_out = layers.Conv1D(hidden, bins, 1, seed=(seed, 3))

  def __call__(self, noisy, floor=None):
    """The estimate; `floor` (optional, an ops.kept_input.GainFloor): the share of the
    input kept, as a floor on the gain."""
    dtype = noisy.dtype
    noisy32 = tf.cast(noisy, tf.float32)
    length = tf.shape(noisy32)[-1]
    lead = self.window - self.hop  # so every sample is covered by as many frames
    spectrum = tf.signal.stft(tf.pad(noisy32, [[0, 0], [lead, 0]]), self.window, self.hop,
                              self.fft_length, pad_end=True)
    x = self.project_in(tf.cast(self.features(spectrum) * 0.1, dtype))
    for block in self.blocks:
      x = block(x)
    mask = self.mask(x, floor)
    enhanced = tf.signal.inverse_stft(
        spectrum * tf.complex(mask, tf.zeros_like(mask)), self.window, self.hop,
        self.fft_length, window_fn=tf.signal.inverse_stft_window_fn(self.hop))
    return tf.cast(enhanced[:, lead:lead + length], dtype)

  def mask(self, x: tf.Tensor, floor=None) -> tf.Tensor:
    """The gain per bin, in [FLOOR, 1], from the conv stack's output; then `floor`ed as
    `__call__` says."""
    mask = FLOOR + (1.0 - FLOOR) * tf.sigmoid(tf.cast(self.project_out(tf.nn.relu(x)),
                                                      tf.float32))
    return mask if floor is None else floor(mask)

  def features(self, spectrum: tf.Tensor) -> tf.Tensor:
    """Log power per bin relative to the clip's level (so far, when causal): what the
    network sees of a `[batch, frames, bins]` STFT."""
    log_power, frame_level = self.log_powers(tf.square(tf.abs(spectrum)))
    if self.causal:
      return self.relative(log_power, self.causal_level(frame_level))
    relative = self.relative(log_power, tf.reduce_mean(frame_level, axis=1, keepdims=True))
    if not self.noise_floor:
      return relative
    return tf.concat([relative, self.bin_floor(relative)], -1)

  def bin_floor(self, features: tf.Tensor) -> tf.Tensor:
    """Each bin's `noise_floor` quantile over the clip's frames, in every frame: how loud
    the bin is where it is quietest (mostly the noise, in speech's pauses)."""
    frames = tf.shape(features)[1]
    at = tf.cast(tf.cast(frames - 1, tf.float32) * self.noise_floor, tf.int32)
    quantile = tf.sort(features, axis=1)[:, at:at + 1]
    return tf.broadcast_to(quantile, tf.shape(features))

  def causal_level(self, frame_level: tf.Tensor) -> tf.Tensor:
    """Each frame's level `[batch, frames, 1]` from its own and earlier frames' levels:
    their mean over the latest `level_frames` (all so far if None)."""
    return self.sliding_level(frame_level[..., 0])[..., None]

  def log_powers(self, power: tf.Tensor):
    """`(log power per bin, each frame's level [..., 1])` of an STFT's power `|X|^2`."""
    log_power = tf.math.log(power + 1e-10)
    if self.level == "power":
      return log_power, tf.math.log(tf.reduce_mean(power, axis=-1, keepdims=True) + 1e-10)
    return log_power, tf.reduce_mean(log_power, axis=-1, keepdims=True)

  def relative(self, log_power: tf.Tensor, level: tf.Tensor) -> tf.Tensor:
    """The features: log powers relative to `level`."""
    if self.level == "power":
      return tf.maximum(log_power - level, -FEATURE_FLOOR)
    return log_power - level

  def keeping(self, noisy, keep_input, keep_presence) -> tf.Tensor:
    """The estimate with shares of the input kept as a floor on the gain per bin."""
    return self(noisy, floor=self.gain_floor(keep_input, keep_presence))

  def gain_floor(self, keep_input, keep_presence) -> kept_input.GainFloor:
    """The floor on the gain that keeps these shares of the input."""
    return kept_input.GainFloor(self.fft_length, self.sample_rate, keep_input, keep_presence)

  def stream_step(self, *, keep_input=kept_input.KEEP, keep_presence=kept_input.PRESENCE_KEEP,
                  transform: Optional[str] = None) -> "MaskStep":
    """The stream of this causal model, its frame STFT computed as `transform` (one of
    ops.frame_stft.KINDS; None: tf.signal's, as the model computes it)."""
    return MaskStep(self, transform=transform or "fft", keep_input=keep_input,
                    keep_presence=keep_presence)


class MaskStep(streaming.StreamStep):
  """One hop of a causal `MaskDenoiser` with its state as one vector: the STFT's overlap in
  and out, the level's state (ops of `SlidingMean`) and each dilated conv's history.

  Its `lead` is the offline model's padding before the first sample, its
  `latency` the analysis window less one sample. `transform`: how a frame's
  STFT and its inverse are computed (ops.frame_stft). The shares of the input
  kept are a floor on the gain, fixed for the stream.
  """

  def __init__(self, model: MaskDenoiser, *, transform: str, keep_input, keep_presence):
    self.model = model
    self._floor = model.gain_floor(keep_input, keep_presence)
    self.hop, self.window = model.hop, model.window
    self.lead = self.window - self.hop
    self.latency = self.window - 1
    self._set_state_shapes([[self.lead], [self.lead]] + model.sliding_level.state_shapes + [
        block.state_shape for block in model.blocks])
    self.transform = frame_stft.create(transform, self.window, self.hop, model.fft_length)

  def __call__(self, samples: tf.Tensor, state: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
    model = self.model
    in_tail, out_tail, earlier, seen, *histories = self._unpack(state)
    frame = tf.concat([in_tail, samples], 0)
    spectrum = self.transform.analyse(frame)
    log_power, frame_level = model.log_powers(spectrum.power)  # [1, 1, bins], [1, 1, 1]
    level, earlier, seen = model.sliding_level.step(frame_level[0, 0], earlier, seen)
    x = model.project_in(model.relative(log_power, level) * 0.1)[0]
    for i, block in enumerate(model.blocks):
      x, histories[i] = block.step(x, histories[i])
    gain = model.mask(x[None], self._floor)
    enhanced = self.transform.synthesise(spectrum, gain)
    summed = tf.concat([out_tail, tf.zeros([self.hop])], 0) + enhanced
    return summed[:self.hop], self._pack([frame[self.hop:], summed[self.hop:], earlier, seen,
                                          *histories])
