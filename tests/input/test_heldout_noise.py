"""Tests for input.heldout_noise: the coloured noises have their textbook slopes, babble is made of the other voices, the recorded noise is its recording."""

import numpy as np
import tensorflow as tf

from input import heldout_noise

RATE = 16000


def slope_db_per_octave(x):
  """Least-squares slope of the power spectrum over 100 Hz - 6.4 kHz, in dB per octave."""
  power = np.abs(np.fft.rfft(x)) ** 2
  hz = np.fft.rfftfreq(len(x), 1 / RATE)
  keep = (hz > 100) & (hz < 6400)
  return np.polyfit(np.log2(hz[keep]), 10 * np.log10(power[keep]), 1)[0]


class HeldoutNoiseTest(tf.test.TestCase):

  def test_coloured_noises_have_their_slopes(self):
    rng = np.random.default_rng(0)
    for kind, expected in (("white", 0.0), ("pink", -3.0), ("brown", -6.0)):
      x = heldout_noise.noise(kind, rng, 8 * RATE, RATE, others=[])
      self.assertAllClose(np.sqrt(np.mean(x**2)), 1.0, rtol=1e-6)
      self.assertAllClose(slope_db_per_octave(x), expected, atol=1.0, msg=kind)

  def test_babble_is_made_of_the_other_voices(self):
    t = np.arange(RATE) / RATE
    others = [np.sin(2 * np.pi * f * t) for f in (300.0, 700.0)]
    babble = heldout_noise.noise("babble", np.random.default_rng(1), RATE, RATE, others)
    power = np.abs(np.fft.rfft(babble)) ** 2
    self.assertGreater(power[[300, 700]].sum() / power.sum(), 0.99)

  def test_recorded_noise_is_its_recording_repeated(self):
    recording = np.random.default_rng(2).normal(size=RATE // 4)
    x = heldout_noise.noise("recorded", np.random.default_rng(3), RATE, RATE, [], recording)
    self.assertAllClose(x[:RATE // 4], x[RATE // 4:RATE // 2])
    self.assertAllClose(np.sqrt(np.mean(x**2)), 1.0, rtol=1e-6)
    with self.assertRaisesRegex(ValueError, "needs its recording"):
      heldout_noise.noise("recorded", np.random.default_rng(3), RATE, RATE, [])


if __name__ == "__main__":
  tf.test.main()
