"""Tests for setup.cfg: every package is installed, and a non-editable install finds its flagfiles and its trained default model from any directory."""

import configparser
import importlib.util
import os
import shutil
import subprocess
import sys

import pytest
from scipy.io import wavfile
import tensorflow as tf

from input import audio
from input import synthetic
from tests import helpers

TOP_LEVEL = ("common", "ops", "input", "trainer")


def setup_cfg() -> configparser.ConfigParser:
  config = configparser.ConfigParser()
  config.read(os.path.join(helpers.REPO, "setup.cfg"))
  return config


class PackagingTest(tf.test.TestCase):

  def test_the_package_list_is_the_tree_plus_the_flagfiles(self):
    listed = setup_cfg()["options"]["packages"].split()
    found = [os.path.relpath(directory, helpers.REPO).replace(os.sep, ".")
             for top in TOP_LEVEL for directory, _, names in os.walk(
                 os.path.join(helpers.REPO, top)) if "__init__.py" in names]
    self.assertCountEqual(listed, [*found, "trainer.flags"])
    self.assertEqual(setup_cfg()["options"]["package_dir"].split(), ["trainer.flags", "=",
                                                                     "flags"])

  @pytest.mark.end_to_end
  @pytest.mark.slow
  def test_an_installed_copy_diagnoses_cpu_flags_from_another_directory(self):
    source = os.path.join(self.create_tempdir().full_path, "source")
    shutil.copytree(helpers.REPO, source, ignore=shutil.ignore_patterns(
        ".git", "tests", "runs", "build", "*.egg-info", "__pycache__"))
    target = self.create_tempdir().full_path
    # build with this environment's setuptools when it can (offline); else pip fetches them
    here = ["--no-build-isolation"] if all(
        importlib.util.find_spec(m) for m in ("setuptools", "wheel")) else []
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", *here,
                    f"--target={target}", source], check=True, capture_output=True, timeout=600)
    self.assertTrue(os.path.isfile(os.path.join(target, "trainer", "flags", "cpu.flags")))
    for name in ("default", "streaming"):
      self.assertTrue(os.path.isfile(os.path.join(target, "trainer", "pretrained", name,
                                                  "variables", "variables.index")), name)
    shutil.rmtree(source)  # nothing may come from the source tree
    elsewhere = self.create_tempdir().full_path
    installed = helpers.env(PYTHONPATH=target)  # before the suite's editable install
    where = subprocess.run([sys.executable, "-c", "import trainer; print(trainer.__file__)"],
                           cwd=elsewhere, env=installed, capture_output=True, text=True,
                           check=True)
    self.assertEqual(where.stdout.strip(), os.path.join(target, "trainer", "__init__.py"))
    result = helpers.run_module(
        "trainer.main", "--flagfile=cpu.flags", "--mode=diagnose",
        "--model_dir=run", "--synthetic_examples=16", "--synthetic_eval_examples=2",
        "--synthetic_seconds=0.5", "--crop_seconds=0.5", "--sample_rate=8000",
        "--global_batch_size=4", "--steps_per_loop=2", "--diagnose_steps=2",
        "--diagnose_warmup=1", "--hidden=8", "--depth=2",
        cwd=elsewhere, timeout=600, env=installed)
    self.assertEqual(result.returncode, 0, result.stderr[-2000:])
    self.assertIn("trainer.main: diagnosed", result.stdout)
    # the packaged default enhances a file without --saved_model
    noisy = synthetic.example(seed=5, index=0, num_samples=22050, sample_rate=22050)[0]
    wavfile.write(os.path.join(elsewhere, "noisy.wav"), 22050, audio.to_int16(noisy)[0])
    result = helpers.run_module("trainer.denoise", "--input=noisy.wav",
                                "--output=enhanced.wav", cwd=elsewhere, timeout=600,
                                env=installed)
    self.assertEqual(result.returncode, 0, result.stderr[-2000:])
    rate, enhanced = wavfile.read(os.path.join(elsewhere, "enhanced.wav"))
    self.assertEqual((rate, len(enhanced)), (22050, 22050))
