"""Tests for input.audio's PCM conversion and window starts (hop-spaced windows, a tail window that ends at the end, none padded)."""

import numpy as np
import tensorflow as tf

from input import audio


class ToInt16Test(tf.test.TestCase):

  def test_to_int16_counts_clipping(self):
    pcm, clipped = audio.to_int16(np.array([0.5, 1.2, -1.0, -1.5]))
    self.assertEqual(pcm.tolist(), [16384, 32767, -32768, -32768])
    self.assertEqual(clipped, 2)


class WindowStartsTest(tf.test.TestCase):

  def test_windows_never_run_past_the_end(self):
    self.assertEqual(audio.window_starts(10, 4, 4), [0, 4, 6])  # the tail ends at 10
    self.assertEqual(audio.window_starts(12, 4, 4), [0, 4, 8])  # fits: no extra tail
    self.assertEqual(audio.window_starts(10, 4, 3), [0, 3, 6])
    self.assertEqual(audio.window_starts(10, 4, 4, tail=False), [0, 4])
    self.assertEqual(audio.window_starts(4, 4, 1), [0])
    self.assertEqual(audio.window_starts(3, 4, 4), [])  # shorter than one window
    for length, window, hop in ((1000, 64, 48), (999, 100, 7), (5, 5, 2)):
      starts = audio.window_starts(length, window, hop)
      self.assertEqual(starts[-1] + window, length)
      self.assertTrue(all(b - a <= hop for a, b in zip(starts, starts[1:])))


if __name__ == "__main__":
  tf.test.main()
