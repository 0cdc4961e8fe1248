"""Tests for trainer.serving.stream: a causal mask model streamed in any feed sizes equals its offline output, within its stated latency."""

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from trainer.models import mask
from trainer.serving import export
from trainer.serving import kept_input
from trainer.serving import stream


def model(rate, *, causal=True, level_seconds=mask.LEVEL_SECONDS):
  return mask.MaskDenoiser(sample_rate=rate, hidden=8, depth=3, causal=causal,
                           level_seconds=level_seconds, seed=1)


def fed(streamer, signal, sizes):
  """The streamer's output for `signal` fed in blocks cycling through `sizes`, then flushed."""
  out, start, k = [], 0, 0
  while start < len(signal):
    size = sizes[k % len(sizes)]
    out.append(streamer.feed(signal[start:start + size]))
    start, k = start + size, k + 1
  out.append(streamer.flush())
  return np.concatenate(out)


class MaskStreamTest(tf.test.TestCase, parameterized.TestCase):

  # A level over 40 ms (5 frames) slides within the clip; 0: the level over all so far.
  @parameterized.parameters((16000, 0.04), (48000, 0.04), (16000, 0.0))
  def test_any_feed_sizes_give_the_offline_output(self, rate, level_seconds):
    denoiser = model(rate, level_seconds=level_seconds)
    signal = (0.1 * np.random.default_rng(rate).standard_normal(rate // 4 + 37)).astype(
        np.float32)
    offline = kept_input.enhance(denoiser, tf.constant(signal[None]), rate, kept_input.KEEP,
                                 kept_input.PRESENCE_KEEP)[0].numpy()
    streamer = stream.Streamer.for_mask_model(denoiser)
    rng = np.random.default_rng(0)
    for sizes in ([1], [7], [streamer.hop], [streamer.hop + 1, 3],
                  list(rng.integers(1, 3 * streamer.hop, 20))):
      self.assertAllClose(fed(streamer, signal, sizes), offline, atol=1e-5, rtol=0)
    self.assertLen(streamer.flush(), 0)  # a flushed stream starts afresh
    raw = stream.Streamer.for_mask_model(denoiser, keep_input=0.0, keep_presence=0.0)
    self.assertAllClose(fed(raw, signal, [100]), denoiser(tf.constant(signal[None]))[0],
                        atol=1e-5, rtol=0)

  def test_output_leaves_within_the_latency_and_an_impulse_at_the_bound(self):
    denoiser = model(16000)
    denoiser.project_out.bias.assign(tf.fill(denoiser.project_out.bias.shape, 40.0))  # gain 1
    streamer = stream.Streamer.for_mask_model(denoiser)
    self.assertEqual(streamer.latency, denoiser.window - 1)  # 32 ms, less a sample
    impulse_at = 5 * streamer.hop - streamer.lead  # the first sample of a frame: the worst
    signal = np.zeros(12 * streamer.hop, np.float32)
    signal[impulse_at] = 1.0
    returned, out = [], []
    for sample in signal:
      out.append(streamer.feed([sample]))
      returned.append(sum(map(len, out)))
    delays = [n + 1 - done for n, done in enumerate(returned)]  # fed - returned
    self.assertLessEqual(max(delays), streamer.latency)
    self.assertEqual(max(delays), streamer.latency)
    heard = next(n for n, done in enumerate(returned) if done > impulse_at)
    self.assertEqual(heard - impulse_at, streamer.latency)
    self.assertAllClose(np.concatenate(out)[impulse_at], 1.0, atol=1e-5)

  def test_an_export_streams_as_its_model_does(self):
    denoiser = model(16000)
    saved = self.create_tempdir().full_path
    module = export.ExportedDenoiser(denoiser, 16000)
    tf.saved_model.save(module, saved, signatures=module.signatures())
    loaded = tf.saved_model.load(saved)
    signal = (0.1 * np.random.default_rng(5).standard_normal(3000)).astype(np.float32)
    streamer = stream.Streamer.from_saved_model(loaded)
    self.assertEqual((streamer.hop, streamer.latency), (denoiser.hop, denoiser.window - 1))
    offline = loaded.signatures["denoise"](waveform=tf.constant(signal[None]))
    self.assertAllClose(fed(streamer, signal, [100, 7]), list(offline.values())[0][0],
                        atol=1e-5, rtol=0)
    plain = self.create_tempdir().full_path
    module = export.ExportedDenoiser(model(16000, causal=False), 16000)
    tf.saved_model.save(module, plain, signatures=module.signatures())
    with self.assertRaisesRegex(ValueError, "no stream_step: only causal mask models"):
      stream.Streamer.from_saved_model(tf.saved_model.load(plain))

  def test_a_model_that_looks_ahead_is_refused(self):
    with self.assertRaisesRegex(ValueError, "Only a causal mask model streams"):
      stream.MaskStep(model(16000, causal=False))


if __name__ == "__main__":
  tf.test.main()
