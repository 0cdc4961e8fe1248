"""Tests for input.synthetic: determinism, SNR and level ranges, speech-like structure."""

import numpy as np
import tensorflow as tf

from input import records
from input import synthetic

RATE = 16000


class SyntheticTest(tf.test.TestCase):

  def test_examples_are_deterministic_and_distinct(self):
    a = synthetic.example(3, 5, RATE, RATE)
    self.assertAllEqual(a[0], synthetic.example(3, 5, RATE, RATE)[0])
    self.assertNotAllClose(a[1], synthetic.example(3, 6, RATE, RATE)[1])
    self.assertNotAllClose(a[1], synthetic.example(4, 5, RATE, RATE)[1])

  def test_snr_and_levels_are_in_range(self):
    snrs, levels = [], []
    for index in range(40):
      noisy, clean = synthetic.example(0, index, RATE, RATE)
      self.assertLessEqual(np.abs(noisy).max(), 0.99 + 1e-9)
      snrs.append(10 * np.log10(np.mean(clean**2) / np.mean((noisy - clean)**2)))
      levels.append(10 * np.log10(np.mean(clean**2)))
    self.assertGreaterEqual(min(snrs), -5.0 - 1e-6)
    self.assertLessEqual(max(snrs), 20.0 + 1e-6)
    self.assertGreater(np.std(snrs), 4.0)  # spread over the range, not one value
    self.assertTrue(-50 < min(levels) and max(levels) < -15, levels)

  def test_clean_speech_has_pauses_and_pitched_voicing(self):
    clean = synthetic.voice(np.random.default_rng(1), 4 * RATE, RATE, base_pitch=120.0)
    frames = clean[:len(clean) // 400 * 400].reshape(-1, 400)
    frame_db = 10 * np.log10(np.mean(frames**2, axis=1) + 1e-12)
    self.assertGreater(np.mean(frame_db < frame_db.max() - 40), 0.05)  # pauses
    spectrum = np.abs(np.fft.rfft(clean))
    frequencies = np.fft.rfftfreq(len(clean), 1 / RATE)
    low = spectrum[(frequencies > 70) & (frequencies < 400)].mean()
    high = spectrum[frequencies > 6000].mean()
    self.assertGreater(low, 3 * high)  # energy density in the pitch range, not white

  def test_write_corpus_makes_a_readable_split(self):
    data_dir = self.create_tempdir().full_path
    manifest = synthetic.write_corpus(data_dir, num_examples=5, seconds=0.25,
                                      sample_rate=RATE, seed=2, num_shards=2)
    self.assertEqual((manifest.num_examples, manifest.segment_samples), (5, 4000))
    again = synthetic.ensure_corpus(data_dir, split="train", num_examples=99, seconds=1.0)
    self.assertEqual(again.num_examples, 5)  # found, not regenerated
    serialized = next(iter(tf.data.TFRecordDataset(manifest.paths).batch(5)))
    parsed = records.parse_batch(serialized, segment_samples=4000)
    noisy, clean = synthetic.example(2, 0, 4000, RATE)
    first = [i.decode() for i in parsed["id"].numpy()].index("synth-2-0")
    self.assertAllClose(records.pcm_to_float(parsed["clean"])[first], clean, atol=1 / 32768)
    self.assertAllClose(records.pcm_to_float(parsed["noisy"])[first], noisy, atol=1 / 32768)


if __name__ == "__main__":
  tf.test.main()
