"""Tests for ops.reverb: NumPy equivalence, execution modes, gradients, physics, errors."""

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from bench import numpy_reverb
from ops import reverb

JITTER = 0.1


def numpy_ir(initial, first_delay, rt60, jitter_u, length, sample_rate):
  """The float64 NumPy shift-and-add loop (the reference contract) run on a unit impulse."""
  impulse = np.zeros(length)
  impulse[0] = 1.0
  return numpy_reverb.shift_and_add(impulse, initial, first_delay, rt60, jitter_u,
                                    sample_rate=sample_rate)


def schroeder_t60(h, sample_rate):
  """T60 from a T20 fit (-5 to -25 dB) of the backward-integrated energy decay."""
  energy = np.cumsum((h ** 2)[::-1])[::-1]
  decay_db = 10 * np.log10(energy / energy[0] + 1e-30)
  fit = (decay_db <= -5) & (decay_db >= -25)
  t = np.arange(len(h))[fit] / sample_rate
  slope = np.polyfit(t, decay_db[fit], 1)[0]
  return -60.0 / slope


def signals(batch, length, seed=0):
  rng = np.random.default_rng(seed)
  clean = rng.normal(0, 0.2, [batch, length]).astype(np.float32)
  noise = rng.normal(0, 0.1, [batch, length]).astype(np.float32)
  return clean + noise, clean


class IrTest(tf.test.TestCase, parameterized.TestCase):

  def test_bounds_for_default_ranges(self):
    self.assertEqual(
        reverb.rev_echo_bounds(length=480000, sample_rate=48000, rt60_max=1.3,
                               first_delay_min=0.01, first_delay_max=0.03,
                               jitter=0.1), (146, 77999))
    self.assertEqual(
        reverb.rev_echo_bounds(length=1000, sample_rate=48000, rt60_max=1.3,
                               first_delay_min=0.01, first_delay_max=0.03,
                               jitter=0.1), (146, 1000))

  def test_matches_numpy_loop_on_random_cases(self):
    rng = np.random.default_rng(1)
    cases = 0
    for sample_rate in (8000, 16000, 48000):
      for _ in range(70):
        length = int(rng.choice([50, 100, rng.integers(50, 3 * sample_rate)]))
        max_echoes, ir_length = reverb.rev_echo_bounds(
            length=length, sample_rate=sample_rate, rt60_max=1.3,
            first_delay_min=0.01, first_delay_max=0.03, jitter=JITTER)
        initial = rng.uniform(0, 0.3, [2])
        first_delay = rng.uniform(0.01, 0.03, [2])
        rt60 = rng.uniform(0.3, 1.3, [2])
        jitter_u = rng.uniform(-1, 1, [2, 3, max_echoes, 2])
        got = reverb.rev_echo_ir(initial, first_delay, rt60, jitter_u, length=length,
                                 sample_rate=sample_rate, ir_length=ir_length).numpy()
        for b in range(2):
          want = numpy_ir(initial[b], first_delay[b], rt60[b], jitter_u[b], length,
                          sample_rate)
          self.assertFalse(want[ir_length:].any())
          np.testing.assert_array_equal(np.nonzero(got[b])[0], np.nonzero(want)[0])
          np.testing.assert_allclose(got[b], want[:ir_length], rtol=1e-6, atol=0)
          cases += 1
    self.assertGreaterEqual(cases, 400)

  def test_length_shorter_than_first_delay_gives_silence(self):
    u = np.zeros([1, 3, 146, 2])
    h = reverb.rev_echo_ir([0.3], [0.02], [1.0], u, length=50, sample_rate=16000)
    self.assertAllEqual(h, np.zeros([1, 50]))

  def test_extreme_jitter_last_tap_fits_in_bound(self):
    u = np.ones([1, 3, 146, 2])
    u[..., 1] = -1.0  # longest delays, slowest decay
    h = reverb.rev_echo_ir([0.3], [0.03], [1.3], u, length=480000, sample_rate=48000,
                           ir_length=77999).numpy()[0]
    taps = np.nonzero(h)[0]
    self.assertEqual(taps[-1], 77665)
    self.assertEqual(h[0], 0.0)

  def test_too_few_echoes_is_an_error(self):
    u = np.zeros([1, 3, 20, 2])
    with self.assertRaisesRegex(ValueError, "rev_echo_bounds"):
      reverb.rev_echo_ir([0.3], [0.01], [1.3], u, length=1000, sample_rate=16000)

  @parameterized.parameters(
      dict(shape=[1, 3, 10], error="jitter_u must have shape"),
      dict(shape=[1, 3, 10, 2], ir_length=2000, error="ir_length"))
  def test_bad_arguments(self, shape, error, ir_length=None):
    with self.assertRaisesRegex(ValueError, error):
      reverb.rev_echo_ir([0.3], [0.01], [0.01], np.zeros(shape), length=1000,
                         sample_rate=16000, ir_length=ir_length)


