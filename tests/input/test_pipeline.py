"""Tests for input.pipeline: sharding coverage, eval padding, static shapes, MirroredStrategy."""

import collections

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from input import pipeline
import ops
from tests import helpers


def context(pipelines, index):
  return tf.distribute.InputContext(num_input_pipelines=pipelines, input_pipeline_id=index,
                                    num_replicas_in_sync=pipelines)


def seen(dataset, key="clean"):
  out = []
  for batch in dataset:
    weights = batch.get("weight", tf.ones([batch[key].shape[0]])).numpy()
    out += [i for i, w in zip(helpers.indices(batch[key]), weights) if w > 0]
  return out


class TrainPipelineTest(tf.test.TestCase, parameterized.TestCase):

  @parameterized.parameters((2, 8), (4, 8), (4, 2))  # (pipelines, shards)
  def test_one_epoch_covers_every_example_once(self, pipelines, shards):
    manifest = helpers.indexed_split(self.create_tempdir().full_path, num_examples=32,
                                      num_shards=shards)
    fn = pipeline.make_train_dataset_fn(
        manifest, pipeline.TrainInputConfig(global_batch_size=2 * pipelines, epochs=1))
    counts = collections.Counter()
    for i in range(pipelines):
      counts.update(seen(fn(context(pipelines, i))))
    self.assertEqual(counts, collections.Counter(range(32)))

  def test_skip_batches_resumes_the_exact_stream(self):
    manifest = helpers.indexed_split(self.create_tempdir().full_path, num_examples=24,
                                      num_shards=3, segment_samples=400)
    make = lambda skip: pipeline.make_train_dataset_fn(  # pylint: disable=g-long-lambda
        manifest, pipeline.TrainInputConfig(global_batch_size=4, crop_seconds=0.01,
                                            deterministic=True, seed=3,
                                            skip_steps=skip))(context(1, 0))
    whole = [b["noisy"].numpy() for b in make(0).take(10)]
    resumed = [b["noisy"].numpy() for b in make(4).take(6)]
    for a, b in zip(whole[4:], resumed):
      self.assertAllEqual(a, b)

  def test_fewer_files_than_pipelines_warns(self):
    manifest = helpers.indexed_split(self.create_tempdir().full_path, num_examples=8,
                                      num_shards=1)
    with self.assertLogs("absl", "WARNING") as logs:
      pipeline.make_train_dataset_fn(
          manifest, pipeline.TrainInputConfig(global_batch_size=2))(context(2, 0))
    self.assertIn("sharding by record", "".join(logs.output))

  def test_batches_are_static_float32_crops(self):
    manifest = helpers.indexed_split(self.create_tempdir().full_path, num_examples=16,
                                      num_shards=4, segment_samples=800)
    fn = pipeline.make_train_dataset_fn(
        manifest, pipeline.TrainInputConfig(global_batch_size=8, crop_seconds=0.025))
    dataset = fn(context(2, 1))
    for key in ("noisy", "clean"):
      self.assertEqual(dataset.element_spec[key].shape, [4, 200])
      self.assertEqual(dataset.element_spec[key].dtype, tf.float32)
    batch = next(iter(dataset))
    # noisy - clean = (1000 - sample) / 32768, so the crop offset can be read back.
    offsets = 1000 - np.round((batch["noisy"] - batch["clean"])[:, 0] * 32768)
    self.assertTrue(((offsets >= 0) & (offsets <= 600)).all())
    self.assertGreater(len(set(offsets.tolist())), 1)
    self.assertAllClose(batch["noisy"] - batch["clean"],
                        (1000 - offsets[:, None] - np.arange(200)) / 32768)

  def test_crop_longer_than_segment_is_an_error(self):
    manifest = helpers.indexed_split(self.create_tempdir().full_path, num_examples=2,
                                      num_shards=1, segment_samples=80)
    with self.assertRaisesRegex(ValueError, "crop_seconds=1.0 is 8000 samples"):
      pipeline.make_train_dataset_fn(
          manifest, pipeline.TrainInputConfig(global_batch_size=2, crop_seconds=1.0))

  def test_host_reverb_is_applied_and_reproducible(self):
    manifest = helpers.indexed_split(self.create_tempdir().full_path, num_examples=8,
                                      num_shards=1, segment_samples=400)
    reverb = ops.RevEcho(sample_rate=8000, proba=1.0)

    def first_batch(with_reverb):
      fn = pipeline.make_train_dataset_fn(manifest, pipeline.TrainInputConfig(
          global_batch_size=8, epochs=1, shuffle_buffer_mb=0, reverb=with_reverb))
      return next(iter(fn(context(1, 0))))

    dry, wet, wet_again = first_batch(None), first_batch(reverb), first_batch(reverb)
    self.assertNotAllClose(dry["clean"], wet["clean"])
    self.assertAllEqual(wet["clean"], wet_again["clean"])


