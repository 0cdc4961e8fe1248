"""Every benchmark script imports: a module a refactor moved or renamed breaks its bench here, not in the next measurement."""

import glob
import importlib
import os

from absl.testing import parameterized
import tensorflow as tf

from tests import helpers

SCRIPTS = sorted(os.path.basename(p)[:-3] for p in glob.glob(f"{helpers.REPO}/bench/*.py")
                 if not p.endswith("__init__.py"))


class BenchImportTest(tf.test.TestCase, parameterized.TestCase):

  def test_the_scripts_are_found(self):
    self.assertIn("quality", SCRIPTS)
    self.assertIn("timing", SCRIPTS)

  @parameterized.parameters(*SCRIPTS)
  def test_the_script_imports_and_a_runnable_one_has_a_main(self, name):
    module = importlib.import_module(f"bench.{name}")
    with open(module.__file__) as f:
      runnable = 'if __name__ == "__main__":' in f.read()  # not a shared helper
    if runnable:
      self.assertTrue(callable(getattr(module, "main", None)), f"bench.{name} has no main")


if __name__ == "__main__":
  tf.test.main()
