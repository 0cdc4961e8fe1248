"""The README and docs/ pages: every command they show names flags its program defines and flagfiles that exist."""

import functools
import glob
import os
import re
import subprocess
import sys

import pytest
import tensorflow as tf

from tests import helpers
from tests.trainer.program import parsed
from trainer.program import flagfiles

PAGES = [os.path.join(helpers.REPO, "README.md"),
         *sorted(glob.glob(os.path.join(helpers.REPO, "docs", "*.md")))]


def commands(path: str):
  """`(module, [flag tokens])` of each `python -m MODULE ...` in the page's code blocks
  (continued lines joined)."""
  with open(path) as f:
    blocks = re.findall(r"```(?:sh|bash)?\n(.*?)```", f.read(), flags=re.S)
  for block in blocks:
    for line in block.replace("\\\n", " ").splitlines():
      for part in re.split(r"&&|\||;", line.split("#")[0]):
        found = re.match(r"\s*(?:\S+=\S+\s+)*python -m ([\w.]+)(.*)", part)
        if found and found.group(1) != "pytest":
          yield found.group(1), re.findall(r"(--[\w-]+)(?:=(\S+))?", found.group(2))


@functools.lru_cache(maxsize=None)
def help_text(module: str) -> str:
  """What `python -m module` says its flags are (absl's --helpfull, argparse's --help)."""
  option = "--help" if module.startswith("bench.") else "--helpfull"
  result = subprocess.run([sys.executable, "-m", module, option], cwd=helpers.REPO,
                          capture_output=True, text=True, timeout=300, env=helpers.env())
  return result.stdout + result.stderr


@pytest.mark.slow
class DocsTest(tf.test.TestCase):

  @pytest.mark.end_to_end
  def test_every_flag_and_flagfile_a_command_names_exists(self):
    checked = 0
    for page in PAGES:
      for module, flags in commands(page):
        text = help_text(module)
        for flag, value in flags:
          name = flag[2:]
          defined = (f"--{name}" in text or f"--[no]{name}:" in text
                     or (name.startswith("no") and f"--[no]{name[2:]}:" in text))
          self.assertTrue(defined, f"{os.path.basename(page)}: python -m {module} has no {flag}")
          if name == "flagfile":
            self.assertIsNotNone(flagfiles.find(value, helpers.REPO),
                                 f"{os.path.basename(page)}: no flagfile {value}")
          checked += 1
    self.assertGreater(checked, 50)  # the pages' commands were found

  @pytest.mark.end_to_end
  def test_the_readmes_example_error_is_what_the_default_run_says(self):
    with open(PAGES[0]) as f:
      example = re.search(r"e\.g\. `(trainer\.main: (--\S+) .*?)`", f.read())
    result = subprocess.run([sys.executable, "-m", "trainer.main", example.group(2)],
                            cwd=helpers.REPO, capture_output=True, text=True, timeout=300,
                            env=helpers.env())
    self.assertNotEqual(result.returncode, 0)
    self.assertEqual(result.stderr.strip().splitlines()[-1], example.group(1))


class HelpTest(tf.test.TestCase):

  @pytest.mark.end_to_end
  def test_help_lists_each_programs_own_flags_and_exits_0(self):
    for module, flags_shown in (
        ("trainer.main", ("Run flags", "--model_dir", "Model flags", "--architecture",
                          "--[no]causal", "--learning_rate", "--data_dir")),
        ("trainer.stream", ("--saved_model", "--raw_rate", "--[no]extend_band")),
        ("input.prepare", ("--clean_dir",))):
      result = subprocess.run([sys.executable, "-m", module, "--help"], cwd=helpers.REPO,
                              capture_output=True, text=True, timeout=300, env=helpers.env())
      self.assertEqual(result.returncode, 0, result.stderr[-1000:])
      for shown in flags_shown:
        self.assertIn(shown, result.stdout, module)
      self.assertNotIn("--xla_", result.stdout)  # not TensorFlow's
      self.assertIn("--helpfull", result.stdout)


class IntroTest(tf.test.TestCase):

  def test_the_readme_says_what_the_default_run_trains(self):
    with open(PAGES[0]) as f:
      intro = f.read().split("## ")[0]
    configs = parsed.configs()
    self.assertEqual((configs.model.architecture, configs.data.sample_rate), ("mask", 16000))
    self.assertIn("The default run trains a 16 kHz spectral-mask model on an embedded\n"
                  "synthetic corpus", intro)


if __name__ == "__main__":
  tf.test.main()
