"""Real-time enhancement with a causal model: `feed(samples)` returns what is ready, carrying every piece of state between calls.

    streamer = stream.Streamer(stream.MaskStep(model))   # a causal MaskDenoiser
    for block in microphone:                             # any sizes: 1 sample, 7, a hop, ...
      speaker.write(streamer.feed(block))
    speaker.write(streamer.flush())                      # the rest, as the whole clip ends

Concatenated, the output equals the model's offline output on the same audio,
with the same share of the input kept (`kept_input.enhance`).
A step takes one hop of samples and the state - one float32 vector, so the
same step runs from a SavedModel (`trainer.export` writes it as the
`stream_step` signature) or outside Python - and returns a hop of output and
the new state. `Streamer` does the rest on the host: blocks of any size in,
the offline model's leading samples cut, the end of a clip on `flush`.
"""

from typing import Callable, List, Optional, Tuple

import numpy as np
import tensorflow as tf

from trainer.models import layers
from trainer.models import mask as mask_lib
from trainer.serving import kept_input
from trainer.serving import transforms

# step(samples [hop], state [size]) -> (output [hop], state [size])
StepFn = Callable[[tf.Tensor, tf.Tensor], Tuple[tf.Tensor, tf.Tensor]]


class MaskStep:
  """One hop of a causal `MaskDenoiser` with its state as one vector: the STFT's overlap in
  and out, the level's recent frames (or, for a level over everything so far, their sum)
  and count, and each dilated conv's frame history.

  Attributes: `hop`, `lead` (the offline model's zeros before the first
  sample, which the stream's output starts with), `latency` (samples: an
  output sample leaves at most this long after the input sample at its
  position arrived: the analysis window less one sample), `state_size`.
  `transform`: how a frame's STFT and its inverse are computed
  (trainer.serving.transforms: fft, matmul or rfft). `keep_input`,
  `keep_presence`: the share of the input kept (trainer.serving.kept_input), as
  a floor on the gain.
  """

  def __init__(self, model: mask_lib.MaskDenoiser, *, transform: str = "fft",
               keep_input=kept_input.KEEP, keep_presence=kept_input.PRESENCE_KEEP):
    if not isinstance(model, mask_lib.MaskDenoiser) or not model.causal:
      raise ValueError("Only a causal mask model streams (train it with --causal): a model "
                       "that looks ahead needs audio that has not arrived yet.")
    self.model, self.keep = model, (keep_input, keep_presence)
    self.hop, self.window = model.hop, model.window
    self.lead = self.window - self.hop
    self.latency = self.window - 1
    hidden = model.project_in.kernel.shape[-1]
    recent = [model.level_frames - 1] if model.level_frames else []
    self._shapes = [[self.lead], [self.lead], recent, []] + [
        [block.conv.history, hidden] for block in model.blocks]
    self.state_size = sum(int(np.prod(shape)) for shape in self._shapes)
    self.transform = transforms.create(transform, self.window, self.hop, model.fft_length)

  def initial_state(self) -> tf.Tensor:
    return tf.zeros([self.state_size])

  def signature(self):
    """The step as the exports carry it: a tf.function of named inputs `samples [hop]` and
    `state`, returning `samples`, `state` and `info` (hop, lead, latency)."""
    info = tf.constant([self.hop, self.lead, self.latency], tf.int32)

    def stream_step(samples, state):
      """One hop of samples and the stream's state -> a hop of output and the state."""
      out, new_state = self(samples, state)
      return {"samples": out, "state": new_state, "info": tf.identity(info)}

    return tf.function(stream_step, input_signature=[
        tf.TensorSpec([self.hop], tf.float32, name="samples"),
        tf.TensorSpec([self.state_size], tf.float32, name="state")])

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
    gain = model.mask(x[:, None], kept_input.bin_shares(model, *self.keep))
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

  def _pack(self, parts: List[tf.Tensor]) -> tf.Tensor:
    return tf.concat([tf.reshape(part, [-1]) for part in parts], 0)

  def _unpack(self, state: tf.Tensor) -> List[tf.Tensor]:
    sizes = [int(np.prod(shape)) for shape in self._shapes]
    return [tf.reshape(part, shape)
            for part, shape in zip(tf.split(state, sizes), self._shapes)]


class Streamer:
  """Feeds a step any number of samples at a time.

  Args:
    step: `step(samples [hop], state) -> (output [hop], state)`.
    initial_state: the state of a new stream.
    hop: samples per step.
    lead: leading output samples to cut (the offline model's padding).
    latency: the step's algorithmic latency in samples (reported, not used).
  """

  def __init__(self, step: StepFn, initial_state, *, hop: int, lead: int, latency: int):
    self._step, self._initial = step, initial_state
    self.hop, self.lead, self.latency = hop, lead, latency
    self.reset()

  @classmethod
  def for_mask_model(cls, model: mask_lib.MaskDenoiser, *, keep_input=kept_input.KEEP,
                     keep_presence=kept_input.PRESENCE_KEEP) -> "Streamer":
    step = MaskStep(model, keep_input=keep_input, keep_presence=keep_presence)
    return cls(tf.function(step), step.initial_state(), hop=step.hop, lead=step.lead,
               latency=step.latency)

  @classmethod
  def from_tflite(cls, path: str, *, num_threads: Optional[int] = None) -> "Streamer":
    """The stream of a .tflite file that `trainer.export --format=tflite` wrote, run by
    TFLite's interpreter (its default delegates included) on `num_threads` threads."""
    runner = tf.lite.Interpreter(model_path=path,
                                 num_threads=num_threads).get_signature_runner()
    inputs = runner.get_input_details()
    return cls._from_signature(
        lambda samples, state: runner(samples=np.asarray(samples, np.float32),
                                      state=np.asarray(state, np.float32)),
        hop=int(inputs["samples"]["shape"][0]), state_size=int(inputs["state"]["shape"][0]))

  @classmethod
  def from_saved_model(cls, loaded) -> "Streamer":
    """The stream of a loaded export (tf.saved_model.load) of a causal model."""
    if "stream_step" not in loaded.signatures:
      raise ValueError("This export has no stream_step: only causal mask models stream "
                       "(train with --causal --architecture=mask, then export).")
    step = loaded.signatures["stream_step"]
    return cls._from_signature(
        lambda samples, state: step(samples=samples, state=state),
        hop=int(step.structured_input_signature[1]["samples"].shape[0]),
        state_size=int(loaded.state_size))

  @classmethod
  def _from_signature(cls, call, *, hop: int, state_size: int) -> "Streamer":
    """A stream over an exported `MaskStep.signature()`: `call(samples, state)` returns
    `samples`, `state` and `info` (hop, lead, latency: read from one call on zeros)."""
    state = np.zeros(state_size, np.float32)
    _, lead, latency = (int(v) for v in np.asarray(call(np.zeros(hop, np.float32),
                                                         state)["info"]))

    def step(samples, state):
      out = call(samples, state)
      return out["samples"], out["state"]

    return cls(step, state, hop=hop, lead=lead, latency=latency)

  def reset(self):
    """Forgets the stream: the next sample fed is the first of a new one."""
    self._state = self._initial
    self._pending = np.zeros(0, np.float32)  # fed, not yet a whole hop
    self._fed = self._emitted = 0  # samples fed and returned since the reset
    self._to_skip = self.lead

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
      blocks.append(np.asarray(block))
    out = np.concatenate(blocks) if blocks else np.zeros(0, np.float32)
    skip = min(self._to_skip, len(out))
    self._to_skip -= skip
    return out[skip:]
