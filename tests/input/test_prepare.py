"""Tests for input.prepare: formats, rates, segmenting, and a clear error for each bad input."""

import os
import subprocess
import sys

from absl.testing import parameterized
import numpy as np
import pytest
import tensorflow as tf

from input import audio
from input import decoders
from input import prepare
from input import records
from input import rooms
from tests import helpers


sine, write_audio = helpers.sine, helpers.write_audio


class PrepareTest(tf.test.TestCase, parameterized.TestCase):

  def setUp(self):
    super().setUp()
    root = self.create_tempdir().full_path
    self.noisy_dir, self.clean_dir = os.path.join(root, "noisy"), os.path.join(root, "clean")
    self.output_dir = os.path.join(root, "out")

  def add_pair(self, name, rate, kind, seconds=1.2, clean_kind=None, clean_rate=None,
               clean_seconds=None):
    clean = sine(clean_seconds or seconds, clean_rate or rate)
    noisy = sine(seconds, rate) + 0.05 * np.random.default_rng(0).normal(
        size=int(seconds * rate))
    write_audio(os.path.join(self.noisy_dir, name), noisy, rate, kind)
    write_audio(os.path.join(self.clean_dir, name), clean, clean_rate or rate,
                clean_kind or kind)

  def run_prepare(self, **kwargs):
    kwargs = dict(dict(sample_rate=48000, segment_seconds=0.5, hop_seconds=0.5,
                       num_shards=3), **kwargs)
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    return prepare.prepare(self.noisy_dir, self.clean_dir, self.output_dir, **kwargs)

  def read(self, manifest):
    serialized = next(iter(tf.data.TFRecordDataset(manifest.paths).batch(1000)))
    parsed = records.parse_batch(serialized, segment_samples=manifest.segment_samples)
    ids = [i.decode() for i in parsed["id"].numpy()]
    return dict(zip(ids, records.pcm_to_float(parsed["clean"]).numpy()))

  def test_mixed_formats_and_rates_become_48k_segments(self):
    self.add_pair("a.wav", 16000, "wav16")
    self.add_pair("sub/b.wav", 48000, "wav24")
    self.add_pair("c.wav", 48000, "float")
    self.add_pair("d.flac", 16000, "flac")
    manifest = self.run_prepare()
    self.assertEqual((manifest.sample_rate, manifest.segment_samples), (48000, 24000))
    self.assertEqual(manifest.num_examples, 12)  # 1.2 s -> 0-0.5, 0.5-1.0 and 0.7-1.2 s
    clean = self.read(manifest)
    for name in ("a.wav", "sub/b.wav", "c.wav", "d.flac"):
      # Aligned to the sample (the resampler's delay is removed); its filter
      # only smears the first few samples of the abrupt start.
      self.assertAllClose(clean[f"{name}#0"][16:], sine(0.5, 48000)[16:], atol=2e-3)
      # The tail is the file's last 0.5 s, not 0.2 s and digital silence.
      self.assertAllClose(clean[f"{name}#2"][:-16], sine(1.2, 48000)[-24000:-16], atol=2e-3)
    self.assertEqual(self.run_prepare(drop_last=True, overwrite=True).num_examples, 8)

  def test_32_bit_integer_pcm_is_decoded_as_integers(self):
    # tensorflow-io hands these samples over as float32 bit patterns (tiny or NaN values).
    self.add_pair("a.wav", 48000, "wav32")
    samples, rate = audio.read_file(os.path.join(self.clean_dir, "a.wav"))
    found, _ = decoders.wav_header(os.path.join(self.clean_dir, "a.wav"))
    self.assertEqual((rate, found.tag, found.bits), (48000, 1, 32))
    self.assertAllClose(samples, sine(1.2, 48000), atol=1e-6)
    clean = self.read(self.run_prepare())
    self.assertAllClose(clean["a.wav#0"], sine(0.5, 48000), atol=1e-4)

  def test_resampled_sine_keeps_its_frequency(self):
    self.add_pair("a.wav", 16000, "wav16", seconds=2.0)
    manifest = self.run_prepare(segment_seconds=2.0, hop_seconds=2.0)
    clean = self.read(manifest)["a.wav#0"]
    spectrum = np.abs(np.fft.rfft(clean * np.hanning(len(clean))))
    peak = np.argmax(spectrum) * 48000 / len(clean)
    self.assertAllClose(peak, 440.0, rtol=0.01)

  def test_the_same_directory_twice_is_refused(self):
    self.add_pair("a.wav", 48000, "wav16")
    with self.assertRaisesRegex(ValueError, "--noisy_dir and --clean_dir are the same "
                                "directory"):
      prepare.prepare(self.noisy_dir, self.noisy_dir + "/", self.output_dir)

  def test_overlapping_hops(self):
    self.add_pair("a.wav", 48000, "wav16", seconds=1.0)
    self.assertEqual(self.run_prepare(hop_seconds=0.25, drop_last=True).num_examples, 3)

  def test_segments_follow_the_segment_length_and_never_hold_silence(self):
    self.add_pair("long.wav", 48000, "wav16", seconds=3.0)
    self.add_pair("short.wav", 48000, "wav16", seconds=0.3)  # shorter than a segment
    manifest = self.run_prepare(segment_seconds=1.0, hop_seconds=None)
    clean = self.read(manifest)
    self.assertCountEqual(clean, ["long.wav#0", "long.wav#1", "long.wav#2"])  # 3 s back to back
    self.assertAllClose(np.concatenate([clean[f"long.wav#{i}"] for i in range(3)])[16:],
                        sine(3.0, 48000)[16:], atol=2e-3)
    for segment in clean.values():
      self.assertGreater(np.abs(segment[-4800:]).max(), 0.1)  # no padded silence

  def test_clipping_warns(self):
    write_audio(os.path.join(self.noisy_dir, "a.wav"), np.clip(sine(1, 48000, amplitude=2),
                                                                -1, 1), 48000, "wav16")
    write_audio(os.path.join(self.clean_dir, "a.wav"), sine(1, 48000), 48000, "wav16")
    with self.assertLogs("absl", "WARNING") as logs:
      self.run_prepare()
    self.assertIn("clipped", "".join(logs.output))

  @parameterized.named_parameters(
      ("missing_partner", "missing", r"b\.wav has no partner in --clean_dir"),
      ("length_mismatch", "length", r"noisy has 57600 samples but clean has 48000"),
      ("rate_mismatch", "rate", r"noisy is 48000 Hz but clean is 16000 Hz"),
      ("corrupt_audio", "corrupt", r"c\.wav: it ends inside its WAV header"),
      ("empty_directory", "empty", r"holds no \.wav/\.flac files"))
  def test_bad_input_is_named_and_leaves_no_manifest(self, case, error):
    self.add_pair("a.wav", 48000, "wav16")
    if case == "missing":
      write_audio(os.path.join(self.noisy_dir, "b.wav"), sine(1, 48000), 48000, "wav16")
    elif case == "length":
      self.add_pair("b.wav", 48000, "wav16", clean_seconds=1.0)
    elif case == "rate":
      self.add_pair("b.wav", 48000, "wav16", clean_rate=16000, seconds=1.0)
    elif case == "corrupt":
      self.add_pair("c.wav", 48000, "wav16")
      with open(os.path.join(self.noisy_dir, "c.wav"), "r+b") as f:
        f.truncate(30)
    elif case == "empty":
      for name in os.listdir(self.clean_dir):
        os.remove(os.path.join(self.clean_dir, name))
    with self.assertRaisesRegex(ValueError, error):
      self.run_prepare()
    leftovers = os.listdir(self.output_dir) if os.path.exists(self.output_dir) else []
    self.assertEmpty(leftovers)

  @pytest.mark.end_to_end
  def test_an_existing_split_is_refused_unless_overwrite(self):
    self.add_pair("a.wav", 48000, "wav16")
    first = self.run_prepare()
    before = sorted(os.listdir(self.output_dir))
    command = [sys.executable, "-m", "input.prepare", f"--noisy_dir={self.noisy_dir}",
               f"--clean_dir={self.clean_dir}", f"--output_dir={self.output_dir}",
               "--segment_seconds=0.5", "--hop_seconds=0.5", "--num_shards=2"]
    env = helpers.env()
    refused = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    self.assertEqual(refused.returncode, 1)
    self.assertIn("already holds split 'train' (3 shard(s)); nothing was changed. Pass "
                  "overwrite (--overwrite)", refused.stderr.strip().splitlines()[-1])
    self.assertEqual(sorted(os.listdir(self.output_dir)), before)
    self.assertEqual(records.read_manifest(self.output_dir, "train"), first)
    replaced = subprocess.run(command + ["--overwrite"], capture_output=True, text=True,
                              timeout=120, env=env)
    self.assertEqual(replaced.returncode, 0, replaced.stderr[-2000:])
    self.assertLen(records.read_manifest(self.output_dir, "train").shards, 2)

  @pytest.mark.end_to_end
  def test_command_line_error_is_one_clear_line(self):
    os.makedirs(self.noisy_dir)
    os.makedirs(self.clean_dir)
    result = subprocess.run(
        [sys.executable, "-m", "input.prepare", f"--noisy_dir={self.noisy_dir}",
         f"--clean_dir={self.clean_dir}", f"--output_dir={self.output_dir}"],
        capture_output=True, text=True, timeout=120,
        env=helpers.env())
    self.assertEqual(result.returncode, 1)
    self.assertIn("input.prepare: --noisy_dir=", result.stderr.strip().splitlines()[-1])
    self.assertIn("holds no .wav/.flac files", result.stderr)


class SourcesAndRoomsTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.root = self.create_tempdir().full_path
    self.output_dir = os.path.join(self.root, "out")

  def test_a_noise_store_from_files_at_their_own_rates(self):
    noise_dir = os.path.join(self.root, "noise")
    rng = np.random.default_rng(0)
    write_audio(os.path.join(noise_dir, "fan.wav"), 0.1 * rng.normal(size=44100), 44100,
                "wav16")
    write_audio(os.path.join(noise_dir, "sub/street.flac"), sine(2.1, 16000), 16000, "flac")
    manifest = prepare.prepare_sources(noise_dir, self.output_dir, kind="noise",
                                       split="noise", sample_rate=16000, segment_seconds=0.5)
    self.assertEqual((manifest.kind, manifest.sample_rate, manifest.segment_samples),
                     ("noise", 16000, 8000))
    self.assertEqual(manifest.num_examples, 2 + 5)  # 1 s -> 2; 2.1 s -> 4 and a tail
    parsed = records.parse_batch(next(iter(tf.data.TFRecordDataset(manifest.paths).batch(9))),
                                 segment_samples=8000, kind="noise")
    ids = [i.decode() for i in parsed["id"].numpy()]
    self.assertAllClose(records.to_float(parsed["noise"])[ids.index("sub/street.flac#1")],
                        sine(1.0, 16000)[8000:16000], atol=2e-3)
    with self.assertRaisesRegex(FileExistsError, "already holds split .noise."):
      prepare.prepare_sources(noise_dir, self.output_dir, kind="noise", split="noise",
                              sample_rate=16000, segment_seconds=0.5)
    with self.assertRaisesRegex(ValueError, "No examples were written for split 'empty'"):
      prepare.prepare_sources(noise_dir, self.output_dir, kind="noise", split="empty",
                              sample_rate=16000, segment_seconds=5.0)  # every file shorter
    self.assertEmpty([f for f in os.listdir(self.output_dir) if "empty" in f])

  def test_measured_and_simulated_rooms_in_one_store(self):
    rir_dir = os.path.join(self.root, "rirs")
    measured = np.zeros(48000)  # 1 s at 48 kHz: longer than the store's 0.25 s
    measured[100], measured[3000], measured[20000] = 0.5, 0.2, 0.1
    write_audio(os.path.join(rir_dir, "hall.wav"), measured, 48000, "float")
    with self.assertLogs("absl", "WARNING") as logs:
      manifest = prepare.prepare_rooms(self.output_dir, split="rooms", input_dir=rir_dir,
                                       simulated_rooms=3, sample_rate=16000,
                                       rir_seconds=0.25)
    self.assertIn("hall.wav: 3.3% of the response's energy lies past --rir_seconds",
                  "".join(logs.output))
    self.assertEqual((manifest.kind, manifest.num_examples, manifest.segment_samples),
                     ("rir", 4, 4000))
    responses = rooms.read_store(self.output_dir, "rooms", sample_rate=16000)
    self.assertEqual(responses.shape, (4, 4000))
    self.assertAllClose(np.abs(responses).max(axis=1), np.ones(4))
    hall = responses[np.argmax(np.abs(responses[:, 1000]) > 0.1)]  # 3000 / 3 = tap 1000
    self.assertEqual(np.argmax(np.abs(hall)), 33)  # 100 / 3, resampled exactly
    with self.assertRaisesRegex(ValueError, "at 16000 Hz, but the speech is at 48000 Hz"):
      rooms.read_store(self.output_dir, "rooms", sample_rate=48000)
    with self.assertRaisesRegex(ValueError, "No rooms: pass --input_dir"):
      prepare.prepare_rooms(self.output_dir, split="none")

  def test_simulated_rooms_alone_need_no_input_dir(self):
    manifest = prepare.prepare_rooms(self.output_dir, split="rooms", simulated_rooms=2,
                                     sample_rate=8000, rir_seconds=0.1)
    self.assertEqual((manifest.kind, manifest.num_examples, manifest.segment_samples),
                     ("rir", 2, 800))

  @pytest.mark.end_to_end
  def test_the_command_builds_a_store_of_measured_rooms_alone(self):
    rir_dir = os.path.join(self.root, "rirs")
    measured = np.zeros(24000)
    measured[50], measured[900] = 0.8, 0.3
    write_audio(os.path.join(rir_dir, "office.wav"), measured, 48000, "wav16")
    write_audio(os.path.join(rir_dir, "hall.flac"), np.roll(measured, 200), 48000, "flac")
    result = helpers.run_module("input.prepare", "--kind=rir", f"--input_dir={rir_dir}",
                                f"--output_dir={self.output_dir}", "--split=rooms",
                                "--sample_rate=16000", "--rir_seconds=0.25", timeout=120)
    self.assertEqual(result.returncode, 0, result.stderr[-2000:])
    manifest = records.read_manifest(self.output_dir, "rooms", kind="rir")
    self.assertEqual((manifest.num_examples, manifest.segment_samples), (2, 4000))

  @pytest.mark.end_to_end
  def test_command_line_source_without_input_dir_is_one_clear_line(self):
    result = subprocess.run(
        [sys.executable, "-m", "input.prepare", "--kind=noise", f"--output_dir={self.root}"],
        capture_output=True, text=True, timeout=120, env=helpers.env())
    self.assertEqual(result.returncode, 1)
    self.assertEqual("input.prepare: --kind=noise needs --input_dir, the directory of noise "
                     "recordings.", result.stderr.strip().splitlines()[-1])


if __name__ == "__main__":
  tf.test.main()
