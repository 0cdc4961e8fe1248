"""Tests for trainer.program.flagfiles: the design card's `--flagfile=a100.flags` works verbatim."""

import os
import subprocess
import sys

import tensorflow as tf

from tests import helpers
from trainer.program import flagfiles

REPO = helpers.REPO


class ResolveTest(tf.test.TestCase):

  def test_a_bare_name_resolves_to_the_flags_folder(self):
    self.assertEqual(flagfiles.resolve(["prog", "--flagfile=a100.flags", "--x=1"]),
                     ["prog", f"--flagfile={REPO}/flags/a100.flags", "--x=1"])
    self.assertEqual(flagfiles.resolve(["prog", "--flagfile", "cpu.flags"]),
                     ["prog", "--flagfile", f"{REPO}/flags/cpu.flags"])

  def test_existing_files_paths_and_unknown_names_are_left_alone(self):
    here = self.create_tempfile("a100.flags", "--train_steps=3\n").full_path
    os.chdir(os.path.dirname(here))
    argv = ["prog", "--flagfile=a100.flags", "--flagfile=other/cpu.flags",
            "--flagfile=nothing.flags"]
    self.assertEqual(flagfiles.resolve(argv), argv)


class ProgramTest(tf.test.TestCase):

  def test_the_cards_command_reads_flags_a100_from_any_directory(self):
    result = subprocess.run(
        [sys.executable, "-m", "trainer.main", "--flagfile=a100.flags"],
        cwd=self.create_tempdir().full_path, capture_output=True, text=True, timeout=300,
        env=helpers.env())
    # a100.flags says --nosynthetic and expects --data_dir (the default is the synthetic
    # corpus), so this refusal proves the file was read.
    self.assertNotEqual(result.returncode, 0)
    self.assertRegex(result.stderr.strip().splitlines()[-1],
                     r"^trainer.main: No data: pass --data_dir")
    missing = subprocess.run(
        [sys.executable, "-m", "trainer.main", "--flagfile=a1000.flags"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env=helpers.env())
    self.assertIn("a1000.flags", missing.stderr)


if __name__ == "__main__":
  tf.test.main()
