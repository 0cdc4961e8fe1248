"""Tests for trainer.program.build: a job built from flags refuses what does not fit the data and wires accumulation, the weight average and the mix through."""

from absl.testing import flagsaver
from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from common import checks
from input import pipeline
from input import records
from tests import helpers
from tests.trainer.program import parsed
from trainer.program import build


class BuildTest(tf.test.TestCase, parameterized.TestCase):

  def setUp(self):
    super().setUp()
    self.enter_context(flagsaver.flagsaver())

  @parameterized.parameters(
      (["--architecture=unet", "--kernel_size=2"], "--kernel_size=2 must be >= stride=4"),
      (["--architecture=unet", "--kernel_size=8", "--hidden=6", "--depth=1",
        "--attention_heads=4"], "--attention_heads=4 must divide the bottleneck's 6 channels"),
      (["--architecture=mask", "--depth=0"], "--depth=0 must be >= 1"),
      (["--warmup_steps=500", "--train_steps=100"], r"--warmup_steps=500 must be in \[0, 100\)"),
      (["--reverb_proba=2"], r"--reverb_proba=2.0 must be in \[0, 1\]"),
      (["--remix_proba=-1"], r"--remix_proba=-1.0 must be in \[0, 1\]"),
      (["--beta_1=1.5"], r"--beta_1=1.5 must be in \[0, 1\)"),
      (["--stft_weight=-1"], "--stft_weight=-1.0 must be >= 0"),
      (["--steps_per_loop=0"], "--steps_per_loop=0 must be >= 1"),
      (["--log_every=0"], "--log_every=0 must be >= 1"),
      (["--keep_checkpoints=0"], "--keep_checkpoints=0 must be >= 1"),
      (["--crop_seconds=2"], "--crop_seconds=2.0 is 16000 samples, but the segments of the "
       "pairs split 'train' in"),
      (["--profile_steps=10"], r"--profile_steps='10' must be START,END"),
      (["--profile_steps=10,5"], r"--profile_steps='10,5' needs 0 <= START < END"),
      (["--data_service=localhost:5050"], "--data_service=localhost:5050 must look like "
       "grpc://host:port"),
      (["--data_service_timeout=0"], "--data_service_timeout=0.0 must be a positive number"),
      (["--recover_attempts=-1"], "--recover_attempts=-1 must be >= 0"),
      (["--loss_scale=dynamic", "--loss_scale_growth_interval=0"],
       "--loss_scale_growth_interval=0 must be >= 1"),
      (["--loss_scale=dynamic", "--initial_loss_scale=0.5"],
       "--initial_loss_scale=0.5 must be >= 1.0"),
      (["--divergence_rise=-2"], "--divergence_rise=-2.0 must be >= 0"),
      (["--divergence_loss=nan"], "--divergence_loss=nan must be a finite number"),
      (["--clean_split=speech"], "--clean_split=speech needs --noise_split too"),
      (["--noise_split=noise"], "--noise_split=noise needs --clean_split too"),
      (["--rir_split=rooms"], "--rir_split=rooms is for runs that mix"),
      (["--rir_proba=0.5"], "--rir_proba=0.5 is for runs that mix"),
      (["--snr_db=5"], "--snr_db='5' must be LO,HI"),
      (["--clean_split=speech", "--noise_split=noise", "--snr_db=20,5"],
       r"--snr_db=\(20, 5\) must be \(lo, hi\), finite numbers with lo <= hi"),
      (["--clean_split=speech", "--noise_split=noise", "--snr_db=-inf,20"],
       r"--snr_db=\(-inf, 20\) must be \(lo, hi\), finite numbers"),
      (["--clean_split=speech", "--noise_split=noise", "--snr_db=-5,inf"],
       r"--snr_db=\(-5, inf\) must be \(lo, hi\), finite numbers"),
      (["--clean_split=speech", "--noise_split=noise", "--speech_level_db=-inf,-20"],
       r"--speech_level_db=\(-inf, -20\) must be \(lo, hi\), finite numbers"),
      (["--clean_split=speech", "--noise_split=noise", "--snr_db=nan,5"],
       r"--snr_db=\(nan, 5\) must be \(lo, hi\), finite numbers"),
      (["--clean_split=speech", "--noise_split=noise", "--rir_proba=2"],
       r"--rir_proba=2.0 must be in \[0, 1\]"),
      (["--clean_split=speech", "--noise_split=noise", "--early_reflections_ms=-1"],
       "--early_reflections_ms=-1.0 must be >= 0"))
  def test_bad_values_name_the_flag(self, argv, error):
    data_dir = self.create_tempdir().full_path
    helpers.indexed_split(data_dir, num_examples=4, num_shards=1, segment_samples=8000)
    for kind, split in (("clean", "speech"), ("noise", "noise")):
      helpers.indexed_store(data_dir, kind, num_examples=2, num_shards=1,
                            segment_samples=8000, split=split)
    with self.assertRaises(checks.ArgumentError) as refused:
      build.build(parsed.configs("--flagfile=cpu.flags", f"--data_dir={data_dir}",
                        "--eval_split=", *argv))
    self.assertRegex(refused.exception.flag(), "^" + error)

  def test_a_store_shorter_than_the_crop_is_named(self):
    data_dir = self.create_tempdir().full_path
    helpers.indexed_store(data_dir, "clean", num_examples=2, num_shards=1,
                          segment_samples=16000, split="speech")
    helpers.indexed_store(data_dir, "noise", num_examples=2, num_shards=1,
                          segment_samples=4000, split="noise")
    with self.assertRaises(checks.ArgumentError) as refused:
      build.build(parsed.configs("--flagfile=cpu.flags", f"--data_dir={data_dir}", "--eval_split=",
                        "--clean_split=speech", "--noise_split=noise", "--crop_seconds=1",
                        "--remix_proba=0", "--reverb=off"))
    self.assertRegex(refused.exception.flag(), "^--crop_seconds=1.0 is 8000 samples, but the "
                     f"segments of the noise split 'noise' in {data_dir} hold 4000 \\(0.5 s\\)")

  def test_accumulation_reaches_the_step_the_loop_and_the_input(self):
    data_dir = self.create_tempdir().full_path
    helpers.indexed_split(data_dir, num_examples=4, num_shards=1, segment_samples=8000)
    job = build.build(parsed.configs("--flagfile=cpu.flags", f"--data_dir={data_dir}",
                            "--eval_split=", "--accumulate_steps=3"))
    self.assertEqual(job.train_step.accumulate_steps, 3)
    self.assertEqual(job.loop.examples_per_step, 3 * job.configs.run.global_batch_size)

  def test_a_weight_average_is_kept_checkpointed_and_evaluated(self):
    data_dir = self.create_tempdir().full_path
    helpers.indexed_split(data_dir, num_examples=4, num_shards=1, segment_samples=8000)
    job = build.build(parsed.configs("--flagfile=cpu.flags", f"--data_dir={data_dir}",
                            "--eval_split=", "--ema_decay=0.99"))
    self.assertEqual(job.train_step.ema.decay, 0.99)
    self.assertIs(job.checkpoint.ema, job.train_step.ema)
    self.assertIsNone(build.build(parsed.configs("--flagfile=cpu.flags", f"--data_dir={data_dir}",
                                        "--eval_split=")).train_step.ema)

  def test_a_mixing_run_reads_both_stores_and_mixes_with_the_rooms_in_the_step(self):
    data_dir = self.create_tempdir().full_path
    helpers.indexed_split(data_dir, num_examples=4, num_shards=1, segment_samples=8000,
                          split="eval")
    helpers.indexed_store(data_dir, "clean", num_examples=16, num_shards=2,
                          segment_samples=8000, split="speech")
    helpers.indexed_store(data_dir, "noise", num_examples=6, num_shards=1,
                          segment_samples=8000)
    rooms = np.zeros([3, 4000], np.float32)
    rooms[:, 10] = 1.0
    records.write_split(((r, f"r{i}") for i, r in enumerate(rooms)), data_dir, "rooms",
                        num_shards=1, sample_rate=8000, segment_samples=4000, kind="rir")
    mixing = ("--flagfile=cpu.flags", f"--data_dir={data_dir}", "--clean_split=speech",
              "--noise_split=noise", "--rir_split=rooms", "--rir_proba=0.5",
              "--snr_db=0,10", "--remix_proba=0", "--reverb=off")
    job = build.build(parsed.configs(*mixing))
    mix = job.train_step._mix  # pylint: disable=protected-access
    self.assertEqual((mix.snr_db, mix.speech_level_db, mix.rir_proba), ((0.0, 10.0),
                                                                         (-35.0, -15.0), 0.5))
    self.assertAllEqual(mix.rirs, rooms)
    self.assertEqual((job.train_manifest.kind, job.noise_manifest.kind), ("clean", "noise"))
    iterator = iter(pipeline.distribute(job.strategy, job.train_dataset_fn(0)))
    metrics = job.train_step(iterator, num_steps=2)
    self.assertEqual(int(metrics["global_step"]), 2)
    self.assertTrue(np.isfinite(metrics["loss"]))
    with self.assertRaisesRegex(ValueError, "room responses are 4000 samples .* longer than "
                                "the 2400-sample"):
      build.build(parsed.configs(*mixing, "--crop_seconds=0.3"))
    with self.assertRaisesRegex(ValueError, "holds pairs records, but clean records are needed"):
      build.build(parsed.configs(*mixing, "--clean_split=eval"))


if __name__ == "__main__":
  tf.test.main()
