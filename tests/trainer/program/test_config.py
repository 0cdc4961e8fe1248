"""Every flagfile parses and validates; bad flag values get errors that name the flag."""

import glob
import os

from absl import flags
from absl.testing import flagsaver
from absl.testing import parameterized
import tensorflow as tf

from tests import helpers
from trainer import main  # defines every flag of the program
from trainer.program import strategy

REPO = helpers.REPO
FLAGS = flags.FLAGS
GPUS = {"a100.flags": 2, "h100x8.flags": 8, "cpu.flags": 0}


def parse(*argv):
  FLAGS.unparse_flags()
  FLAGS(["trainer.main", *argv])
  return main.Configs()


class FlagfileTest(tf.test.TestCase, parameterized.TestCase):

  def setUp(self):
    super().setUp()
    self.enter_context(flagsaver.flagsaver())
    self.cwd = os.getcwd()
    os.chdir(REPO)  # flagfiles include each other by repo-relative path
    self.addCleanup(os.chdir, self.cwd)
    self.data_dir = self.create_tempdir().full_path

  def test_every_flagfile_is_covered(self):
    self.assertCountEqual([os.path.basename(p) for p in glob.glob(f"{REPO}/flags/*.flags")],
                          GPUS)

  @parameterized.parameters(*GPUS.items())
  def test_flagfile_validates_on_its_machine(self, name, gpus):
    configs = parse(f"--flagfile=flags/{name}", f"--data_dir={self.data_dir}")
    strategy.check_devices(configs.run.strategy, num_gpus=configs.run.num_gpus,
                           cpu_replicas=configs.run.cpu_replicas, gpus_found=gpus)
    replicas = max(gpus, 1)
    self.assertEqual(configs.run.global_batch_size % replicas, 0)
    if gpus:
      self.assertEqual(configs.run.global_batch_size // replicas, 32)  # per-GPU batch 32
      self.assertEqual(configs.optimization.precision, "mixed_bfloat16")
      self.assertEqual(configs.optimization.loss_scale, "dynamic")
      self.assertEqual((configs.data.reverb, configs.data.crop_seconds), ("device", 10.0))

  @parameterized.parameters("a100.flags", "h100x8.flags")
  def test_gpu_flagfiles_explain_missing_gpus(self, name):
    configs = parse(f"--flagfile=flags/{name}", f"--data_dir={self.data_dir}")
    with self.assertRaisesRegex(ValueError, r"but 0 GPU\(s\) were found.*--cpu_replicas=2"):
      strategy.check_devices(configs.run.strategy, num_gpus=configs.run.num_gpus,
                             cpu_replicas=configs.run.cpu_replicas, gpus_found=0)

  def test_gpu_flagfile_needs_data(self):
    with self.assertRaisesRegex(ValueError, "No data: pass --data_dir"):
      parse("--flagfile=flags/a100.flags")

  def test_profile_steps_parse_to_a_window(self):
    self.assertEqual(parse("--profile_steps=100,110").run.profile_steps, (100, 110))
    self.assertIsNone(parse().run.profile_steps)

  def test_each_architecture_has_its_own_defaults_and_shape(self):
    mask = parse()
    self.assertEqual(mask.model.architecture, "mask")
    self.assertEqual(mask.model.model_kwargs(),
                     dict(hidden=128, depth=6, kernel_size=3, causal=False))
    unet = parse("--architecture=unet")  # a kernel below --stride would be refused
    self.assertEqual(unet.model.model_kwargs(),
                     dict(hidden=16, depth=3, kernel_size=8, stride=4, growth=2,
                          max_hidden=10000, causal=False, attention_heads=4,
                          attention_layers=1))
    self.assertEqual(parse("--architecture=unet", "--hidden=24").model.hidden, 24)

  @parameterized.parameters(
      (["--architecture=unet", "--kernel_size=2"], "--kernel_size=2 must be >= --stride=4"),
      (["--architecture=unet", "--kernel_size=8", "--hidden=6", "--depth=1",
        "--attention_heads=4"],
       "not divisible by"),
      (["--architecture=mask", "--depth=0"], "--depth must be >= 1"),
      (["--warmup_steps=500", "--train_steps=100"], "--warmup_steps=500"),
      (["--reverb_proba=2"], r"--reverb_proba must be in \[0, 1\]"),
      (["--steps_per_loop=0"], "--steps_per_loop must be >= 1"),
      (["--profile_steps=10"], r"--profile_steps='10' must be START,END"),
      (["--profile_steps=10,5"], r"--profile_steps='10,5' needs 0 <= START < END"),
      (["--data_service_timeout=0"], r"--data_service_timeout must be > 0"))
  def test_bad_values_name_the_flag(self, argv, error):
    with self.assertRaisesRegex(ValueError, error):
      parse("--flagfile=flags/cpu.flags", *argv)


if __name__ == "__main__":
  tf.test.main()
