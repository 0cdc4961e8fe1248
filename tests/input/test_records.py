"""Tests for the input.records package (layout, reader, writer, parser): round trips, manifest, compression, cropping, damaged shards."""

import json
import os
from unittest import mock

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from input import audio
from input import records
from tests import helpers


def read_all(manifest, **parse_args):
  dataset = tf.data.TFRecordDataset(
      manifest.paths, records.tfrecord_compression(manifest.compression)).batch(1000)
  return records.parse_batch(next(iter(dataset)), segment_samples=manifest.segment_samples,
                             **parse_args)


def split_with_manifest_fields(data_dir, edit):
  """A two-example split whose manifest's fields are replaced by `edit(fields)`."""
  helpers.indexed_split(data_dir, num_examples=2, num_shards=1)
  path = records.manifest_path(data_dir, "train")
  with open(path) as f:
    fields = json.load(f)
  with open(path, "w") as f:
    json.dump(edit(fields), f)


class RecordsTest(tf.test.TestCase, parameterized.TestCase):

  def test_round_trip_within_int16_quantisation(self):
    rng = np.random.default_rng(0)
    signals = rng.uniform(-1, 0.99, [5, 2, 300])
    manifest = records.write_split(
        ((audio.to_int16(n)[0], audio.to_int16(c)[0], f"id{i}")
         for i, (n, c) in enumerate(signals)),
        self.create_tempdir().full_path, "train", num_shards=1, sample_rate=16000,
        segment_samples=300)
    parsed = read_all(manifest)
    self.assertAllClose(records.pcm_to_float(parsed["noisy"]), signals[:, 0], atol=1 / 32768)
    self.assertAllClose(records.pcm_to_float(parsed["clean"]), signals[:, 1], atol=1 / 32768)
    self.assertEqual([s.decode() for s in parsed["id"].numpy()], [f"id{i}" for i in range(5)])

  def test_manifest_contents(self):
    data_dir = self.create_tempdir().full_path
    helpers.indexed_split(data_dir, num_examples=10, num_shards=3, segment_samples=800)
    with open(records.manifest_path(data_dir, "train")) as f:
      fields = json.load(f)
    self.assertEqual(fields["shards"], [f"train-0000{i}-of-00003.tfrecord" for i in range(3)])
    self.assertEqual(fields["examples_per_shard"], [4, 3, 3])
    self.assertEqual(fields["num_examples"], 10)
    self.assertEqual((fields["sample_rate"], fields["segment_samples"]), (8000, 800))
    self.assertEqual(fields["compression"], "none")
    self.assertAllClose(fields["total_hours"], 10 * 0.1 / 3600)
    manifest = records.read_manifest(data_dir, "train")
    self.assertEqual(manifest.num_examples, 10)
    self.assertEqual(sorted(os.listdir(data_dir)),
                     sorted(fields["shards"] + ["train.manifest.json"]))

  @parameterized.parameters("none", "zlib", "gzip")
  def test_every_compression_reads_back(self, compression):
    data_dir = self.create_tempdir().full_path
    manifest = helpers.indexed_split(data_dir, num_examples=6, num_shards=2,
                                      compression=compression)
    self.assertEqual(records.read_manifest(data_dir, "train").compression, compression)
    self.assertCountEqual(helpers.indices(records.pcm_to_float(read_all(manifest)["clean"])),
                          range(6))

  def test_unknown_compression_is_an_error(self):
    with self.assertRaisesRegex(ValueError, "Unknown compression 'LZ4'"):
      records.tfrecord_compression("LZ4")
    with self.assertRaisesRegex(ValueError, "Unknown compression"):
      records.ShardWriter(self.create_tempdir().full_path, "train", num_shards=1,
                          sample_rate=8000, segment_samples=10, compression="lz4")

  def test_crop_cuts_before_decoding(self):
    data_dir = self.create_tempdir().full_path
    manifest = helpers.indexed_split(data_dir, num_examples=3, num_shards=1)
    full = read_all(manifest)["noisy"].numpy()
    cropped = read_all(manifest, crop_samples=10, crop_offsets=tf.constant([0, 5, 54]))
    self.assertEqual(cropped["noisy"].shape, [3, 10])
    for row, offset in enumerate([0, 5, 54]):
      self.assertAllEqual(cropped["noisy"][row], full[row, offset:offset + 10])

  def test_float_audio_is_refused_not_stored_as_zeros(self):
    data_dir = self.create_tempdir().full_path
    examples = [(np.full(10, 0.5), np.zeros(10, np.int16), "float-noisy")]
    with self.assertRaisesRegex(ValueError, "float-noisy: noisy is float64, but pairs records "
                                "hold int16: convert .* with audio.to_int16"):
      records.write_split(examples, data_dir, "train", num_shards=1, sample_rate=8000,
                          segment_samples=10)
    self.assertEmpty(os.listdir(data_dir))

  def test_failed_write_leaves_nothing(self):
    data_dir = self.create_tempdir().full_path

    def examples():
      yield np.zeros(10, np.int16), np.zeros(10, np.int16), "ok"
      raise RuntimeError("decoder crashed")

    with self.assertRaisesRegex(RuntimeError, "decoder crashed"):
      records.write_split(examples(), data_dir, "train", num_shards=2, sample_rate=8000,
                          segment_samples=10)
    self.assertEmpty(os.listdir(data_dir))

  def test_an_existing_split_is_refused_and_left_as_it_was(self):
    data_dir = self.create_tempdir().full_path
    first = helpers.indexed_split(data_dir, num_examples=8, num_shards=4)
    before = {n: os.path.getsize(os.path.join(data_dir, n)) for n in os.listdir(data_dir)}
    with self.assertRaisesRegex(FileExistsError, r"already holds split 'train' \(4 shard"
                                r"\(s\)\); nothing was changed. Pass overwrite"):
      helpers.indexed_split(data_dir, num_examples=2, num_shards=2)
    self.assertEqual({n: os.path.getsize(os.path.join(data_dir, n))
                      for n in os.listdir(data_dir)}, before)
    self.assertEqual(records.read_manifest(data_dir, "train"), first)
    helpers.indexed_split(data_dir, num_examples=2, num_shards=2, split="eval")  # other split

  def test_overwrite_with_fewer_shards_removes_stale_ones(self):
    data_dir = self.create_tempdir().full_path
    helpers.indexed_split(data_dir, num_examples=8, num_shards=4)
    manifest = helpers.indexed_split(data_dir, num_examples=8, num_shards=2, overwrite=True)
    self.assertEqual(sorted(os.listdir(data_dir)),
                     sorted(list(manifest.shards) + ["train.manifest.json"]))

  def test_a_failed_replacement_leaves_the_old_split_whole(self):
    data_dir = self.create_tempdir().full_path
    first = helpers.indexed_split(data_dir, num_examples=8, num_shards=4)
    before = {n: os.path.getsize(os.path.join(data_dir, n)) for n in os.listdir(data_dir)}
    real_rename = tf.io.gfile.rename

    def rename(source, target, overwrite=False):
      if source.endswith("train-00001-of-00002.tfrecord.tmp"):  # the second new shard
        raise tf.errors.ResourceExhaustedError(None, None, "No space left on device")
      return real_rename(source, target, overwrite)

    with mock.patch.object(tf.io.gfile, "rename", rename):
      with self.assertRaisesRegex(OSError, "Could not write split 'train'.*No space left"):
        helpers.indexed_split(data_dir, num_examples=4, num_shards=2, overwrite=True)
    self.assertEqual({n: os.path.getsize(os.path.join(data_dir, n))
                      for n in os.listdir(data_dir)}, before)
    self.assertEqual(records.read_manifest(data_dir, "train"), first)
    self.assertCountEqual(helpers.indices(records.pcm_to_float(read_all(first)["clean"])),
                          range(8))

  def test_splits_are_matched_by_their_exact_name(self):
    data_dir = self.create_tempdir().full_path
    longer = helpers.indexed_split(data_dir, num_examples=4, num_shards=2, split="train-clean")
    helpers.indexed_split(data_dir, num_examples=2, num_shards=1)  # "train" is a new split
    helpers.indexed_split(data_dir, num_examples=2, num_shards=1, overwrite=True)
    self.assertEqual(records.read_manifest(data_dir, "train-clean"), longer)
    self.assertEqual(records.split_shards(data_dir, "train"),
                     [os.path.join(data_dir, "train-00000-of-00001.tfrecord")])

  def test_leftovers_of_an_interrupted_run_are_removed(self):
    data_dir = self.create_tempdir().full_path
    for name in (".train-00003-of-00004.tfrecord.tmp", ".train-clean-00000-of-00001.tfrecord.tmp"):
      with open(os.path.join(data_dir, name), "wb") as f:
        f.write(b"half a shard")
    helpers.indexed_split(data_dir, num_examples=2, num_shards=1)
    self.assertCountEqual(os.listdir(data_dir), [  # another split's temporaries stay
        "train-00000-of-00001.tfrecord", "train.manifest.json",
        ".train-clean-00000-of-00001.tfrecord.tmp"])

  def test_split_names_must_name_files(self):
    for bad in ("", ".hidden", "a/b"):
      with self.assertRaisesRegex(ValueError, "split=.* must be a name of letters"):
        helpers.indexed_split(self.create_tempdir().full_path, num_examples=1, num_shards=1,
                              split=bad)

  def test_a_manifest_without_examples_is_named(self):
    data_dir = self.create_tempdir().full_path
    split_with_manifest_fields(data_dir, lambda fields: dict(fields, examples_per_shard=[0]))
    with self.assertRaisesRegex(ValueError, r"lists 0 examples \(\[0\] per shard\): a split "
                                "needs at least one"):
      records.read_manifest(data_dir, "train")

  def test_manifest_fields_are_checked_against_the_records(self):
    data_dir = self.create_tempdir().full_path
    helpers.indexed_split(data_dir, num_examples=4, num_shards=2, sample_rate=8000)
    path = records.manifest_path(data_dir, "train")
    with open(path) as f:
      good = json.load(f)
    for change, error in ((dict(sample_rate=16000), "says 16000 Hz and 64-sample segments, "
                           "but the records in .* hold 8000 Hz and 64"),
                          (dict(segment_samples=32), "32-sample segments, but the records"),
                          (dict(compression="zlib"), "says compression 'zlib', but .* is "
                           "'none'")):
      with open(path, "w") as f:
        json.dump(dict(good, **change), f)
      with self.assertRaisesRegex(ValueError, error):
        records.read_manifest(data_dir, "train")

  def test_missing_manifest_and_shard_are_named(self):
    data_dir = self.create_tempdir().full_path
    with self.assertRaisesRegex(FileNotFoundError, "input.synthetic"):
      records.read_manifest(data_dir, "train")
    manifest = helpers.indexed_split(data_dir, num_examples=4, num_shards=2)
    os.remove(manifest.paths[1])
    with self.assertRaisesRegex(FileNotFoundError, "train-00001-of-00002"):
      records.read_manifest(data_dir, "train")

  def test_truncated_shard_is_caught_by_its_size(self):
    data_dir = self.create_tempdir().full_path
    manifest = helpers.indexed_split(data_dir, num_examples=8, num_shards=2,
                                      segment_samples=200)
    with open(manifest.paths[1], "r+b") as f:
      f.truncate(os.path.getsize(manifest.paths[1]) // 2)
    with self.assertRaisesRegex(ValueError, r"train-00001-of-00002.tfrecord is \d+ bytes but "
                                "the manifest says"):
      records.read_manifest(data_dir, "train")

  def test_damaged_shards_are_named(self):
    data_dir = self.create_tempdir().full_path
    manifest = helpers.indexed_split(data_dir, num_examples=12, num_shards=3,
                                      segment_samples=200)
    with open(manifest.paths[1], "r+b") as f:
      f.truncate(os.path.getsize(manifest.paths[1]) - 100)
    with open(manifest.paths[2], "r+b") as f:
      f.seek(300)
      byte = f.read(1)
      f.seek(300)
      f.write(bytes([byte[0] ^ 0xFF]))
    problems = records.find_bad_shards(manifest)
    self.assertLen(problems, 2)
    self.assertIn("train-00001-of-00003", problems[0])
    self.assertIn("train-00002-of-00003", problems[1])

  def test_source_stores_round_trip_with_their_kind(self):
    data_dir = self.create_tempdir().full_path
    rng = np.random.default_rng(1)
    speech = rng.uniform(-1, 0.99, [3, 200])
    rooms = rng.normal(size=[2, 50]).astype(np.float32) * 1e-4  # a tail below int16's step
    clean = records.write_split(((audio.to_int16(x)[0], f"c{i}") for i, x in
                                 enumerate(speech)), data_dir, "speech", num_shards=2,
                                sample_rate=8000, segment_samples=200, kind="clean")
    rir = records.write_split(((x, f"r{i}") for i, x in enumerate(rooms)), data_dir, "rooms",
                              num_shards=1, sample_rate=8000, segment_samples=50, kind="rir")
    self.assertEqual(records.read_manifest(data_dir, "speech", kind="clean").signals,
                     ("clean",))
    self.assertEqual(rir.record_bytes, 4 * 50 + 128)
    self.assertEqual(clean.record_bytes, 2 * 200 + 128)
    parsed = read_all(clean, kind="clean")
    self.assertEqual(sorted(parsed), ["clean", "id"])
    self.assertAllClose(sorted(records.to_float(parsed["clean"]).numpy().tolist()),
                        sorted(speech.tolist()), atol=1 / 32768)
    parsed = read_all(rir, kind="rir", crop_samples=20, crop_offsets=tf.constant([5, 30]))
    self.assertEqual(parsed["rir"].dtype, tf.float32)
    self.assertAllEqual(records.to_float(parsed["rir"]), [rooms[0, 5:25], rooms[1, 30:50]])

  def test_a_split_of_another_kind_is_refused_by_name(self):
    data_dir = self.create_tempdir().full_path
    helpers.indexed_split(data_dir, num_examples=2, num_shards=1)
    with self.assertRaisesRegex(ValueError, "Split 'train' in .* holds pairs records, but noise "
                                "records are needed here: .*--kind=noise wrote"):
      records.read_manifest(data_dir, "train", kind="noise")
    with self.assertRaisesRegex(ValueError, "a clean split stores 1 signal"):
      records.write_split([(np.zeros(4, np.int16), np.zeros(4, np.int16), "x")], data_dir,
                          "speech", num_shards=1, sample_rate=8000, segment_samples=4,
                          kind="clean")
    with self.assertRaisesRegex(ValueError, "rir records hold float32"):
      records.write_split([(np.zeros(4, np.int16), "x")], data_dir, "rooms", num_shards=1,
                          sample_rate=8000, segment_samples=4, kind="rir")

  def test_manifests_without_a_kind_hold_pairs(self):
    data_dir = self.create_tempdir().full_path
    split_with_manifest_fields(data_dir, lambda fields: {k: v for k, v in fields.items()
                                                         if k != "kind"})
    self.assertEqual(records.read_manifest(data_dir, "train", kind="pairs").kind, "pairs")


if __name__ == "__main__":
  tf.test.main()
