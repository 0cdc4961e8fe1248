"""Serving imports the models, the ops and audio I/O, never the training step, loop, program or optimizer: a deployment carries no training code."""

import glob
import os
import subprocess
import sys

import pytest
import tensorflow as tf

from tests import helpers

TRAINING = ("trainer.step", "trainer.loop", "trainer.program", "trainer.losses", "trainer.optim",
            "trainer.loss_scale", "trainer.evaluation", "trainer.main", "input.pipeline")
COMMANDS = ("trainer.denoise", "trainer.export", "trainer.stream")


def serving_modules() -> list:
  """Every module of trainer/serving/, by its import name."""
  return sorted("trainer.serving." + os.path.basename(path)[:-3] for path in glob.glob(
      os.path.join(helpers.REPO, "trainer", "serving", "*.py"))
                if not path.endswith("__init__.py"))


class BoundaryTest(tf.test.TestCase):

  @pytest.mark.end_to_end
  def test_serving_and_its_commands_load_no_training_code(self):
    modules = serving_modules() + list(COMMANDS)
    self.assertIn("trainer.serving.saved_model", modules)
    check = (f"import importlib, sys\nfor m in {modules!r}: importlib.import_module(m)\n"
             f"print(','.join(sorted(m for m in sys.modules if m.startswith({TRAINING!r}))))")
    result = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                            env=helpers.env(), timeout=300, check=True)
    self.assertEqual([m for m in result.stdout.strip().split(",") if m], [])


if __name__ == "__main__":
  tf.test.main()
