"""Benchmark: input throughput of this pipeline vs the raw read ceiling vs the classic "before" pipeline.

Cases, same data (10 s, 48 kHz synthetic pairs), each in a fresh process so its
peak RSS is its own:
  a  raw ceiling: TFRecordDataset read + batched parse + decode, nothing else
  b  this pipeline (input.pipeline), no augmentation
  c  this pipeline with host-side RevEcho (proba 0.5)
  d  the "before" pipeline: ZLIB float32 records, sequential per-example map,
     Python `random` + NumPy shift-and-add reverb in tf.numpy_function, no prefetch
  e  this pipeline for a run that mixes on the fly: the same examples' clean speech and
     noise from separate stores, each read, shuffled and cropped on its own (the mixing
     itself runs in the step: bench.mix)

Run: python -m bench.input [--runs 5] [--data_dir /tmp/bench_input]
"""

import argparse
import json
import os
import random as py_random
import resource
import subprocess
import sys
import time

import numpy as np
import tensorflow as tf

from bench import numpy_reverb
from bench import timing
from input import pipeline
from input import records
from input import synthetic
import ops

CASES = {
    "a": "raw ceiling: read + parse + decode",
    "b": "this pipeline, no augmentation",
    "c": "this pipeline + host RevEcho (p=0.5)",
    "d": "before: ZLIB float32, serial map, py reverb",
    "e": "this pipeline, mixing: clean + noise stores",
}


def make_data(data_dir, num_examples, seconds, sample_rate):
  """The int16 split (via input.synthetic), the same examples' clean and noise stores, and
  the same audio as ZLIB float32 records; returns `(pairs, (clean, noise), before path)`."""
  corpus = dict(num_examples=num_examples, seconds=seconds, sample_rate=sample_rate,
                num_shards=8)
  manifest = synthetic.ensure_corpus(data_dir, split="train", **corpus)
  sources = tuple(synthetic.ensure_corpus(data_dir, split=f"train-{kind}", kind=kind, **corpus)
                  for kind in ("clean", "noise"))
  before = os.path.join(data_dir, "before-float32.tfrecord.zlib")
  if not os.path.exists(before):
    serialized = tf.data.TFRecordDataset(manifest.paths)
    options = tf.io.TFRecordOptions(compression_type="ZLIB")
    with tf.io.TFRecordWriter(before + ".tmp", options) as writer:
      for batch in serialized.batch(8):
        parsed = records.parse_batch(batch, segment_samples=manifest.segment_samples)
        for noisy, clean in zip(records.pcm_to_float(parsed["noisy"]).numpy(),
                                records.pcm_to_float(parsed["clean"]).numpy()):
          writer.write(tf.train.Example(features=tf.train.Features(feature={
              k: tf.train.Feature(float_list=tf.train.FloatList(value=v))
              for k, v in (("noisy", noisy), ("clean", clean))})).SerializeToString())
    os.rename(before + ".tmp", before)
  return manifest, sources, before


def before_pipeline(path, batch, segment_samples, sample_rate):
  """The classic input pipeline this project replaces, rebuilt faithfully."""

  def parse_one(serialized):
    features = tf.io.parse_single_example(serialized, {
        k: tf.io.FixedLenFeature([segment_samples], tf.float32) for k in ("noisy", "clean")})
    return features["noisy"], features["clean"]

  reverb = ops.RevEcho(sample_rate=sample_rate)
  max_echoes, _ = reverb.bounds(segment_samples)

  def python_reverb(noisy, clean):
    if py_random.random() >= 0.5:
      return noisy, clean
    draw = ops.RevEchoParams(
        apply=np.array([True]), initial=np.array([py_random.uniform(0, 0.3)]),
        first_delay=np.array([py_random.uniform(0.01, 0.03)]),
        rt60=np.array([py_random.uniform(0.3, 1.3)]),
        noise_jitter=np.random.uniform(-1, 1, [1, 3, max_echoes, 2]),
        clean_jitter=np.random.uniform(-1, 1, [1, 3, max_echoes, 2]))
    out = numpy_reverb.rev_echo_numpy(noisy[None], clean[None], draw,
                                      sample_rate=sample_rate)
    return out[0][0].astype(np.float32), out[1][0].astype(np.float32)

  dataset = tf.data.TFRecordDataset(path, compression_type="ZLIB").repeat()
  dataset = dataset.map(parse_one)
  dataset = dataset.map(lambda n, c: tf.numpy_function(python_reverb, [n, c],
                                                       [tf.float32, tf.float32]))
  return dataset.batch(batch)