class MixingPipelineTest(tf.test.TestCase):

  def stores(self, clean_examples=16, noise_examples=6, noise_rate=8000):
    data_dir = self.create_tempdir().full_path
    return (helpers.indexed_store(data_dir, "clean", num_examples=clean_examples, num_shards=4),
            helpers.indexed_store(data_dir, "noise", num_examples=noise_examples, num_shards=2,
                                  sample_rate=noise_rate, segment_samples=96))

  def test_two_workers_read_disjoint_shards_of_both_stores(self):
    clean, noise = self.stores()
    fn = pipeline.make_mixing_dataset_fn(clean, noise, pipeline.TrainInputConfig(
        global_batch_size=4, epochs=1, crop_seconds=0.005))
    speech, noises = [], []
    for worker in range(2):
      batches = list(fn(context(2, worker)))
      speech.append(seen(batches))
      noises.append(set(seen(batches, "noise")))
      for batch in batches:
        self.assertEqual(sorted(batch), ["clean", "noise"])
        self.assertEqual(batch["noise"].shape, [2, 40])
        self.assertEqual(batch["noise"].dtype, tf.float32)
    self.assertCountEqual(speech[0] + speech[1], range(16))  # one epoch of speech
    self.assertEmpty(noises[0] & noises[1])  # noise shards split between the workers ...
    self.assertEqual(noises[0] | noises[1], set(range(6)))  # ... and cycled: 8 > 3 each

  def test_noise_has_its_own_shuffle_and_crops(self):
    clean, noise = self.stores(noise_examples=16)
    fn = pipeline.make_mixing_dataset_fn(clean, noise, pipeline.TrainInputConfig(
        global_batch_size=4, epochs=1, seed=5, crop_seconds=0.005, deterministic=True))
    batches = list(fn(context(1, 0)))
    self.assertNotEqual(seen(batches), seen(batches, "noise"))
    again = [b["noise"].numpy() for b in fn(context(1, 0))]
    self.assertAllEqual([b["noise"].numpy() for b in batches], again)

  def test_skip_steps_resumes_both_streams_exactly(self):
    clean, noise = self.stores()
    make = lambda skip: pipeline.make_mixing_dataset_fn(  # pylint: disable=g-long-lambda
        clean, noise, pipeline.TrainInputConfig(global_batch_size=2, crop_seconds=0.004,
                                                deterministic=True, seed=3,
                                                skip_steps=skip))(context(1, 0))
    whole = list(make(0).take(10))
    resumed = list(make(4).take(6))
    for a, b in zip(whole[4:], resumed):
      self.assertAllEqual(a["clean"], b["clean"])
      self.assertAllEqual(a["noise"], b["noise"])

  def test_bad_stores_are_refused(self):
    clean, noise = self.stores(noise_rate=16000)
    config = pipeline.TrainInputConfig(global_batch_size=2, crop_seconds=0.002)
    with self.assertRaisesRegex(ValueError, "at 8000 Hz but the noise store 'noise' at 16000"):
      pipeline.make_mixing_dataset_fn(clean, noise, config)
    with self.assertRaisesRegex(ValueError, "holds clean records, but noise records are needed"):
      pipeline.make_mixing_dataset_fn(clean, clean, config)
    with self.assertRaisesRegex(ValueError, "holds clean records, but pairs records are needed here: .*--kind=pairs .*--clean_split and --noise_split"):
      pipeline.make_train_dataset_fn(clean, config)
    with self.assertRaisesRegex(ValueError, "holds clean records, but pairs records are needed"):
      pipeline.make_eval_dataset_fn(clean, global_batch_size=2)
    clean, noise = self.stores()
    with self.assertRaisesRegex(ValueError, "Host-side reverb needs stored pairs"):
      pipeline.make_mixing_dataset_fn(clean, noise, pipeline.TrainInputConfig(
          global_batch_size=2, reverb=ops.RevEcho(sample_rate=8000)))
    with self.assertRaisesRegex(ValueError, "clean segments hold 64 samples and the noise "
                                "segments 96: pass --crop_seconds"):
      pipeline.make_mixing_dataset_fn(clean, noise, pipeline.TrainInputConfig(
          global_batch_size=2))


