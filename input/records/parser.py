"""The graph-side parser: a batch of serialized records to (cropped) signals in one vectorized call, and PCM to float."""

from typing import Dict, Optional

import tensorflow as tf

from input.records import layout


def parse_batch(serialized: tf.Tensor, *, segment_samples: int, kind: str = "pairs",
                crop_samples: Optional[int] = None,
                crop_offsets: Optional[tf.Tensor] = None) -> Dict[str, tf.Tensor]:
  """Parses (and optionally crops) a batch of serialized examples in one go.

  Cropping cuts the byte strings before decoding (`tf.strings.substr`), so
  only the kept samples are ever converted.

  Args:
    serialized: `[batch]` string tensor of serialized tf.train.Examples.
    segment_samples: the split's segment length (from the manifest).
    kind: what the records hold (the manifest's `kind`).
    crop_samples: keep this many samples per example (default: all).
    crop_offsets: `[batch]` int32 start sample of each crop (default: 0).

  Returns:
    The kind's signals (`noisy`, `clean` for pairs): `[batch, crop_samples]` int16
    (float32 for rooms); `id`: `[batch]` string.
  """
  names = layout.KINDS[layout.check_kind(kind)]
  dtype = tf.as_dtype(layout.SAMPLE_DTYPES[kind])
  spec = {name: tf.io.FixedLenFeature([], tf.string) for name in names}
  spec["id"] = tf.io.FixedLenFeature([], tf.string, default_value="")
  features = tf.io.parse_example(serialized, spec)
  length = segment_samples if crop_samples is None else crop_samples
  out = {"id": features["id"]}
  for key in names:
    raw = features[key]
    if length != segment_samples or crop_offsets is not None:
      offsets = (tf.zeros(tf.shape(features["id"]), tf.int32) if crop_offsets is None
                 else crop_offsets)
      raw = tf.strings.substr(raw, dtype.size * offsets,
                              tf.fill(tf.shape(offsets), dtype.size * length))
    out[key] = tf.ensure_shape(tf.io.decode_raw(raw, dtype, little_endian=True),
                               [None, length])
  return out


def to_float(samples: tf.Tensor) -> tf.Tensor:
  """Parsed samples as float32 audio: int16 PCM scaled to [-1, 1), float32 as it is."""
  return pcm_to_float(samples) if samples.dtype == tf.int16 else tf.cast(samples, tf.float32)


def pcm_to_float(pcm: tf.Tensor) -> tf.Tensor:
  """int16 PCM -> float32 in [-1, 1)."""
  return tf.cast(pcm, tf.float32) * (1.0 / 32768.0)