class ApplyIrTest(tf.test.TestCase):

  def test_matches_numpy_convolve(self):
    rng = np.random.default_rng(2)
    for length, taps in ((400, 400), (1000, 37), (333, 1)):
      x = rng.normal(size=[3, length]).astype(np.float32)
      h = (rng.normal(size=[3, taps]) * (rng.uniform(size=[3, taps]) < 0.1)
           ).astype(np.float32)
      got = reverb.apply_ir(x, h).numpy()
      for b in range(3):
        want = np.convolve(x[b], h[b])[:length]
        np.testing.assert_allclose(got[b], want, rtol=0,
                                   atol=1e-5 * max(1.0, np.abs(want).max()))

  def test_keeps_low_precision_dtype(self):
    x = tf.ones([1, 64], tf.bfloat16)
    y = reverb.apply_ir(x, tf.one_hot([[3]], 8)[:, 0])
    self.assertEqual(y.dtype, tf.bfloat16)
    self.assertAllClose(tf.cast(y, tf.float32), np.r_[np.zeros(3), np.ones(61)][None])

  def test_needs_static_rank_2(self):
    with self.assertRaisesRegex(ValueError, r"\[batch, time\]"):
      reverb.apply_ir(tf.zeros([10]), tf.zeros([1, 3]))

  def test_gradient_wrt_signal(self):
    rng = np.random.default_rng(3)
    h = tf.constant(rng.normal(size=[1, 60]).astype(np.float32) * 0.2)
    x = tf.constant(rng.normal(size=[1, 400]).astype(np.float32))
    theoretical, numerical = tf.test.compute_gradient(
        tf.function(lambda s: reverb.apply_ir(s, h)), [x])
    self.assertLess(np.abs(theoretical[0] - numerical[0]).max(), 1e-3)


