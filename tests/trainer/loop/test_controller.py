"""Tests for trainer.loop.controller: skip streaks and end of data with a scripted step, open train and eval actions, a real profile with step markers."""

import glob
import os

import numpy as np
import tensorflow as tf
from tensorflow.tsl.profiler.protobuf import xplane_pb2

from trainer.loop import controller
from trainer.loop import recovery
from tests import helpers


class LoopTest(tf.test.TestCase):

  def run_loop(self, step, manager=None, log=lambda _: None, **kwargs):
    return controller.Controller(step, None, manager or helpers.ScriptedManager(),
                                 helpers.loop_config(**kwargs),
                                 summary_dir=self.create_tempdir().full_path, log=log).train()

  def test_the_end_of_the_data_stops_the_loop_and_saves_where_it_stopped(self):
    manager, lines = helpers.ScriptedManager(), []
    step = helpers.ScriptedStep([0, 0, 0, 0], batches=12)
    self.assertEqual(self.run_loop(step, manager, log=lines.append), "end of data")
    self.assertEqual((int(step.global_step.numpy()), manager.saved), (12, [12]))
    self.assertTrue(any("ran out at step 12, before train_steps=20" in l for l in lines))

  def test_data_ending_on_a_chunk_boundary_stops_after_an_empty_call(self):
    manager = helpers.ScriptedManager()
    step = helpers.ScriptedStep([0, 0, 0, 0], batches=10)
    self.assertEqual(self.run_loop(step, manager), "end of data")
    self.assertEqual((int(step.global_step.numpy()), manager.saved), (10, [10]))

  def test_a_long_enough_streak_stops_training(self):
    with self.assertRaisesRegex(recovery.Diverged, "Training diverged: 4 non-finite steps in "
                                r"a row by step 5 \(max_skipped_steps=4\); stopping. The last "
                                "good checkpoint is ckpt-0"):
      self.run_loop(helpers.ScriptedStep([4, 0, 0, 0]))

  def test_the_final_checkpoint_is_saved_once(self):
    manager = helpers.ScriptedManager()
    loop = controller.Controller(
        helpers.ScriptedStep([0] * 4), None, manager,
        helpers.loop_config(checkpoint_every=10),
        summary_dir=self.create_tempdir().full_path, log=lambda _: None)
    self.assertEqual(loop.train(), "completed")
    self.assertEqual(manager.saved, [10, 20])

  def test_a_finished_run_is_not_saved_again(self):
    manager = helpers.ScriptedManager()
    manager.latest_checkpoint = "ckpt-20"
    step = helpers.ScriptedStep([0])
    step.global_step.assign(20)
    self.assertEqual(self.run_loop(step, manager), "completed")
    self.assertEqual(manager.saved, [])


class ActionsTest(tf.test.TestCase):
  """Actions are open lists: any callable joins the controller's own."""

  def test_train_actions_see_every_chunk_and_an_eval_action_can_stop_training(self):
    chunks, judged = [], []

    def stop_above_two(step, results):
      judged.append((step, results["si_sdr"]))
      return f"si_sdr {results['si_sdr']} is enough" if results["si_sdr"] > 2 else None

    scores = iter([1.0, 3.0, 5.0])
    evaluate = lambda step: dict(si_sdr=next(scores))
    evaluate.last_step = None
    lines = []
    loop = controller.Controller(
        helpers.ScriptedStep([0] * 10), None, helpers.ScriptedManager(),
        helpers.loop_config(train_steps=40, eval_every=10), evaluate=evaluate,
        summary_dir=self.create_tempdir().full_path, log=lines.append,
        train_actions=[lambda chunk: chunks.append((chunk.before, chunk.after))],
        eval_actions=[stop_above_two])
    self.assertEqual(loop.train(), "early stopped")
    self.assertEqual(chunks, [(0, 5), (5, 10), (10, 15), (15, 20)])
    self.assertEqual(judged, [(10, 1.0), (20, 3.0)])
    self.assertIn("si_sdr 3.0 is enough", lines)


