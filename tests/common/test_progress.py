"""Tests for common.progress and the training loop's progress line: one rate, over the work since the last line, and the throughput it makes."""

import numpy as np
import tensorflow as tf

from common import progress
from trainer.loop import actions


class Clock:

  def __init__(self):
    self.now = 0.0

  def __call__(self):
    return self.now


class ProgressTest(tf.test.TestCase):

  def test_the_rate_is_over_the_work_since_the_last_line(self):
    clock, lines = Clock(), []
    meter = progress.Progress("train", 1000, "steps", log=lines.append, clock=clock)
    clock.now = 50.0  # a slow start: 100 steps in 50 s (a compile)
    meter.update(100, force=True)
    clock.now = 60.0  # then 200 steps in 10 s
    meter.update(300, force=True)
    self.assertEqual(lines, [
        "train: 100/1000 steps (10%), 2 steps/s over the last 100, ETA 0:07:30",
        "train: 300/1000 steps (30%), 20 steps/s over the last 200, ETA 0:00:35"])

  def test_the_training_line_derives_its_throughput_from_that_rate(self):
    clock, lines = Clock(), []
    meter = progress.Progress("train", 100, "steps", log=lines.append, clock=clock)
    log = actions.ProgressLog(meter, every=10, train_steps=100)
    metrics = {"loss": np.float32(-3.5), "grad_norm": np.float32(1.25),
               "skipped_in_call": np.int64(0)}
    clock.now = 4.0
    log(actions.Chunk(before=0, after=10, asked=10, ran=10, seconds=0.5, metrics=metrics,
                      examples_per_step=16, audio_seconds_per_example=2.0))
    self.assertEqual(lines, ["train: 10/100 steps (10%), 2.5 steps/s over the last 10, ETA "
                             "0:00:36, 40.0 examples/s, 80.0 audio-s/s, loss -3.5000, grad "
                             "norm 1.25"])


if __name__ == "__main__":
  tf.test.main()