class EvalPipelineTest(tf.test.TestCase, parameterized.TestCase):

  @parameterized.parameters((1, 3, 5), (2, 4, 3), (4, 2, 3), (2, 5, 4))
  def test_every_example_exactly_once_with_padded_tail(self, pipelines, shards, batch):
    manifest = helpers.indexed_split(self.create_tempdir().full_path, num_examples=13,
                                      num_shards=shards)
    fn = pipeline.make_eval_dataset_fn(manifest, global_batch_size=batch * pipelines)
    counts, batches, weights = collections.Counter(), [], 0.0
    for i in range(pipelines):
      dataset = fn(context(pipelines, i))
      self.assertEqual(dataset.element_spec["noisy"].shape, [batch, 64])
      counts.update(seen(dataset))
      batches.append(len(list(dataset)))
      weights += sum(float(tf.reduce_sum(b["weight"])) for b in dataset)
    self.assertEqual(counts, collections.Counter(range(13)))
    self.assertLen(set(batches), 1)  # every pipeline steps the same number of times
    self.assertEqual(weights, 13.0)

  def test_padding_is_silent(self):
    manifest = helpers.indexed_split(self.create_tempdir().full_path, num_examples=3,
                                      num_shards=1)
    batch = list(pipeline.make_eval_dataset_fn(manifest, global_batch_size=4)(context(1, 0)))
    self.assertLen(batch, 1)
    self.assertAllEqual(batch[0]["weight"], [1, 1, 1, 0])
    self.assertAllEqual(batch[0]["noisy"][3], tf.zeros([64]))


class DistributeTest(tf.test.TestCase):

  def test_mirrored_strategy_gets_different_per_replica_batches(self):
    strategy = helpers.mirrored()
    manifest = helpers.indexed_split(self.create_tempdir().full_path, num_examples=32,
                                      num_shards=4)
    # One epoch: with repeat(), the shuffle buffer may mix in the next epoch's copy.
    fn = pipeline.make_train_dataset_fn(
        manifest, pipeline.TrainInputConfig(global_batch_size=8, epochs=1))
    dataset = pipeline.distribute(strategy, fn, per_replica_buffer=2)
    batch = next(iter(dataset))
    local = strategy.experimental_local_results(batch["clean"])
    self.assertLen(local, 2)
    self.assertEqual([t.shape for t in local], [[4, 64], [4, 64]])
    self.assertEqual([t.device.split(":")[-1] for t in local], ["0", "1"])
    self.assertEmpty(set(helpers.indices(local[0])) & set(helpers.indices(local[1])))

  def test_eval_under_mirrored_strategy_is_exact(self):
    strategy = helpers.mirrored()
    manifest = helpers.indexed_split(self.create_tempdir().full_path, num_examples=11,
                                      num_shards=3)
    dataset = pipeline.distribute(
        strategy, pipeline.make_eval_dataset_fn(manifest, global_batch_size=4))
    counts = collections.Counter()
    for batch in dataset:
      for clean, weight in zip(strategy.experimental_local_results(batch["clean"]),
                               strategy.experimental_local_results(batch["weight"])):
        counts.update(i for i, w in zip(helpers.indices(clean), weight.numpy()) if w > 0)
    self.assertEqual(counts, collections.Counter(range(11)))


if __name__ == "__main__":
  tf.test.main()
