"""Tests for input.synthetic: determinism, SNR and level ranges, babble bank, parallel generation, full disks."""

import os
import resource
import signal
import subprocess
import sys
from unittest import mock

import numpy as np
import pytest
import tensorflow as tf

from input import records
from input import synthetic

RATE = 16000


class SyntheticTest(tf.test.TestCase):

  def test_a_rate_too_low_for_speech_is_refused(self):
    with self.assertRaisesRegex(ValueError, "sample_rate=100 must be >= 8000"):
      synthetic.write_corpus(self.create_tempdir().full_path, num_examples=1, seconds=0.1,
                             sample_rate=100)

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

  def test_clean_has_room_tone_not_digital_silence(self):
    _, clean = synthetic.example(0, 1, 2 * RATE, RATE)
    frames = clean[:len(clean) // 160 * 160].reshape(-1, 160)
    quietest_db = 10 * np.log10(np.mean(frames**2, axis=1).min())
    self.assertBetween(quietest_db, -100.0, -60.0)

  def test_the_microphone_keeps_speech_up_to_7_khz_at_16_khz(self):
    # Its high cut is a microphone's or a converter's (7 kHz and up), not a share of the rate:
    # a cut at 0.3 x 16 kHz took 11 dB off 6-7 kHz, where consonants are.
    white = np.random.default_rng(0).normal(size=4 * RATE)
    hz = np.fft.rfftfreq(len(white), 1 / RATE)
    for seed in range(20):
      power = np.abs(np.fft.rfft(synthetic._microphone(np.random.default_rng(seed), white,
                                                       RATE))) ** 2
      band = lambda lo, hi: power[(hz >= lo) & (hz < hi)].mean()  # pylint: disable=cell-var-from-loop
      # One octave apart: the tilt (at most 3 dB per octave) and the cut's -2.2 dB at most.
      self.assertGreater(10 * np.log10(band(6000, 7000) / band(3000, 3500)), -6.0, seed)

  def test_some_examples_above_16_khz_end_at_a_lower_rates_band_edge(self):
    rate, examples = 48000, 40
    hz = np.fft.rfftfreq(rate // 4, 1 / rate)
    edges = []
    for index in range(examples):
      noisy, clean = synthetic.example(0, index, rate // 4, rate)
      noise_power = np.abs(np.fft.rfft(noisy - clean)) ** 2
      # its band edge: above it nothing but rounding (brown noise keeps 1e-8 at 20 kHz)
      edges.append(hz[np.flatnonzero(noise_power > 1e-20 * noise_power.max())[-1]])
      self.assertLess(np.abs(np.fft.rfft(clean))[hz >= edges[-1] + 100].max(initial=0), 1e-9)
    lowered = [edge for edge in edges if edge < 0.49 * rate]
    self.assertBetween(len(lowered) / examples, 0.15, 0.45)  # LOWER_RATE_SHARE: 0.3
    for edge in lowered:  # each just below a recorded rate's Nyquist frequency
      nyquist = min(rate / 2 for rate in synthetic.RECORDED_RATES if rate / 2 >= edge)
      self.assertBetween(nyquist - edge, 0, 100)

  def test_a_16_khz_corpus_has_no_lower_rate(self):
    with mock.patch.object(synthetic, "LOWER_RATE_SHARE", 1.0):
      lowered = synthetic.example(0, 3, RATE // 4, RATE)
    self.assertAllEqual(lowered[0], synthetic.example(0, 3, RATE // 4, RATE)[0])

  def test_babble_bank_is_keyed_by_seed(self):
    bank = synthetic.babble_bank(0, 8000)
    self.assertEqual(bank.shape, (synthetic.BANK_TALKERS, int(synthetic.BANK_SECONDS * 8000)))
    self.assertAllEqual(bank, synthetic.babble_bank.__wrapped__(0, 8000))
    self.assertNotAllClose(bank[0], synthetic.babble_bank(1, 8000)[0])

  def test_parallel_generation_writes_the_same_corpus(self):
    serial, parallel = self.create_tempdir().full_path, self.create_tempdir().full_path
    args = dict(num_examples=synthetic.PARALLEL_FROM, seconds=0.1, sample_rate=8000, seed=4,
                num_shards=2)
    one = synthetic.write_corpus(serial, processes=1, **args)
    two = synthetic.write_corpus(parallel, processes=2, **args)
    self.assertEqual(one.shards, two.shards)
    for a, b in zip(one.paths, two.paths):
      with open(a, "rb") as fa, open(b, "rb") as fb:
        self.assertEqual(fa.read(), fb.read())

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

  def test_clean_and_noise_stores_hold_what_the_pairs_are_mixed_from(self):
    data_dir = self.create_tempdir().full_path
    args = dict(num_examples=3, seconds=0.25, sample_rate=RATE, seed=4, num_shards=1)
    stores = {kind: synthetic.write_corpus(data_dir, split=kind, kind=kind, **args)
              for kind in ("pairs", "clean", "noise")}
    parsed = {kind: records.parse_batch(next(iter(tf.data.TFRecordDataset(m.paths).batch(3))),
                                        segment_samples=4000, kind=kind)
              for kind, m in stores.items()}
    self.assertEqual(stores["noise"].kind, "noise")
    pairs = parsed["pairs"]
    self.assertAllClose(records.to_float(parsed["clean"]["clean"]),
                        records.to_float(pairs["clean"]), atol=1 / 32768)
    self.assertAllClose(records.to_float(parsed["noise"]["noise"]),
                        records.to_float(pairs["noisy"]) - records.to_float(pairs["clean"]),
                        atol=2 / 32768)
    with self.assertRaisesRegex(ValueError, "holds clean records, but noise records are needed"):
      synthetic.ensure_corpus(data_dir, split="clean", kind="noise", **args)


def full_disk(limit_bytes=50000):
  """For a child process: any file past `limit_bytes` fails to grow (EFBIG), as on a full disk."""
  signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
  resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))


class FullDiskTest(tf.test.TestCase):

  @pytest.mark.end_to_end
  def test_a_full_disk_is_one_clear_line_and_the_existing_split_survives(self):
    data_dir = self.create_tempdir().full_path
    command = [sys.executable, "-m", "input.synthetic", f"--output_dir={data_dir}",
               "--num_examples=16", "--seconds=0.5", f"--sample_rate={RATE}",
               "--num_shards=2", "--processes=1"]
    repo = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
    subprocess.run(command, cwd=repo, check=True, capture_output=True, timeout=300)
    before = sorted(os.listdir(data_dir))
    result = subprocess.run(command + ["--overwrite", "--seed=1"], cwd=repo,
                            capture_output=True, text=True, timeout=300,
                            preexec_fn=full_disk)
    self.assertNotEqual(result.returncode, 0)
    self.assertRegex(result.stderr.strip().splitlines()[-1],
                     r"^input.synthetic: Could not write split 'train' in .* \(File too "
                     r"large\): free space or make it writable, then run again\.")
    self.assertEqual(sorted(os.listdir(data_dir)), before)  # no .tmp shards, old split whole
    self.assertEqual(records.read_manifest(data_dir, "train").num_examples, 16)


if __name__ == "__main__":
  tf.test.main()