def build(case, manifest, sources, before_path, batch):
  context = tf.distribute.InputContext()
  if case == "e":
    return pipeline.make_mixing_dataset_fn(*sources, pipeline.TrainInputConfig(
        global_batch_size=batch, shuffle_buffer_mb=64))(context)
  if case == "a":
    return tf.data.TFRecordDataset(manifest.paths).repeat().batch(batch).map(
        lambda s: tuple(records.pcm_to_float(records.parse_batch(
            s, segment_samples=manifest.segment_samples)[k]) for k in ("noisy", "clean")))
  if case in "bc":
    reverb = ops.RevEcho(sample_rate=manifest.sample_rate) if case == "c" else None
    return pipeline.make_train_dataset_fn(manifest, pipeline.TrainInputConfig(
        global_batch_size=batch, shuffle_buffer_mb=64, reverb=reverb))(context)
  return before_pipeline(before_path, batch, manifest.segment_samples, manifest.sample_rate)


def run_case(args):
  """Times one case in this process; prints a JSON line."""
  manifest, sources, before_path = make_data(args.data_dir, args.num_examples, args.seconds,
                                             args.sample_rate)
  iterator = iter(build(args.case, manifest, sources, before_path, args.batch))
  batches = args.batches if args.case != "d" else max(2, args.batches // 8)

  def take():
    for _ in range(batches):
      next(iterator)

  seconds = timing.median_seconds(take, runs=args.runs)
  examples_per_s = batches * args.batch / seconds
  print(json.dumps(dict(case=args.case, examples_per_s=examples_per_s,
                        audio_s_per_s=examples_per_s * args.seconds,
                        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)))


def main():
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument("--case", choices=sorted(CASES))
  parser.add_argument("--runs", type=int, default=5)
  parser.add_argument("--batch", type=int, default=8)
  parser.add_argument("--batches", type=int, default=16)
  parser.add_argument("--num_examples", type=int, default=64)
  parser.add_argument("--seconds", type=float, default=10.0)
  parser.add_argument("--sample_rate", type=int, default=48000)
  parser.add_argument("--data_dir", default="/tmp/bench_input")
  args = parser.parse_args()
  if args.case:
    return run_case(args)

  start = time.time()
  make_data(args.data_dir, args.num_examples, args.seconds, args.sample_rate)
  print(f"data ready in {time.time() - start:.0f} s: {args.num_examples} pairs of "
        f"{args.seconds:g} s at {args.sample_rate} Hz in {args.data_dir}")
  results = {}
  for case in CASES:
    command = [sys.executable, "-m", "bench.input", "--case", case] + [
        f"--{k}={v}" for k, v in vars(args).items() if k != "case"]
    output = subprocess.run(command, capture_output=True, text=True, check=True,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")).stdout
    results[case] = json.loads(output.strip().splitlines()[-1])
  print(f"Input throughput, batch {args.batch}, medians of {args.runs} runs; "
        f"{timing.machine()}")
  print(timing.table(
      ["case", "examples/s", "audio s/s", "x before (d)", "x ceiling (a)", "peak RSS MB"],
      [(f"({c}) {CASES[c]}", r["examples_per_s"], r["audio_s_per_s"],
        r["examples_per_s"] / results["d"]["examples_per_s"],
        r["examples_per_s"] / results["a"]["examples_per_s"], r["peak_rss_mb"])
       for c, r in results.items()]))
  print("shuffle budget of (b), (c), (e): 64 MB of serialized int16 records per store; "
        "targets: (b) >= 0.8x (a), (b) >= 5x (d), (e) >= 0.9x (a)")


if __name__ == "__main__":
  main()
