"""One hop of a causal spectral-mask model as a stream step (trainer.serving.stream_step)."""

from typing import Tuple

import tensorflow as tf

from trainer.models import layers
from trainer.models import mask as mask_lib
from trainer.serving import kept_input
from trainer.serving import stream_step
from trainer.serving import transforms


class MaskStep(stream_step.StreamStep):
  """One hop of a causal `MaskDenoiser` (made by `stream.step_for`) with its state as one vector: the STFT's overlap in
  and out, the level's recent frames (or, for a level over everything so far, their sum)
  and count, and each dilated conv's frame history.

  Its `lead` is the offline model's padding before the first sample, its
  `latency` the analysis window less one sample.
  `transform`: how a frame's STFT and its inverse are computed
  (trainer.serving.transforms: fft, matmul or rfft). `keep_input`,
  `keep_presence`: the share of the input kept (trainer.serving.kept_input), as
  a floor on the gain.
  """

  def __init__(self, model: mask_lib.MaskDenoiser, *, transform: str = "fft",
               keep_input=kept_input.KEEP, keep_presence=kept_input.PRESENCE_KEEP):
    self.model = model
    # Per bin, once: the shares are fixed for the stream.
    self._shares = kept_input.bin_shares(model, keep_input, keep_presence)
    self.hop, self.window = model.hop, model.window
    self.lead = self.window - self.hop
    self.latency = self.window - 1
    hidden = model.project_in.kernel.shape[-1]
    recent = [model.level_frames - 1] if model.level_frames else []
    self._set_state_shapes([[self.lead], [self.lead], recent, []] + [
        [block.conv.history, hidden] for block in model.blocks])
    self.transform = transforms.create(transform, self.window, self.hop, model.fft_length)

  def __call__(self, samples: tf.Tensor, state: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
    model = self.model
    in_tail, out_tail, recent, frames, *histories = self._unpack(state)
    frame = tf.concat([in_tail, samples], 0)
    spectrum = self.transform.analyse(frame)
    log_power, frame_level = model.log_powers(spectrum.power)  # [1, 1, bins], [1, 1, 1]
    level, recent, frames = self._level(recent, frames, frame_level[0, 0, 0])
    x = model.project_in(model.relative(log_power, level) * 0.1)[:, 0]
    new_histories = []
    for block, history in zip(model.blocks, histories):
      seen = tf.concat([history, x], 0)  # the frames the block's causal conv sees
      x = x + layers.glu(block.conv.last(seen[None]))
      new_histories.append(seen[1:])
    gain = model.mask(x[:, None], self._shares)
    enhanced = self.transform.synthesise(spectrum, gain)
    summed = tf.concat([out_tail, tf.zeros([self.hop])], 0) + enhanced
    return summed[:self.hop], self._pack([frame[self.hop:], summed[self.hop:], recent,
                                          frames, *new_histories])

  def _level(self, recent: tf.Tensor, frames: tf.Tensor, current: tf.Tensor):
    """`(level, recent, frames)`: the frame's level as `MaskDenoiser.causal_level` gives
    it, from the `recent` frames' levels (zeros before the first; a scalar sum when the
    level is over everything so far) and their count, which stops at the window."""
    window = self.model.level_frames
    if window is None:
      total, frames = recent + current, frames + 1.0
      return total / frames, total, frames
    frames = tf.minimum(frames + 1.0, float(window))
    level = (tf.reduce_sum(recent) + current) / frames
    return level, tf.concat([recent, current[None]], 0)[1:], frames
