"""Fixtures shared by the test modules: the one MirroredStrategy, a tiny model and step, indexed splits, the repository and its programs.

Several MirroredStrategy instances in one process can collide on collective
instance keys, so every test module shares `mirrored()` (over the two logical
CPUs that conftest.py makes).
"""

import contextlib
import functools
import glob
import json
import os
import subprocess
import sys
import time
import types

import numpy as np
import soundfile
import tensorflow as tf

from input import decoders
from input import records
from trainer import optim
from trainer import step as step_lib
from trainer.loop import controller
from trainer.models import contract

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A trainer.main run small enough for tests: cpu.flags at 8 kHz, a tiny corpus and model.
TINY = [
    "--flagfile=cpu.flags", "--cpu_replicas=2", "--sample_rate=8000",
    "--synthetic_examples=32", "--synthetic_eval_examples=6", "--synthetic_seconds=0.5",
    "--crop_seconds=0.5", "--hidden=8", "--depth=2", "--attention_heads=2",
    "--global_batch_size=8", "--steps_per_loop=5", "--log_every=5", "--checkpoint_every=10",
    "--eval_every=10", "--eval_clips=2", "--schedule=constant", "--deterministic_input"]


def env(**overrides) -> dict:
  """The environment for a child process of the suite: this one, quiet TensorFlow, the repo
  importable from anywhere."""
  return {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": REPO, **overrides}


def worker_processes(pid: int) -> dict:
  """{task index: pid} of the child processes of `pid` that have a TF_CONFIG (a launcher's
  workers)."""
  found = {}
  for path in glob.glob("/proc/[0-9]*/stat"):
    try:
      with open(path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
      if int(fields[1]) != pid:
        continue
      child = int(path.split("/")[2])
      with open(f"/proc/{child}/environ", "rb") as f:
        environ = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
      found[json.loads(environ[b"TF_CONFIG"])["task"]["index"]] = child
    except (OSError, KeyError, ValueError):
      continue
  return found


def run_module(module: str, *args, timeout=600, cwd=REPO, **kwargs):
  """Runs `python -m module args` to completion; returns the CompletedProcess (text output)."""
  return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, capture_output=True,
                        text=True, timeout=timeout, env=kwargs.pop("env", None) or env(),
                        **kwargs)


def stop_when(child: subprocess.Popen, ready, signum: int, *, timeout: float = 120):
  """Sends `signum` to `child` once `ready()` holds (polled), then waits for it to end;
  returns `(exit code, its stderr)`. The child is killed if anything goes wrong."""
  try:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not ready():
      time.sleep(0.1)
    child.send_signal(signum)
    err = child.stderr.read().decode()
    return child.wait(timeout=60), err
  finally:
    child.kill()


@contextlib.contextmanager
def read_only(directory: str):
  """Makes `directory` and everything in it refuse writes for the block, even by root (who
  ignores permission bits: then the files are made immutable, `chattr -R +i`)."""
  if os.geteuid() == 0:
    subprocess.run(["chattr", "-R", "+i", directory], check=True)
    undo = ["chattr", "-R", "-i", directory]
  else:
    subprocess.run(["chmod", "-R", "a-w", directory], check=True)
    undo = ["chmod", "-R", "u+w", directory]
  try:
    yield directory
  finally:
    subprocess.run(undo, check=True)


@functools.lru_cache(maxsize=None)
def mirrored() -> tf.distribute.MirroredStrategy:
  return tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])


@functools.lru_cache(maxsize=None)
def one_device() -> tf.distribute.OneDeviceStrategy:
  return tf.distribute.OneDeviceStrategy("/cpu:0")


# The tiny training problem: a 3-tap FIR model on 32-sample examples.
TIME = 32


class Tiny(tf.Module):
  """A 3-tap FIR filter plus bias: the smallest model with a real gradient."""

  def __init__(self):
    super().__init__()
    self.kernel = tf.Variable(np.array([0.1, 0.5, 0.2], np.float32).reshape(3, 1, 1))
    self.bias = tf.Variable(0.05)

  def __call__(self, x):
    y = tf.nn.conv1d(x[..., None], tf.cast(self.kernel, x.dtype), 1, "SAME")[..., 0]
    return y + tf.cast(self.bias, x.dtype)


def l1(clean, prediction):
  return tf.reduce_mean(tf.abs(clean - prediction), axis=-1)


def data(num=64, seed=0):
  rng = np.random.default_rng(seed)
  clean = rng.normal(size=[num, TIME]).astype(np.float32)
  return {"noisy": clean + 0.3 * rng.normal(size=[num, TIME]).astype(np.float32),
          "clean": clean}


def iterator(strategy, examples, per_replica_batch):
  """Per-replica batches in stream order: replica r of step k gets batch k*R + r."""
  fn = lambda _: tf.data.Dataset.from_tensor_slices(examples).repeat().batch(  # pylint: disable=g-long-lambda
      per_replica_batch, drop_remainder=True)
  return iter(strategy.distribute_datasets_from_function(fn))


