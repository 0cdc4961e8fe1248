"""Tests for common.requirements: a missing TensorFlow is one clear ImportError, an untested one a warning, setup.cfg asks for the tested range, and the commands print their own lines, not TensorFlow's."""

import importlib.util
import os
import re
import subprocess
import sys
from unittest import mock
import warnings

import pytest
import tensorflow as tf

from common import requirements
from tests import helpers
from tests.test_packaging import setup_cfg


class RequirementsTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    requirements.require_tensorflow.cache_clear()
    self.addCleanup(requirements.require_tensorflow.cache_clear)

  def test_no_tensorflow_says_what_to_install(self):
    find_spec = importlib.util.find_spec
    hidden = lambda name, *args: None if name == "tensorflow" else find_spec(name, *args)
    with mock.patch.object(importlib.util, "find_spec", hidden), self.assertRaisesRegex(
        ImportError, r"needs TensorFlow, and none is installed: pip install "
        r"'denoise-train\[cpu\]' .* any tensorflow / tensorflow-cpu 2\.17-2\.21\."):
      requirements.require_tensorflow()

  def test_an_untested_version_warns_once_and_a_tested_one_is_quiet(self):
    with mock.patch.object(tf, "__version__", "2.22.0"), self.assertWarnsRegex(
        UserWarning, r"TensorFlow 2\.22\.0 is outside the range denoise-train is tested "
        r"with \(2\.17-2\.21\)"):
      requirements.require_tensorflow()
    requirements.require_tensorflow.cache_clear()
    for version in ("2.17.1", "2.21.0", "2.19.0rc1"):
      with mock.patch.object(tf, "__version__", version), warnings.catch_warnings():
        warnings.simplefilter("error")
        requirements.require_tensorflow()
      requirements.require_tensorflow.cache_clear()

  def test_only_a_command_quiets_tensorflow_and_a_flag_or_the_variable_keeps_it(self):
    for argv, preset, tf_config, expected in (
        (["-m", "--x=1"], None, None, "2"),  # python -m trainer.main
        (["-m", "--x=1"], None, "{}", "3"),  # a worker of a cluster: its errors too
        (["-m", "--tensorflow_logs"], None, "{}", None),
        (["/usr/bin/pytest"], None, None, None),  # library use
        (["-m"], "0", "{}", "0")):
      environ = {} if preset is None else {"TF_CPP_MIN_LOG_LEVEL": preset}
      environ.update({} if tf_config is None else {"TF_CONFIG": tf_config})
      with mock.patch.object(sys, "argv", argv), mock.patch.dict(os.environ, environ,
                                                                  clear=True):
        requirements.quiet_commands()
        self.assertEqual(os.environ.get("TF_CPP_MIN_LOG_LEVEL"), expected, argv)

  @pytest.mark.end_to_end
  def test_a_command_prints_its_own_line_alone(self):
    env = helpers.env()
    env.pop("TF_CPP_MIN_LOG_LEVEL")
    result = subprocess.run(
        [sys.executable, "-m", "trainer.denoise", "--saved_model=/nonexistent",
         "--input=x.wav", "--output=y.wav"], cwd=helpers.REPO, capture_output=True,
        text=True, timeout=300, env=env)
    self.assertNotEqual(result.returncode, 0)
    self.assertEqual(result.stderr.strip().splitlines(),
                     ["trainer.denoise: /nonexistent holds no SavedModel (saved_model.pb): "
                      "pass a directory written by python -m trainer.export."])

  def test_setup_cfg_asks_for_the_tested_range_and_pins_nothing(self):
    config = setup_cfg()
    low, high = requirements.TESTED
    for extra, package in (("cpu", "tensorflow-cpu"), ("and-cuda", r"tensorflow\[and-cuda\]")):
      self.assertRegex(config["options.extras_require"][extra].strip(),
                       rf"^{package}>={low[0]}\.{low[1]},<{high[0]}\.{high[1] + 1}$")
    requirement_lists = [config["options"]["install_requires"],
                         *config["options.extras_require"].values()]
    for line in "\n".join(requirement_lists).splitlines():
      self.assertNotIn("==", line)
      self.assertIsNone(re.match(r"\s*tensorflow[\s>=<;]", line), line)  # only as an extra
    self.assertNotRegex(config["options"]["install_requires"], r"tensorflow(-cpu)?[>=<]")
