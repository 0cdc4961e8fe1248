"""What the step, the eval and serving need to know of a model: the `Denoiser` protocol every architecture here follows, and the two facts the step needs of any model (this package's tf.Modules and Keras 3 models alike, without importing Keras)."""

from typing import Optional, Protocol

import tensorflow as tf

from trainer.models import streaming


class Denoiser(Protocol):
  """An architecture as serving and export see it; nothing outside a model asks what it is.

  Attributes:
    sample_rate: the rate it runs at (Hz).
    causal: no output sample depends on later input, so it streams.
    lookahead: future input samples an output sample depends on (None: the clip's).
    tflite_transform: the frame STFT its TFLite step computes (one of
      ops.frame_stft.KINDS), or None if it has no STFT.
  """

  sample_rate: int
  causal: bool
  lookahead: Optional[int]
  tflite_transform: Optional[str]

  def __call__(self, noisy: tf.Tensor) -> tf.Tensor:
    """`[batch, time]` noisy audio -> the estimate, in the input's dtype."""

  def keeping(self, noisy: tf.Tensor, keep_input, keep_presence) -> tf.Tensor:
    """The estimate (float32) with those shares of the input kept (ops.kept_input), by the
    architecture's own rule."""

  def stream_step(self, *, keep_input, keep_presence,
                  transform: Optional[str] = None) -> streaming.StreamStep:
    """A causal model's stream, keeping those shares of the input; `transform`: how a model
    with an STFT computes it (its default if None). Raises ValueError if it cannot stream."""


def is_keras(model) -> bool:
  """Keras models take `training=` and collect regularisation `losses` (told apart by their
  classes, so the core never imports Keras)."""
  return any(c.__module__.split(".")[0] == "keras" for c in type(model).__mro__)


def tf_variables(module) -> list:
  """The tf.Variables behind `module.trainable_variables` (Keras 3 wraps them in `.value`)."""
  return [v if isinstance(v, tf.Variable) else v.value for v in module.trainable_variables]
