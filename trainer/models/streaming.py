"""What every model's stream step shares: its state as one float32 vector of fixed size, cut into the shapes of its layers' states, and the signature the exports carry."""

from typing import List, Sequence

import numpy as np
import tensorflow as tf


class StreamStep:
  """A model's stream, one hop at a time: `step(samples [hop], state) -> (samples, state)`.

  Each architecture's module defines its subclass beside its offline pass and
  composes it from its layers' steps. Subclasses set `hop`, `lead` (the
  offline model's leading output samples, which the stream's output starts
  with), `latency` (samples: an output sample leaves at most this long after
  the input sample at its position arrived) and the shapes of their state's
  parts (`_set_state_shapes`).
  """

  hop: int
  lead: int
  latency: int

  def _set_state_shapes(self, shapes: Sequence[Sequence[int]]):
    self._shapes = [list(shape) for shape in shapes]
    self.state_size = sum(int(np.prod(shape)) for shape in self._shapes)

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

  def __call__(self, samples: tf.Tensor, state: tf.Tensor):
    raise NotImplementedError

  def _pack(self, parts: List[tf.Tensor]) -> tf.Tensor:
    return tf.concat([tf.reshape(part, [-1]) for part in parts], 0)

  def _unpack(self, state: tf.Tensor) -> List[tf.Tensor]:
    sizes = [int(np.prod(shape)) for shape in self._shapes]
    return [tf.reshape(part, shape)
            for part, shape in zip(tf.split(state, sizes), self._shapes)]