def poisoned(steps, per_step=8, total_steps=40):
  """The tiny data with NaN inputs at the given steps (each makes a non-finite step)."""
  examples = helpers.data(per_step * total_steps)
  for k in steps:
    examples["noisy"][k * per_step:(k + 1) * per_step] = np.nan
  return examples


class SkipStreakTest(tf.test.TestCase):
  """The guard counts non-finite steps in a row, step by step, across calls of a real step."""

  def run_real(self, bad_steps, **kwargs):
    strategy = tf.distribute.get_strategy()
    _, train_step = helpers.build(strategy, jit_compile=False)
    loop = controller.Controller(
        train_step, helpers.iterator(strategy, poisoned(bad_steps), 8), helpers.ScriptedManager(),
        helpers.loop_config(**kwargs), summary_dir=self.create_tempdir().full_path, log=lambda _: None)
    return loop.train(), train_step

  def test_scattered_skips_in_one_chunk_are_not_a_streak(self):
    outcome, train_step = self.run_real(range(0, 20, 2), train_steps=20, steps_per_loop=20,
                                        max_skipped_steps=3)
    self.assertEqual(outcome, "completed")
    self.assertEqual(int(train_step.loss_scale.skipped_steps.numpy()), 10)

  def test_a_streak_across_chunks_adds_up(self):
    with self.assertRaisesRegex(recovery.Diverged, "4 non-finite steps in a row by step 20"):
      self.run_real([8, 9, 10, 11], train_steps=30, steps_per_loop=10, max_skipped_steps=3)

  def test_the_step_reports_the_streak_across_calls(self):
    strategy = tf.distribute.get_strategy()
    _, train_step = helpers.build(strategy, jit_compile=False, steps_per_loop=5)
    iterator = helpers.iterator(strategy, poisoned([3, 4, 5, 6, 8]), 8)
    first, second = train_step(iterator), train_step(iterator)
    self.assertEqual((int(first["nonfinite_streak"]), int(first["longest_nonfinite_streak"])),
                     (2, 2))
    self.assertEqual((int(second["nonfinite_streak"]), int(second["longest_nonfinite_streak"])),
                     (0, 4))


def step_markers(logdir):
  """`[(name, step_num)]` of the step-marker events in the profile under `logdir`."""
  markers = []
  for path in glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb")):
    space = xplane_pb2.XSpace.FromString(open(path, "rb").read())
    for plane in space.planes:
      stat_names = {i: m.name for i, m in plane.stat_metadata.items()}
      for line in plane.lines:
        for event in line.events:
          stats = {stat_names[s.metadata_id]: s for s in event.stats}
          if "step_num" in stats and "_r" in stats:
            markers.append((plane.event_metadata[event.metadata_id].name,
                            stats["step_num"].int64_value))
  return markers


class CountingStep:
  """A real TrainStep that records how many steps each call asked for."""

  def __init__(self, train_step):
    self._train_step, self.calls = train_step, []
    self.global_step, self.loss_scale = train_step.global_step, train_step.loss_scale

  def __call__(self, iterator, num_steps):
    self.calls.append(num_steps)
    return self._train_step(iterator, num_steps)


class ProfileTest(tf.test.TestCase):

  def test_the_profile_holds_one_marked_step_per_profiled_step(self):
    strategy = tf.distribute.get_strategy()
    _, train_step = helpers.build(strategy, steps_per_loop=5, jit_compile=False)
    step = CountingStep(train_step)
    logdir = self.create_tempdir().full_path
    outcome = controller.Controller(
        step, helpers.iterator(strategy, helpers.data(), 8), helpers.ScriptedManager(),
        helpers.loop_config(train_steps=15, profile_steps=(7, 10)), summary_dir=logdir,
        log=lambda _: None).train()
    self.assertEqual(outcome, controller.Outcome.COMPLETED)
    self.assertEqual(step.calls, [5, 2, 1, 1, 1, 5])  # one step per call inside the window
    self.assertEqual(sorted(step_markers(logdir)), [("train", 7), ("train", 8), ("train", 9)])


if __name__ == "__main__":
  tf.test.main()
