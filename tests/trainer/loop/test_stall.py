"""Tests for trainer.loop.stall: a stalled call is logged about, and a stop request during a stall is honoured at once."""

import threading
import time

import tensorflow as tf

from trainer.loop import stall


class StallWatchTest(tf.test.TestCase):

  def watch(self, lines, after=0.3):
    return stall.StallWatch(after, "check the service.", log=lines.append)

  def test_a_quick_call_returns_its_value_quietly(self):
    lines = []
    self.assertEqual(self.watch(lines)(lambda: 7, lambda: 0), 7)
    self.assertEmpty(lines)

  def test_a_stall_is_logged_while_it_lasts_and_the_call_still_returns(self):
    lines = []
    self.assertEqual(self.watch(lines)(lambda: time.sleep(1.1) or "done", lambda: 5), "done")
    self.assertBetween(len(lines), 2, 4)  # at 0.3 s, then every 0.3 s (checked each 0.3 s)
    self.assertRegex(lines[0], r"^No training step has finished for \d+ s \(at step 5\): "
                     r"check the service\.$")
    first = []
    self.watch(first)(lambda: time.sleep(0.5), lambda: 0, first=True)
    self.assertIn("(at step 0): compiling the step (the first call), or check", first[0])

  def test_steps_that_move_on_are_not_a_stall(self):
    lines, steps = [], [0]

    def slow_but_moving():
      for _ in range(8):
        time.sleep(0.1)
        steps[0] += 1

    self.watch(lines, after=0.5)(slow_but_moving, lambda: steps[0], lambda: True)
    self.assertEmpty(lines)  # a stop request alone does not abandon a moving call

  def test_a_stop_request_during_a_stall_abandons_the_call_at_once(self):
    release, lines = threading.Event(), []
    stop = threading.Timer(0.6, lambda: None)
    start = time.monotonic()
    stop.start()
    with self.assertRaises(stall.Abandoned) as raised:
      self.watch(lines)(release.wait, lambda: 3, lambda: not stop.is_alive())
    self.assertLess(time.monotonic() - start, 3)
    self.assertGreaterEqual(raised.exception.waited, 0.3)
    release.set()  # the helper thread ends

  def test_the_calls_error_is_raised_here(self):
    with self.assertRaisesRegex(ValueError, "bad batch"):
      self.watch([])(lambda: (_ for _ in ()).throw(ValueError("bad batch")), lambda: 0)


if __name__ == "__main__":
  tf.test.main()
