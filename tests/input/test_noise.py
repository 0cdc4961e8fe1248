"""Tests for input.noise: levels, determinism and the character of each kind of noise."""

from unittest import mock

import numpy as np
import tensorflow as tf

from input import noise
from input import speech

RATE = 16000


def rms(x):
  return np.sqrt(np.mean(np.square(x)))


def band_db(signal, low, high):
  power = np.abs(np.fft.rfft(signal)) ** 2
  hz = np.fft.rfftfreq(len(signal), 1 / RATE)
  return 10 * np.log10(power[(hz >= low) & (hz < high)].mean())


class NoiseTest(tf.test.TestCase):

  def test_every_generator_is_unit_rms_deterministic_and_finite(self):
    for name, make in noise.GENERATORS.items():
      a = make(np.random.default_rng(3), RATE, RATE)
      self.assertEqual(a.shape, (RATE,), msg=name)
      self.assertAllClose(rms(a), 1.0, rtol=1e-6, msg=name)
      self.assertAllEqual(a, make(np.random.default_rng(3), RATE, RATE), msg=name)
      self.assertNotAllClose(a, make(np.random.default_rng(4), RATE, RATE), msg=name)

  def test_hum_is_made_of_mains_harmonics(self):
    hum = noise.hum(np.random.default_rng(0), 4 * RATE, RATE)
    power = np.abs(np.fft.rfft(hum)) ** 2
    hz = np.fft.rfftfreq(len(hum), 1 / RATE)
    top = hz[np.argsort(power)[-5:]]
    self.assertTrue(np.allclose(top / 50, np.round(top / 50), atol=0.02) or
                    np.allclose(top / 60, np.round(top / 60), atol=0.02), top)

  def test_coloured_noise_spans_white_to_brown(self):
    slopes = []
    for seed in range(30):
      x = noise.coloured(np.random.default_rng(seed), RATE, RATE)
      slopes.append(band_db(x, 4000, 7000) - band_db(x, 200, 400))
    self.assertLess(min(slopes), -30)  # brown-ish: -6 dB/octave over ~4 octaves
    self.assertGreater(max(slopes), -8)  # white-ish

  def test_transients_are_impulsive(self):
    x = noise.transients(np.random.default_rng(1), 2 * RATE, RATE)
    frames = x[:len(x) // 160 * 160].reshape(-1, 160)
    frame_rms = np.sqrt(np.mean(frames**2, axis=1))
    self.assertGreater(frame_rms.max() / np.median(frame_rms), 10)

  def test_babble_lasts_longer_than_the_bank(self):
    bank = np.stack([speech.utterance(np.random.default_rng(i), RATE, RATE) for i in range(4)])
    babble = noise.babble(np.random.default_rng(2), 3 * RATE, bank)  # 3 s from 1 s talkers
    thirds = [rms(part) for part in np.split(babble, 3)]
    self.assertGreater(min(thirds), 0.5 * max(thirds))

  def test_babble_is_cut_from_the_bank(self):
    t = np.arange(RATE) / RATE
    tones = np.array([100.0, 300.0, 500.0, 700.0, 900.0, 1100.0, 1300.0, 1500.0, 1700.0])
    bank = np.sin(2 * np.pi * tones[:, None] * t[None])
    babble = noise.babble(np.random.default_rng(2), RATE // 2, bank)
    power = np.abs(np.fft.rfft(babble)) ** 2
    hz = np.fft.rfftfreq(len(babble), 1 / RATE)
    present = [f for f in tones if power[np.argmin(np.abs(hz - f))] > 1e-3 * power.max()]
    self.assertBetween(len(present), 3, 8)
    self.assertAllClose(rms(babble), 1.0, rtol=1e-6)

  def test_mixture_is_unit_rms_and_varies(self):
    bank = np.random.default_rng(0).normal(size=(4, RATE))
    mixes = [noise.mixture(np.random.default_rng(s), RATE, RATE, bank) for s in range(10)]
    for mix in mixes:
      self.assertAllClose(rms(mix), 1.0, rtol=1e-6)
    self.assertGreater(np.std([band_db(m, 4000, 7000) - band_db(m, 100, 300) for m in mixes]),
                       3.0)

  def test_a_share_of_mixtures_is_one_steady_coloured_noise_alone(self):
    # A marked steady noise: a mixture that returns it untouched has nothing else in it and
    # no level changes. The kinds that join at random are cheap stand-ins, never the mark.
    marked = np.full(RATE // 16, 1.0)
    bank = np.ones((4, RATE // 16))
    stand_ins = {kind: lambda rng, n, rate: np.ones(n) for kind in noise.GENERATORS}
    with mock.patch.object(noise, "coloured", lambda rng, n, rate: marked), \
         mock.patch.dict(noise.GENERATORS, stand_ins):
      alone = [noise.mixture(np.random.default_rng(s), RATE // 16, RATE, bank) is marked
               for s in range(1000)]
    self.assertBetween(np.mean(alone), noise.STEADY_ALONE - 0.05, noise.STEADY_ALONE + 0.05)


if __name__ == "__main__":
  tf.test.main()
