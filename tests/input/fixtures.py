"""Tiny splits whose examples carry their own index, so coverage can be counted."""

import numpy as np

from input import records


def indexed_split(data_dir, *, num_examples, num_shards, segment_samples=64,
                  sample_rate=8000, compression="none", split="train", overwrite=False):
  """Example i has clean == i (as int16 PCM) everywhere and noisy == i + 1000 - sample."""

  def examples():
    for i in range(num_examples):
      clean = np.full([segment_samples], i, np.int16)
      noisy = (clean + 1000 - np.arange(segment_samples)).astype(np.int16)
      yield noisy, clean, f"ex{i}"

  return records.write_split(examples(), data_dir, split, num_shards=num_shards,
                             sample_rate=sample_rate, segment_samples=segment_samples,
                             compression=compression, overwrite=overwrite)


def indices(clean_batch) -> list:
  """Example indices of a float32 clean batch written by `indexed_split`."""
  return [int(round(v)) for v in np.asarray(clean_batch)[:, 0] * 32768.0]
