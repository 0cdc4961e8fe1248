"""Tests for trainer.serving.streamer: a causal mask model or U-Net streamed in any feed sizes equals its offline output (its kept input included), within its stated latency."""

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from trainer.models import mask
from trainer.models import unet
from ops import kept_input
from trainer.serving import saved_model
from trainer.serving import streamer as streamer_lib


def model(rate, *, causal=True, level_seconds=mask.LEVEL_SECONDS):
  return mask.MaskDenoiser(sample_rate=rate, hidden=8, depth=3, causal=causal,
                           level_seconds=level_seconds, seed=1)


def unet_model(rate, **kwargs):
  """A small causal U-Net whose level (20 ms) and attention (50 ms) windows slide within
  a quarter-second clip."""
  return unet.UNet(sample_rate=rate, hidden=8, depth=3, attention_heads=2,
                   **dict(dict(causal=True, level_seconds=0.02, attention_seconds=0.05,
                               seed=1), **kwargs))


MODELS = {"mask": model, "unet": unet_model}


def offline(denoiser, signal, rate, keep=(kept_input.KEEP, kept_input.PRESENCE_KEEP)):
  """The offline model's output for `signal`, keeping `keep` of the input."""
  return denoiser.keeping(tf.constant(signal[None]), *keep)[0].numpy()


def fed(streamer, signal, sizes):
  """The streamer's output for `signal` fed in blocks cycling through `sizes`, then flushed."""
  out, start, k = [], 0, 0
  while start < len(signal):
    size = sizes[k % len(sizes)]
    out.append(streamer.feed(signal[start:start + size]))
    start, k = start + size, k + 1
  out.append(streamer.flush())
  return np.concatenate(out)


def returned_after_each_sample(streamer, signal):
  """`(output, how many samples had been returned after each sample fed)`."""
  returned, out = [], []
  for sample in signal:
    out.append(streamer.feed([sample]))
    returned.append(sum(map(len, out)))
  return np.concatenate(out), returned


class StreamTest(tf.test.TestCase, parameterized.TestCase):

  # The mask model's level over 40 ms (5 frames) slides within the clip; 0: over all so far.
  @parameterized.parameters(("mask", 16000, dict(level_seconds=0.04)),
                            ("mask", 48000, dict(level_seconds=0.04)),
                            ("mask", 16000, dict(level_seconds=0.0)),
                            ("unet", 16000, {}), ("unet", 48000, {}))
  def test_any_feed_sizes_give_the_offline_output(self, architecture, rate, kwargs):
    denoiser = MODELS[architecture](rate, **kwargs)
    signal = (0.1 * np.random.default_rng(rate).standard_normal(rate // 4 + 37)).astype(
        np.float32)
    expected = offline(denoiser, signal, rate)
    streamer = streamer_lib.Streamer.for_model(denoiser)
    rng = np.random.default_rng(0)
    for sizes in ([1], [7], [streamer.hop], [streamer.hop + 1, 3],
                  list(rng.integers(1, 3 * streamer.hop, 20))):
      self.assertAllClose(fed(streamer, signal, sizes), expected, atol=1e-5, rtol=0)
    self.assertLen(streamer.flush(), 0)  # a flushed stream starts afresh
    raw = streamer_lib.Streamer.for_model(denoiser, keep_input=0.0, keep_presence=0.0)
    self.assertAllClose(fed(raw, signal, [100]), denoiser(tf.constant(signal[None]))[0],
                        atol=1e-5, rtol=0)

  def test_output_leaves_within_the_latency_and_an_impulse_at_the_bound(self):
    denoiser = model(16000)
    denoiser.project_out.bias.assign(tf.fill(denoiser.project_out.bias.shape, 40.0))  # gain 1
    streamer = streamer_lib.Streamer.for_model(denoiser)
    self.assertEqual(streamer.latency, denoiser.window - 1)  # 32 ms, less a sample
    impulse_at = 5 * streamer.hop - streamer.lead  # the first sample of a frame: the worst
    signal = np.zeros(12 * streamer.hop, np.float32)
    signal[impulse_at] = 1.0
    out, returned = returned_after_each_sample(streamer, signal)
    delays = [n + 1 - done for n, done in enumerate(returned)]  # fed - returned
    self.assertEqual(max(delays), streamer.latency)
    heard = next(n for n, done in enumerate(returned) if done > impulse_at)
    self.assertEqual(heard - impulse_at, streamer.latency)
    self.assertAllClose(out[impulse_at], 1.0, atol=1e-5)

  def test_a_unet_hears_an_impulse_one_block_late_at_most(self):
    denoiser = unet_model(16000)
    streamer = streamer_lib.Streamer.for_model(denoiser)
    self.assertEqual(streamer.latency, denoiser.time_multiple - 1)
    noise = (0.1 * np.random.default_rng(2).standard_normal(12 * streamer.hop)).astype(
        np.float32)
    impulse_at = 5 * streamer.hop  # the first sample of a block: the worst
    clicked = noise.copy()
    clicked[impulse_at] += 1.0
    quiet, _ = returned_after_each_sample(streamer, noise)
    streamer.reset()
    loud, returned = returned_after_each_sample(streamer, clicked)
    delays = [n + 1 - done for n, done in enumerate(returned)]
    self.assertEqual(max(delays), streamer.latency)
    changed = np.flatnonzero(np.abs(loud - quiet) > 1e-6)
    self.assertEqual(changed[0], impulse_at)  # causal: nothing before it changes
    heard = next(n for n, done in enumerate(returned) if done > impulse_at)
    self.assertEqual(heard - impulse_at, streamer.latency)

  @parameterized.parameters(*MODELS)
  def test_an_export_streams_as_its_model_does(self, architecture):
    denoiser = MODELS[architecture](16000)
    saved = self.create_tempdir().full_path
    module = saved_model.ExportedDenoiser(denoiser, 16000)
    tf.saved_model.save(module, saved, signatures=module.signatures())
    loaded = tf.saved_model.load(saved)
    signal = (0.1 * np.random.default_rng(5).standard_normal(3000)).astype(np.float32)
    streamer = streamer_lib.Streamer.from_saved_model(loaded)
    self.assertEqual(streamer.hop, streamer_lib.step_for(denoiser).hop)
    expected = loaded.signatures["denoise"](waveform=tf.constant(signal[None]))
    self.assertAllClose(fed(streamer, signal, [100, 7]), list(expected.values())[0][0],
                        atol=1e-5, rtol=0)

  def test_what_cannot_stream_is_refused(self):
    for plain in (model(16000, causal=False), unet_model(16000, causal=False)):
      with self.assertRaisesRegex(ValueError, "Only a causal model streams"):
        streamer_lib.step_for(plain)
      saved = self.create_tempdir().full_path
      module = saved_model.ExportedDenoiser(plain, 16000)
      tf.saved_model.save(module, saved, signatures=module.signatures())
      with self.assertRaisesRegex(ValueError, "no stream_step: only causal models stream"):
        streamer_lib.Streamer.from_saved_model(tf.saved_model.load(saved))
    with self.assertRaisesRegex(ValueError, "its stream's state would grow without bound"):
      streamer_lib.step_for(unet_model(16000, attention_seconds=0))


if __name__ == "__main__":
  tf.test.main()
