"""Real-time enhancement with a causal model: `feed(samples)` returns what is ready, carrying every piece of state between calls.

    stream = streamer.Streamer.for_model(model)  # any causal model
    for block in microphone:                    # any sizes: 1 sample, 7, a hop, ...
      speaker.write(stream.feed(block))
    speaker.write(stream.flush())               # the rest, as the whole clip ends

Concatenated, the output equals the model's offline output on the same audio,
with the same share of the input kept (its `keeping`). Each architecture
composes its own step (`model.stream_step`: trainer.models.streaming). A step
takes one hop of samples and the state - one float32 vector, so the same step
runs from a SavedModel (`trainer.export` writes it as the `stream_step`
signature) or outside Python - and returns a hop of output and the new state. `Streamer` does the rest on the host: blocks of any size in,
the offline model's leading samples cut, the end of a clip on `flush`.
"""

from typing import Callable, Optional, Tuple

import numpy as np
import tensorflow as tf

from ops import kept_input
from trainer.models import contract
from trainer.models import streaming
from trainer.serving import tflite_runtime

# step(samples [hop], state [size]) -> (output [hop], state [size])
StepFn = Callable[[tf.Tensor, tf.Tensor], Tuple[tf.Tensor, tf.Tensor]]


def step_for(model: contract.Denoiser, *, transform: Optional[str] = None,
             keep_input=kept_input.KEEP,
             keep_presence=kept_input.PRESENCE_KEEP) -> streaming.StreamStep:
  """The stream step of a causal model (`model.stream_step`), keeping those shares of the
  input; `transform`: how a model with an STFT computes it (None: its default).

  Raises:
    ValueError: the model looks ahead, or its stream's state would be unbounded.
  """
  if not model.causal:
    raise ValueError("Only a causal model streams (train it with --causal): a model that "
                     "looks ahead needs audio that has not arrived yet.")
  return model.stream_step(keep_input=keep_input, keep_presence=keep_presence,
                           transform=transform)


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
  def for_model(cls, model, *, keep_input=kept_input.KEEP,
                keep_presence=kept_input.PRESENCE_KEEP) -> "Streamer":
    """The stream of a causal model in TensorFlow (`step_for`)."""
    step = step_for(model, keep_input=keep_input, keep_presence=keep_presence)
    return cls(tf.function(step), step.initial_state(), hop=step.hop, lead=step.lead,
               latency=step.latency)

  @classmethod
  def from_tflite(cls, path: str, *, num_threads: Optional[int] = None) -> "Streamer":
    """The stream of a .tflite file that `trainer.export --format=tflite` wrote, run by
    LiteRT or tf.lite (`tflite_runtime`, default delegates included) on `num_threads`
    threads."""
    runner = tflite_runtime.interpreter(path, num_threads=num_threads).get_signature_runner()
    inputs = runner.get_input_details()
    return cls._from_signature(
        lambda samples, state: runner(samples=np.asarray(samples, np.float32),
                                      state=np.asarray(state, np.float32)),
        hop=int(inputs["samples"]["shape"][0]), state_size=int(inputs["state"]["shape"][0]))

  @classmethod
  def from_saved_model(cls, loaded) -> "Streamer":
    """The stream of a loaded export (tf.saved_model.load) of a causal model."""
    if "stream_step" not in loaded.signatures:
      raise ValueError("This export has no stream_step: only causal models stream (train "
                       "with --causal, then export).")
    step = loaded.signatures["stream_step"]
    return cls._from_signature(
        lambda samples, state: step(samples=samples, state=state),
        hop=int(step.structured_input_signature[1]["samples"].shape[0]),
        state_size=int(loaded.state_size))

  @classmethod
  def _from_signature(cls, call, *, hop: int, state_size: int) -> "Streamer":
    """A stream over an exported `StreamStep.signature()`: `call(samples, state)` returns
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
