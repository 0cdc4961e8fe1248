"""Tests for ops.mix: realised levels equal the draws, rooms equal a NumPy convolution, eager == XLA."""

import numpy as np
import tensorflow as tf

from ops import mix as mix_lib
from ops import stateless

RATE = 8000


def sources(batch=8, length=800, seed=0):
  rng = np.random.default_rng(seed)
  clean = (rng.normal(0, 0.1, [batch, length]) * np.sin(np.arange(length) / 40.0) ** 2)
  noise = rng.normal(0, 1.0, [batch, length]) * rng.uniform(0.01, 0.5, [batch, 1])
  return clean.astype(np.float32), noise.astype(np.float32)


def rooms(count=3, taps=300, seed=1):
  """Decaying noise after a direct path at a different delay per room."""
  rng = np.random.default_rng(seed)
  out = rng.normal(0, 0.3, [count, taps]) * np.exp(-np.arange(taps) / 60.0)
  for i in range(count):
    out[i, :5 + 3 * i] = 0.0
    out[i, 5 + 3 * i] = 1.0
  return out.astype(np.float32)


def db(x):
  return 20 * np.log10(np.sqrt(np.mean(np.square(x), axis=-1)))


class MixTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.op = mix_lib.Mix(sample_rate=RATE, rir_proba=0.5, rirs=rooms(),
                         second_noise_proba=0.5, early_ms=10.0)

  def test_realised_speech_level_and_snr_equal_the_draws(self):
    clean, noise = sources(batch=32)
    draws = self.op.draws(32, [1, 2])
    speech, mixed_noise, _ = (x.numpy() for x in self.op.components(clean, noise, draws))
    self.assertAllClose(db(speech), draws.speech_level_db, atol=0.1)
    self.assertAllClose(db(speech) - db(mixed_noise), draws.snr_db, atol=0.1)
    noisy, _ = self.op.apply(clean, noise, draws)
    self.assertAllClose(noisy, speech + mixed_noise, atol=1e-6)  # no clipping or band limit
    self.assertAllInRange(draws.snr_db, -5.0, 20.0)
    self.assertAllInRange(draws.speech_level_db, -35.0, -15.0)
    for flags in (draws.reverberate, draws.second_noise):  # both happen, both do not
      self.assertBetween(np.mean(flags), 0.2, 0.8)

  def test_rooms_equal_a_numpy_convolution_and_the_target_keeps_the_early_part(self):
    clean, noise = sources(batch=16)
    draws = self.op.draws(16, [3, 4])
    speech, _, target = (x.numpy() for x in self.op.components(clean, noise, draws))
    early = RATE // 100  # early_ms=10
    for i in range(16):
      room = rooms()[draws.speech_room[i]]
      if draws.reverberate[i]:
        direct = int(np.argmax(np.abs(room)))
        expected = np.convolve(clean[i], room)[:800]
        expected_target = np.convolve(clean[i], room[:direct + early + 1])[:800]
      else:
        expected = expected_target = clean[i]
      gain = 10 ** (draws.speech_level_db[i] / 20) / np.sqrt(np.mean(expected ** 2))
      self.assertAllClose(speech[i], gain * expected, atol=1e-5)
      self.assertAllClose(target[i], gain * expected_target, atol=1e-5)

  def test_early_window_ends_early_ms_after_the_direct_path(self):
    room = np.zeros([2, 20], np.float32)
    room[0, 3], room[0, 10], room[1, 0] = 1.0, 0.5, -1.0
    window = mix_lib.early_window(tf.constant(room), 4).numpy()
    self.assertAllEqual(window[0], [1] * 8 + [0] * 12)  # taps 0..3+4
    self.assertAllEqual(window[1], [1] * 5 + [0] * 15)

  def test_eager_equals_xla_and_bfloat16_passes_through(self):
    clean, noise = sources()
    op = mix_lib.Mix(sample_rate=RATE, rir_proba=0.5, rirs=rooms(), second_noise_proba=0.5,
                     clip_proba=0.5, band_limit_proba=0.5, cutoff_hz=(1000.0, 3000.0))
    seed = tf.constant([5, 6], tf.int64)
    eager = op(clean, noise, seed)
    compiled = tf.function(op, jit_compile=True)(clean, noise, seed)
    for a, b in zip(eager, compiled):
      self.assertAllClose(a, b, rtol=1e-4, atol=1e-6)
    self.assertNotAllClose(eager[0], op(clean, noise, [5, 7])[0])
    low = op(tf.cast(clean, tf.bfloat16), tf.cast(noise, tf.bfloat16), seed)
    self.assertEqual([x.dtype for x in low], [tf.bfloat16] * 2)
    self.assertAllClose(tf.cast(low[1], tf.float32), eager[1], atol=0.02)

  def test_draws_differ_per_step_and_per_replica_as_the_step_folds_them(self):
    base = tf.constant([0, 0x5EED], tf.int64)
    seen = set()
    for step in range(3):
      for replica in range(2):
        seed = stateless.fold_in(stateless.fold_in(base, step), replica)
        seen.add(tuple(np.round(self.op.draws(4, seed).snr_db.numpy(), 4)))
    self.assertLen(seen, 6)

  def test_clipping_and_band_limit_do_what_they_say(self):
    clean, noise = sources(batch=16, length=1000)
    op = mix_lib.Mix(sample_rate=RATE, clip_proba=0.5, band_limit_proba=0.5,
                     cutoff_hz=(1000.0, 2000.0))
    draws = op.draws(16, [8, 9])
    speech, mixed_noise, _ = (x.numpy() for x in op.components(clean, noise, draws))
    noisy, target = (x.numpy() for x in op.apply(clean, noise, draws))
    unclipped_peak = np.abs(speech + mixed_noise).max(axis=1)
    spectrum = np.abs(np.fft.rfft(noisy, axis=1))
    target_spectrum = np.abs(np.fft.rfft(target, axis=1))
    frequencies = np.fft.rfftfreq(1000, 1 / RATE)
    for i in range(16):
      if draws.band_limit[i]:
        above = frequencies > draws.cutoff_hz[i] + 1e-3
        self.assertLess(spectrum[i, above].max(), 1e-4 * spectrum[i].max())
        self.assertLess(target_spectrum[i, above].max(), 1e-4 * target_spectrum[i].max())
      elif draws.clip[i]:
        limit = unclipped_peak[i] * 10 ** (draws.clip_db[i] / 20)
        self.assertAllClose(np.abs(noisy[i]).max(), limit, rtol=1e-5)
      else:
        self.assertAllClose(noisy[i], speech[i] + mixed_noise[i], atol=1e-6)
    self.assertTrue(np.any(draws.band_limit) and np.any(draws.clip & ~draws.band_limit))

  def test_bad_input_is_refused_with_what_to_do(self):
    clean, noise = sources(length=200)
    with self.assertRaisesRegex(ValueError, r"room responses are 300 samples \(0.0375 s\), "
                                r"longer than the 200-sample .* raise --crop_seconds"):
      self.op(clean, noise, [0, 1])
    with self.assertRaisesRegex(ValueError, "rir_proba=0.5 needs room responses"):
      mix_lib.Mix(sample_rate=RATE, rir_proba=0.5)(clean, noise, [0, 1])
    with self.assertRaisesRegex(ValueError, "all-zero response"):
      mix_lib.Mix(sample_rate=RATE, rirs=np.zeros([2, 10]))
    with self.assertRaisesRegex(ValueError, "clip_db=.* must be <= 0 dB"):
      mix_lib.Mix(sample_rate=RATE, clip_db=(-3.0, 2.0))
    with self.assertRaisesRegex(ValueError, "one shape"):
      self.op(clean, noise[:, :100], [0, 1])

  def test_rooms_can_be_given_to_the_call(self):
    clean, noise = sources()
    given = mix_lib.Mix(sample_rate=RATE, rir_proba=0.5, second_noise_proba=0.5,
                        early_ms=10.0)
    self.assertAllClose(given(clean, noise, [2, 3], rirs=rooms()),
                        self.op(clean, noise, [2, 3]))


if __name__ == "__main__":
  tf.test.main()