def build(strategy, model_fn=Tiny, learning_rate=0.01, **kwargs):
  """`(model, train_step)`: a fresh model and AdamW under `strategy`, and their step."""
  with strategy.scope():
    model = model_fn()
    optimizer = optim.AdamW(learning_rate, weight_decay=0.01)
    loss_scale = kwargs.pop("loss_scale", None)
    loss_scale = loss_scale() if callable(loss_scale) else loss_scale
  kwargs.setdefault("global_batch_size", 8)
  return model, step_lib.make_train_step(model, l1, optimizer, strategy,
                                         loss_scale=loss_scale, **kwargs)


def weights(model):
  return [v.numpy() for v in contract.tf_variables(model)]


# The outer loop with a scripted step and checkpoint manager.
class ScriptedStep:
  """Reports, chunk by chunk, its longest run of non-finite steps (with a finite loss)."""

  def __init__(self, longest_streaks, *, batches=10**9):
    self.global_step = tf.Variable(0, dtype=tf.int64)
    self.loss_scale = types.SimpleNamespace(skipped_steps=tf.Variable(0, dtype=tf.int64))
    self._streaks = list(longest_streaks)
    self._batches = batches

  def __call__(self, iterator, num_steps):
    del iterator
    ran = min(num_steps, self._batches)
    self._batches -= ran
    self.global_step.assign_add(ran)
    streak = float(self._streaks.pop(0))
    return dict(global_step=self.global_step, skipped_steps=self.loss_scale.skipped_steps,
                steps=tf.constant(float(ran)), skipped_in_call=tf.constant(0.0),
                nonfinite_streak=tf.constant(streak), longest_nonfinite_streak=tf.constant(streak),
                loss=tf.constant(0.5), grad_norm=tf.constant(1.0),
                learning_rate=tf.constant(1e-3), loss_scale=tf.constant(1.0),
                replica_loss_sum=tf.constant([2.5]), replica_examples=tf.constant([5.0]),
                replica_grad_norm=tf.constant([1.0]), replica_nonfinite=tf.constant([0.0]))


class ScriptedManager:
  """Records the checkpoint numbers saved, as tf.train.CheckpointManager names them."""
  latest_checkpoint = "ckpt-0"

  def __init__(self):
    self.saved = []

  def save(self, checkpoint_number):
    self.saved.append(checkpoint_number)
    self.latest_checkpoint = f"ckpt-{checkpoint_number}"


def loop_config(**overrides):
  """A LoopConfig for the tests: 20 steps in chunks of 5, no checkpoints, evals or logs
  on the way, 4 non-finite steps in a row allowed; `overrides` replace any field."""
  fields = dict(train_steps=20, steps_per_loop=5, log_every=100, checkpoint_every=100,
                eval_every=0, max_skipped_steps=4, examples_per_step=1,
                audio_seconds_per_example=1.0)
  return controller.LoopConfig(**dict(fields, **overrides))


# Tiny splits whose examples carry their own index, so coverage can be counted.
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


def indexed_store(data_dir, kind, *, num_examples, num_shards, segment_samples=64,
                  sample_rate=8000, split=None):
  """A source store whose example i holds i (as int16 PCM) everywhere."""
  return records.write_split(
      ((np.full([segment_samples], i, np.int16), f"{kind}{i}") for i in range(num_examples)),
      data_dir, split or kind, num_shards=num_shards, sample_rate=sample_rate,
      segment_samples=segment_samples, kind=kind)


def indices(clean_batch) -> list:
  """Example indices of a float32 clean batch written by `indexed_split`."""
  return [int(round(v)) for v in np.asarray(clean_batch)[:, 0] * 32768.0]


def saved_run(directory, values=(1.0, 2.0, 3.0)):
  """A checkpoint manager in `directory` with one checkpoint per value (steps 1, 2, 3...)."""
  variable = tf.Variable(0.0)
  checkpoint = tf.train.Checkpoint(v=variable)
  manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=5)
  for step, value in enumerate(values, 1):
    variable.assign(value)
    manager.save(checkpoint_number=step)
  return manager


AUDIO_KINDS = decoders.FORMATS


def write_audio(path, signal, rate, kind="wav16"):
  """Writes `signal` (samples, or samples x channels) as one of `AUDIO_KINDS`; a float WAV
  keeps NaN and samples beyond full scale."""
  os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
  container, subtype = AUDIO_KINDS[kind]
  soundfile.write(path, np.asarray(signal, np.float64 if kind != "float" else np.float32),
                  rate, subtype=subtype, format=container)


def sine(seconds, rate, frequency=440.0, amplitude=0.5):
  return amplitude * np.sin(2 * np.pi * frequency * np.arange(int(seconds * rate)) / rate)
