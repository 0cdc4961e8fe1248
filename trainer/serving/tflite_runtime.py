"""The TFLite runtime that runs exported files: LiteRT (ai-edge-litert) where installed, else tf.lite's interpreter, which newer TensorFlow deprecates in LiteRT's favour."""

import importlib.util
from typing import Optional

import tensorflow as tf

LITERT, TF_LITE = "ai-edge-litert", "tf.lite"


def name() -> str:
  """The runtime `interpreter` uses here."""
  return LITERT if importlib.util.find_spec("ai_edge_litert") else TF_LITE


def interpreter(path: str, *, num_threads: Optional[int] = None):
  """An interpreter of the .tflite file at `path` (its default delegates included) on
  `num_threads` threads, from `name()`'s runtime; both have the same interface."""
  if name() == LITERT:
    from ai_edge_litert import interpreter as litert  # pylint: disable=g-import-not-at-top
    return litert.Interpreter(model_path=path, num_threads=num_threads)
  return tf.lite.Interpreter(model_path=path, num_threads=num_threads)
