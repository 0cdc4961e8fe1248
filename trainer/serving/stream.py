"""Real-time enhancement with a causal spectral-mask model: `feed(samples)` returns what is ready, carrying every piece of state between calls.

    streamer = stream.MaskStreamer(model)        # a causal trainer.models.mask.MaskDenoiser
    for block in microphone:                     # any sizes: 1 sample, 7, a hop, ...
      speaker.write(streamer.feed(block))
    speaker.write(streamer.flush())              # the rest, as the whole file would end

Concatenated, the output equals the model's offline output on the same audio.
The state (the STFT's overlap in and out, each dilated convolution's history
of frames, the running level) is a tuple of tensors that `step` takes and
returns, one hop per call, so the same step can run outside Python.
"""

from typing import Tuple

import numpy as np
import tensorflow as tf

from trainer.models import mask as mask_lib

State = Tuple[tf.Tensor, ...]


class MaskStreamer:
  """Streams a causal `MaskDenoiser`, one hop of `model.hop` samples per step.

  `latency` is the algorithmic latency in samples: an output sample leaves at
  most that long after the input sample at the same position arrived (the
  analysis window, less one sample).
  """

  def __init__(self, model: mask_lib.MaskDenoiser):
    if not isinstance(model, mask_lib.MaskDenoiser) or not model.causal:
      raise ValueError("Only a causal mask model streams (train it with --causal): a model "
                       "that looks ahead needs audio that has not arrived yet.")
    self.model = model
    self.hop, self.window = model.hop, model.window
    self.lead = self.window - self.hop  # the offline model's zeros before the first sample
    self.latency = self.window - 1
    self._step = tf.function(self.step)
    self.reset()

  def reset(self):
    """Forgets the stream: the next sample fed is the first of a new one."""
    self._state = self.initial_state()
    self._pending = np.zeros(0, np.float32)  # fed, not yet a whole hop
    self._fed = self._emitted = 0  # samples fed and returned since the reset
    self._to_skip = self.lead  # leading output samples the offline model cuts off

  def initial_state(self) -> State:
    """`(input overlap, output overlap, level sum, frames, one history per block)`."""
    hidden = self.model.project_in.kernel.shape[-1]
    return (tf.zeros([self.lead]), tf.zeros([self.lead]), tf.zeros([]), tf.zeros([]),
            *(tf.zeros([block.conv.history, hidden]) for block in self.model.blocks))

  def step(self, samples: tf.Tensor, state: State) -> Tuple[tf.Tensor, State]:
    """One hop: `samples [hop]` and the state in, `[hop]` output samples and the state
    out (the output lags the offline model's by `lead` samples)."""
    model = self.model
    in_tail, out_tail, level_sum, frames, *histories = state
    frame = tf.concat([in_tail, samples], 0)
    spectrum = tf.signal.stft(frame[None], self.window, self.hop, model.fft_length)  # [1,1,bins]
    log_power, frame_level = model.log_powers(spectrum)
    level_sum, frames = level_sum + frame_level[0, 0, 0], frames + 1.0
    features = model.relative(log_power, level_sum / frames)
    x = model.project_in(features * 0.1)[:, 0]  # [1, hidden]
    new_histories = []
    for block, history in zip(model.blocks, histories):
      frames_seen = tf.concat([history, x], 0)
      x = x + mask_lib.layers.glu(block.conv.last(frames_seen[None]))
      new_histories.append(frames_seen[1:])
    gain = model.mask(x[:, None])
    enhanced = tf.signal.inverse_stft(
        spectrum * tf.complex(gain, tf.zeros_like(gain)), self.window, self.hop,
        model.fft_length, window_fn=tf.signal.inverse_stft_window_fn(self.hop))[0]
    summed = tf.concat([out_tail, tf.zeros([self.hop])], 0) + enhanced
    return summed[:self.hop], (frame[self.hop:], summed[self.hop:], level_sum, frames,
                               *new_histories)

  def feed(self, samples) -> np.ndarray:
    """Takes any number of samples (float32 at the model's rate); returns the output
    samples that are final now."""
    samples = np.asarray(samples, np.float32).reshape(-1)
    self._fed += len(samples)
    out = self._run(samples)
    self._emitted += len(out)
    return out

  def flush(self) -> np.ndarray:
    """The rest of the stream, as the offline model ends a clip (zeros after the last
    sample); the next `feed` starts a new stream."""
    missing, out = self._fed - self._emitted, []
    while sum(map(len, out)) < missing:
      out.append(self._run(np.zeros(self.hop - len(self._pending), np.float32)))
    self.reset()
    return np.concatenate(out)[:missing] if out else np.zeros(0, np.float32)

  def _run(self, samples: np.ndarray) -> np.ndarray:
    """Steps over every whole hop pending; the output, less the offline model's lead."""
    self._pending = np.concatenate([self._pending, samples])
    blocks = []
    while len(self._pending) >= self.hop:
      block, self._state = self._step(tf.constant(self._pending[:self.hop]), self._state)
      self._pending = self._pending[self.hop:]
      blocks.append(block.numpy())
    out = np.concatenate(blocks) if blocks else np.zeros(0, np.float32)
    skip = min(self._to_skip, len(out))
    self._to_skip -= skip
    return out[skip:]
