"""Tests for trainer.program.config: every flagfile parses and validates, bad values and combinations are refused naming the flag, each field is one flag."""

import dataclasses
import glob
import os
from unittest import mock

from absl import flags
from absl.testing import flagsaver
from absl.testing import parameterized
import tensorflow as tf

from common import checks
from tests import helpers
from tests.trainer.program import parsed
from trainer import loss_scale
from trainer.evaluation import perceptual
from trainer.program import build_data
from trainer.program import strategy
from trainer.program.config import data as data_config
from trainer.program.config import model as model_config
from trainer.program.config import optimization as optimization_config
from trainer.program.config import run as run_config

REPO = helpers.REPO
FLAGS = flags.FLAGS
GPUS = {"a100.flags": 2, "a100_mixing.flags": 2, "h100x8.flags": 8, "cpu.flags": 0,
        "streaming.flags": 0}


class ConfigTest(tf.test.TestCase, parameterized.TestCase):

  def setUp(self):
    super().setUp()
    self.enter_context(flagsaver.flagsaver())
    self.data_dir = self.create_tempdir().full_path

  def test_every_flagfile_is_covered(self):
    self.assertCountEqual([os.path.basename(p) for p in glob.glob(f"{REPO}/flags/*.flags")],
                          GPUS)

  @parameterized.parameters(*GPUS.items())
  def test_flagfile_validates_on_its_machine(self, name, gpus):
    configs = parsed.configs(f"--flagfile={name}", f"--data_dir={self.data_dir}")
    strategy.check_devices(configs.run.strategy, num_gpus=configs.run.num_gpus,
                           cpu_replicas=configs.run.cpu_replicas, gpus_found=gpus)
    replicas = max(gpus, 1)
    self.assertEqual(configs.run.global_batch_size % replicas, 0)
    if gpus:
      self.assertEqual(configs.run.global_batch_size // replicas, 32)  # per-GPU batch 32
      self.assertEqual(configs.optimization.precision, "mixed_bfloat16")
      self.assertTrue(loss_scale.for_precision(configs.optimization.loss_scale,
                                               configs.optimization.precision).dynamic)
      self.assertEqual(configs.data.crop_seconds, 10.0)
      # reverberation on the GPUs: RevEcho in the step, or the mix's rooms
      self.assertTrue(configs.data.reverb == "device" or (configs.data.mixing and
                                                          configs.data.rir_proba > 0))

  def test_the_streaming_flagfile_is_the_default_recipe_causal_at_48k_for_4x_its_steps(self):
    default, streaming = parsed.configs(), parsed.configs("--flagfile=streaming.flags")
    self.assertEqual(streaming.model.model_card(sample_rate=48000, seed=0),
                     dataclasses.replace(default.model, causal=True, fft_length=2048)
                     .model_card(sample_rate=48000, seed=0))
    self.assertEqual(streaming.data, dataclasses.replace(default.data, sample_rate=48000))
    self.assertEqual(streaming.optimization, default.optimization)
    self.assertEqual(dataclasses.replace(streaming.run, model_dir=default.run.model_dir),
                     dataclasses.replace(default.run, train_steps=4 * default.run.train_steps))

  def test_the_cpu_flagfile_is_the_default_recipe_with_three_times_its_corpus_and_steps(self):
    default, cpu = parsed.configs(), parsed.configs("--flagfile=cpu.flags")
    rate = default.data.sample_rate
    self.assertEqual(cpu.model.model_card(sample_rate=rate, seed=0),
                     default.model.model_card(sample_rate=rate, seed=0))
    # Beyond the shape it pins (the model card above), every model flag is the default's.
    self.assertEqual(dataclasses.replace(cpu.model, hidden=None, depth=None, kernel_size=None,
                                         level=None), default.model)
    self.assertEqual(cpu.optimization, dataclasses.replace(default.optimization,
                                                           loss_scale="none"))
    self.assertEqual(cpu.data.synthetic_examples, 3 * default.data.synthetic_examples)
    self.assertEqual(cpu.run.train_steps, 3 * default.run.train_steps)

  @parameterized.parameters("a100.flags", "a100_mixing.flags", "h100x8.flags")
  def test_gpu_flagfiles_explain_missing_gpus(self, name):
    configs = parsed.configs(f"--flagfile={name}", f"--data_dir={self.data_dir}")
    with self.assertRaisesRegex(ValueError, r"but 0 GPU\(s\) were found.*--cpu_replicas=2"):
      strategy.check_devices(configs.run.strategy, num_gpus=configs.run.num_gpus,
                             cpu_replicas=configs.run.cpu_replicas, gpus_found=0)

  def test_gpu_flagfile_needs_data(self):
    with self.assertRaisesRegex(ValueError, "No data: pass --data_dir"):
      build_data.check_data_source(parsed.configs("--flagfile=a100.flags").data)

  def test_num_gpus_is_refused_where_it_cannot_be_honoured(self):
    with self.assertRaisesRegex(ValueError, "--num_gpus=2 cannot be honoured by "
                                "--strategy=multi_worker_mirrored.*CUDA_VISIBLE_DEVICES"):
      strategy.check_devices("multi_worker_mirrored", num_gpus=2, cpu_replicas=1,
                             gpus_found=8)
    strategy.check_devices("multi_worker_mirrored", num_gpus=None, cpu_replicas=1,
                           gpus_found=8)

  def test_profile_steps_parse_to_a_window(self):
    self.assertEqual(parsed.configs("--profile_steps=100,110").run.profile_steps, (100, 110))
    self.assertIsNone(parsed.configs().run.profile_steps)

  def test_each_architecture_has_its_own_defaults_and_shape(self):
    arguments = lambda *argv: parsed.configs(*argv).model.model_card(  # pylint: disable=g-long-lambda
        sample_rate=16000, seed=0).arguments
    self.assertEqual(parsed.configs().model.architecture, "mask")
    self.assertEqual(arguments(), dict(hidden=128, depth=6, kernel_size=3, causal=False,
                                       level="power", level_seconds=1.0, fft_length=0,
                                       noise_floor=0.2))
    self.assertEqual(arguments("--causal")["noise_floor"], 0.0)  # needs the whole clip
    self.assertEqual(arguments("--noise_floor=0.1")["noise_floor"], 0.1)
    self.assertEqual(arguments("--fft_length=2048")["fft_length"], 2048)
    self.assertEqual(arguments("--level=log")["level"], "log")
    self.assertEqual(arguments("--architecture=unet"),  # a kernel below stride is refused
                     dict(hidden=16, depth=3, kernel_size=8, stride=4, growth=2,
                          max_hidden=10000, causal=False, attention_heads=4,
                          attention_layers=1, level_seconds=1.0, attention_seconds=1.0))
    self.assertEqual(arguments("--architecture=unet", "--hidden=24")["hidden"], 24)
    self.assertNotIn("stride", arguments("--stride=2"))  # a unet flag: the mask model ignores it

  @parameterized.parameters(
      (["--mode=continuous_eval", "--keep_best=si_sdr", "--early_stop_patience=2"],
       "--early_stop_patience=2 acts in training: a sidecar evaluator cannot stop the trainer"),
      (["--early_stop_patience=2"], "--early_stop_patience=2 needs --keep_best=METRIC"),
      (["--keep_best=si_sdr", "--eval_split="], "--keep_best=si_sdr needs an eval split"),
      (["--mode=eval", "--eval_split="], "--mode=eval needs an eval split"),
      (["--keep_best=pesq", "--eval_perceptual_examples=0"],
       "--keep_best=pesq is scored only on --eval_perceptual_examples, which is 0"),
      (["--architecture=unet", "--causal", "--attention_seconds=2"],
       "--attention_seconds=2.0 is longer than --crop_seconds=1"),
      (["--causal", "--level_seconds=2"], "--level_seconds=2.0 is longer than --crop_seconds=1"),
      (["--architecture=unet", "--causal", "--level_seconds=1.5"],
       "--level_seconds=1.5 is longer than --crop_seconds=1"),
      (["--train_steps=0"], "--train_steps=0 must be >= 1"),
      (["--train_steps=-5"], "--train_steps=-5 must be >= 1"))
  def test_flag_combinations_are_refused_when_the_flags_are_read(self, argv, error):
    with self.assertRaises(checks.ArgumentError) as refused:
      parsed.configs("--flagfile=cpu.flags", *argv)
    self.assertRegex(refused.exception.flag(), "^" + error)

  def test_keep_best_on_pesq_needs_the_metrics_packages(self):
    with mock.patch.object(perceptual, "missing", return_value="pesq not installed: pip ..."):
      with self.assertRaisesRegex(checks.ArgumentError, "keep_best=stoi needs PESQ and STOI: "
                                  "pesq not installed"):
        parsed.configs("--flagfile=cpu.flags", "--keep_best=stoi")
    self.addCleanup(FLAGS.mark_as_parsed)  # a refused parse leaves the flags unparsed
    with self.assertRaisesRegex(flags.IllegalFlagValueError, "keep_best"):
      parsed.configs("--keep_best=sisdr")

  def test_every_field_is_one_flag(self):
    for config in (run_config.RunConfig, data_config.DataConfig, model_config.ModelConfig,
                   optimization_config.OptimizationConfig):
      for field in dataclasses.fields(config):
        self.assertIn(field.name, FLAGS)
        self.assertTrue(FLAGS[field.name].help.endswith(field.metadata["help"]))
        if field.metadata["parse"] is None:
          self.assertEqual(FLAGS[field.name].default, field.default)



if __name__ == "__main__":
  tf.test.main()
