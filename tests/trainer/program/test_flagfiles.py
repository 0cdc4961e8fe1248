"""Tests for trainer.program.flagfiles: the design card's `--flagfile=a100.flags` works verbatim, from any directory, includes and all."""

import os
import subprocess
import sys

import pytest
import tensorflow as tf

from tests import helpers
from trainer.program import flagfiles

FLAGS_DIR = os.path.join(helpers.REPO, "flags")


def flags_in(name):
  with open(os.path.join(FLAGS_DIR, name)) as f:
    return [line.strip() for line in f if line.strip() and not line.startswith("#")]


class ResolveTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    cwd = os.getcwd()
    os.chdir(self.create_tempdir().full_path)
    self.addCleanup(os.chdir, cwd)

  def test_a_bare_name_is_the_installed_flagfile_expanded(self):
    self.assertEqual(FLAGS_DIR, flagfiles.FLAGS_DIR)
    self.assertEqual(flagfiles.resolve(["prog", "--flagfile=cpu.flags", "--x=1"]),
                     ["prog", *flags_in("cpu.flags"), "--x=1"])
    self.assertEqual(flagfiles.resolve(["prog", "--flagfile", "cpu.flags"]),
                     ["prog", *flags_in("cpu.flags")])
    for one_dash in (["-flagfile=cpu.flags"], ["-flagfile", "cpu.flags"]):  # absl takes both
      self.assertEqual(flagfiles.resolve(["prog", *one_dash]), ["prog", *flags_in("cpu.flags")])

  def test_includes_resolve_from_any_directory_and_later_flags_win(self):
    mixing = flagfiles.resolve(["--flagfile=a100_mixing.flags"])
    self.assertEqual(mixing, flags_in("a100.flags") + flags_in("a100_mixing.flags")[1:])
    self.assertIn("--model_dir=runs/a100", mixing)
    self.assertLess(mixing.index("--model_dir=runs/a100"),
                    mixing.index("--model_dir=runs/a100_mixing"))

  def test_a_local_file_wins_and_includes_are_relative_to_their_file(self):
    os.makedirs("mine")
    with open("mine/base.flags", "w") as f:
      f.write("# comment\n\n--train_steps=3\n// also a comment\n")
    with open("mine/top.flags", "w") as f:
      f.write("--flagfile=base.flags\n--flagfile=cpu.flags\n")
    with open("cpu.flags", "w") as f:
      f.write("--train_steps=9\n")
    self.assertEqual(flagfiles.resolve(["--flagfile=mine/top.flags"]),
                     ["--train_steps=3", *flags_in("cpu.flags")])
    self.assertEqual(flagfiles.resolve(["--flagfile=cpu.flags"]), ["--train_steps=9"])

  def test_unknown_names_are_left_for_absl_and_cycles_are_refused(self):
    self.assertEqual(flagfiles.resolve(["--flagfile=nothing.flags"]),
                     ["--flagfile=nothing.flags"])
    with open("a.flags", "w") as f:
      f.write("--flagfile=b.flags\n")
    with open("b.flags", "w") as f:
      f.write("--flagfile=a.flags\n")
    with self.assertRaisesRegex(ValueError, r"include each other: .*a.flags -> .*b.flags -> "
                                r".*a.flags"):
      flagfiles.resolve(["--flagfile=a.flags"])
    with open("self.flags", "w") as f:
      f.write("--train_steps=3\n--flagfile=self.flags\n")
    with self.assertRaises(SystemExit) as stop:  # the program's parser: one line
      flagfiles.parse(["trainer/main.py", "-flagfile=self.flags"])
    self.assertRegex(str(stop.exception), r"^main.py: flagfiles include each other: "
                     r".*self.flags -> .*self.flags\. Remove one")


class ProgramTest(tf.test.TestCase):

  @pytest.mark.end_to_end
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
        cwd=helpers.REPO, capture_output=True, text=True, timeout=300,
        env=helpers.env())
    self.assertIn("a1000.flags", missing.stderr)


if __name__ == "__main__":
  tf.test.main()
