"""Tests for ops.remix: which noise each example gets, at what SNR, reproducibly and under XLA."""

import numpy as np
import tensorflow as tf

from ops import remix


def pairs(batch=6, length=400, seed=0):
  rng = np.random.default_rng(seed)
  clean = rng.normal(0, 0.2, [batch, length]).astype(np.float32)
  noise = rng.normal(0, 1.0, [batch, length]).astype(np.float32) * rng.uniform(
      0.01, 0.5, [batch, 1]).astype(np.float32)
  return clean + noise, clean


def snr_db(clean, noise):
  return 20 * np.log10(np.sqrt(np.mean(clean**2, -1)) / np.sqrt(np.mean(noise**2, -1)))


class RemixTest(tf.test.TestCase):

  def test_every_example_gets_another_examples_noise_at_an_snr_in_range(self):
    noisy, clean = pairs()
    out_noisy, out_clean = remix.Remix(proba=1.0, snr_db=(0.0, 10.0))(noisy, clean, [3, 4])
    self.assertAllEqual(out_clean, clean)
    noise, new_noise = noisy - clean, out_noisy.numpy() - clean
    shifts = set()
    for i in range(len(noise)):  # new noise = a scaled copy of one other example's noise
      ratios = new_noise[i] / noise
      source = int(np.argmin(np.std(ratios, axis=1)))
      self.assertNotEqual(source, i)
      self.assertAllClose(new_noise[i], noise[source] * np.mean(ratios[source]), rtol=1e-4,
                          atol=1e-6)
      shifts.add((i - source) % len(noise))
    self.assertLen(shifts, 1)  # one roll of the batch per call
    self.assertAllInRange(snr_db(clean, new_noise), -1e-3, 10.0 + 1e-3)

  def test_proba_zero_changes_nothing_and_half_changes_some(self):
    noisy, clean = pairs(batch=64, length=50)
    self.assertAllEqual(remix.Remix(proba=0.0)(noisy, clean, [1, 2])[0], noisy)
    changed = np.any(remix.Remix(proba=0.5)(noisy, clean, [1, 2])[0].numpy() != noisy, axis=1)
    self.assertBetween(changed.mean(), 0.3, 0.7)

  def test_the_same_seed_gives_the_same_mix_eagerly_and_under_xla(self):
    noisy, clean = pairs()
    op = remix.Remix(proba=0.7)
    eager = op(noisy, clean, [5, 6])[0]
    compiled = tf.function(op, jit_compile=True)(noisy, clean, tf.constant([5, 6], tf.int64))[0]
    self.assertAllClose(eager, compiled, rtol=1e-5, atol=1e-6)
    self.assertNotAllClose(eager, op(noisy, clean, [5, 7])[0])

  def test_a_batch_of_one_only_redraws_the_snr(self):
    noisy, clean = pairs(batch=1)
    out = remix.Remix(proba=1.0, snr_db=(3.0, 3.0))(noisy, clean, [0, 1])[0].numpy()
    self.assertAllClose(snr_db(clean, out - clean), [3.0], atol=1e-3)

  def test_chain_runs_each_augmentation_with_its_own_seed(self):
    seen = []

    def record(noisy, clean, seed):
      seen.append(seed.numpy().tolist())
      return noisy + 1.0, clean

    noisy, clean = pairs(batch=2, length=4)
    out, _ = remix.chain(record, record)(noisy, clean, tf.constant([1, 2], tf.int64))
    self.assertAllClose(out, noisy + 2.0)
    self.assertLen(seen, 2)
    self.assertNotEqual(seen[0], seen[1])
    self.assertIs(remix.chain(record), record)

  def test_bfloat16_signals_get_the_float32_draws(self):
    rng = np.random.default_rng(3)
    clean = rng.normal(size=[128, 64]).astype(np.float32)
    noisy = clean + rng.normal(size=[128, 64]).astype(np.float32)
    as_bf16 = lambda x: tf.cast(tf.cast(x, tf.bfloat16), tf.float32)  # pylint: disable=g-long-lambda
    noisy, clean = as_bf16(noisy), as_bf16(clean)
    mix = remix.Remix(proba=0.5)
    for seed in range(8):
      want, _ = mix(noisy, clean, [seed, 1])
      got, got_clean = mix(tf.cast(noisy, tf.bfloat16), tf.cast(clean, tf.bfloat16), [seed, 1])
      self.assertEqual(got.dtype, tf.bfloat16)
      self.assertAllEqual(got_clean, tf.cast(clean, tf.bfloat16))
      # The same roll, SNRs and choices: equal up to bfloat16 rounding of the result.
      self.assertAllClose(tf.cast(got, tf.float32), want, rtol=1e-2, atol=1e-2)

  def test_bad_arguments(self):
    with self.assertRaisesRegex(ValueError, r"proba=1.5 must be in \[0, 1\]"):
      remix.Remix(proba=1.5)
    for snr_db in ((10.0, 0.0), (0.0, float("inf")), (float("nan"), 5.0)):
      with self.assertRaisesRegex(ValueError, r"snr_db=\(.+\) must be \(lo, hi\), finite numbers "
                                  "with lo <= hi"):
        remix.Remix(snr_db=snr_db)


if __name__ == "__main__":
  tf.test.main()