class RevEchoTest(tf.test.TestCase, parameterized.TestCase):

  module = reverb.RevEcho(sample_rate=8000, proba=0.7)

  def test_matches_numpy_composition(self):
    noisy, clean = signals(6, 3000)
    params = self.module.sample([4, 5], 6, 3000)
    self.assertGreater(int(tf.reduce_sum(tf.cast(params.apply, tf.int32))), 0)
    got = self.module.apply(noisy, clean, params)
    want = numpy_reverb.rev_echo_numpy(
        noisy.astype(np.float64), clean.astype(np.float64),
        tf.nest.map_structure(np.asarray, params), sample_rate=self.module.sample_rate,
        keep_clean=self.module.keep_clean)
    for g, w in zip(got, want):
      np.testing.assert_allclose(g, w, rtol=0, atol=1e-5 * np.abs(w).max())

  def test_eager_function_and_xla_agree(self):
    noisy, clean = signals(4, 2000)
    seed = tf.constant([7, 8])
    eager = self.module(noisy, clean, seed)
    graph = tf.function(self.module)(noisy, clean, seed)
    compiled = tf.function(self.module, jit_compile=True)(noisy, clean, seed)
    for e, g, c in zip(eager, graph, compiled):
      self.assertAllClose(e, g, rtol=0, atol=1e-5)
      self.assertAllClose(e, c, rtol=0, atol=1e-5)

  def test_batch_equals_single_examples(self):
    noisy, clean = signals(8, 1500)
    params = self.module.sample([1, 1], 8, 1500)
    batched = self.module.apply(noisy, clean, params)
    for b in range(8):
      single = self.module.apply(noisy[b:b + 1], clean[b:b + 1],
                                 tf.nest.map_structure(lambda t: t[b:b + 1], params))
      for whole, one in zip(batched, single):
        self.assertAllClose(whole[b:b + 1], one, rtol=0, atol=1e-6)

  def test_bfloat16_matches_float32(self):
    noisy, clean = signals(4, 1500)
    seed = [3, 3]
    full = self.module(noisy, clean, seed)
    half = self.module(tf.cast(noisy, tf.bfloat16), tf.cast(clean, tf.bfloat16), seed)
    for f, h in zip(full, half):
      self.assertEqual(h.dtype, tf.bfloat16)
      self.assertAllClose(f, tf.cast(h, tf.float32), rtol=2e-2, atol=2e-2)

  def test_gradients_wrt_signals_and_initial(self):
    noisy, clean = signals(1, 400)
    module = reverb.RevEcho(sample_rate=8000, proba=1.0, rt60=(0.02, 0.04),
                            first_delay=(0.002, 0.004))
    params = module.sample([9, 9], 1, 400)

    @tf.function
    def output(n, c, initial):
      out = module.apply(n, c, params._replace(initial=initial))
      return tf.concat(out, axis=1)

    theoretical, numerical = tf.test.compute_gradient(
        output, [tf.constant(noisy), tf.constant(clean), params.initial])
    for t, n in zip(theoretical, numerical):
      self.assertLess(np.abs(t - n).max(), 1e-3)
    self.assertGreater(np.abs(theoretical[2]).max(), 0.0)

  def test_decay_matches_drawn_rt60(self):
    sample_rate = 8000
    module = reverb.RevEcho(sample_rate=sample_rate, proba=1.0)
    length = 3 * sample_rate
    params = module.sample([5, 1], 6, length)
    max_echoes, _ = module.bounds(length)
    h = reverb.rev_echo_ir(params.initial, params.first_delay, params.rt60,
                           params.noise_jitter, length=length,
                           sample_rate=sample_rate).numpy()
    for b in range(6):
      rt60 = float(params.rt60[b])
      self.assertAllClose(schroeder_t60(h[b], sample_rate), rt60, rtol=0.15)
    self.assertEqual(params.noise_jitter.shape[2], max_echoes)

  def test_proba_zero_is_identity(self):
    noisy, clean = signals(4, 1000)
    out = reverb.rev_echo(noisy, clean, [1, 2], sample_rate=8000, proba=0.0)
    self.assertAllEqual(out[0], noisy)
    self.assertAllEqual(out[1], clean)

  def test_unselected_examples_are_bit_identical(self):
    noisy, clean = signals(8, 1000)
    params = self.module.sample([2, 2], 8, 1000)
    out = self.module.apply(noisy, clean, params)
    apply = params.apply.numpy()
    self.assertTrue(apply.any() and not apply.all())
    self.assertAllEqual(tf.boolean_mask(out[0], ~apply), noisy[~apply])
    self.assertAllEqual(tf.boolean_mask(out[1], ~apply), clean[~apply])

  def test_keep_clean_one_leaves_no_clean_reverb_in_noise(self):
    _, clean = signals(4, 1000)
    noisy, clean = reverb.rev_echo(clean, clean, [1, 2], sample_rate=8000, proba=1.0,
                                   keep_clean=1.0)
    self.assertAllClose(noisy - clean, tf.zeros_like(clean), atol=1e-6)
    self.assertGreater(float(tf.reduce_max(tf.abs(clean - signals(4, 1000)[1]))), 0.01)

  def test_seeds_are_deterministic(self):
    noisy, clean = signals(4, 1000)
    a = self.module(noisy, clean, [1, 2])
    b = self.module(noisy, clean, [1, 2])
    c = self.module(noisy, clean, [1, 3])
    self.assertAllEqual(a[0], b[0])
    self.assertNotAllClose(a[0], c[0])

  @parameterized.parameters(
      dict(kwargs=dict(rt60=(1.0, 0.5)), error=r"rt60=\(1, 0.5\) must be a range"),
      dict(kwargs=dict(first_delay=(0.0, 0.01)), error=r"first_delay=\(0, 0.01\) must be a "
           r"range \(lo, hi\) with 0 < lo"),
      dict(kwargs=dict(sample_rate=0), error="sample_rate=0 must be a positive number"),
      dict(kwargs=dict(proba=1.5), error=r"proba=1.5 must be in \[0, 1\]"),
      dict(kwargs=dict(keep_clean=-0.1), error=r"keep_clean=-0.1 must be in \[0, 1\]"),
      dict(kwargs=dict(jitter=1.0), error=r"jitter=1.0 must be in \[0, 1\)"))
  def test_bad_configuration(self, kwargs, error):
    kwargs = dict(dict(sample_rate=8000), **kwargs)
    with self.assertRaisesRegex(ValueError, error):
      reverb.RevEcho(**kwargs)

  @parameterized.parameters(
      dict(noisy=[2, 100], clean=[2, 99], error="differ in shape"),
      dict(noisy=[100], clean=[100], error=r"\[batch, time\]"))
  def test_bad_signals(self, noisy, clean, error):
    with self.assertRaisesRegex(ValueError, error):
      self.module(tf.zeros(noisy), tf.zeros(clean), [1, 2])

  def test_mismatched_dtypes(self):
    with self.assertRaisesRegex(ValueError, "one floating dtype"):
      self.module(tf.zeros([1, 10]), tf.zeros([1, 10], tf.bfloat16), [1, 2])


if __name__ == "__main__":
  tf.test.main()
