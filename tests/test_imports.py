"""Which package may import which: data and dependencies flow one way (docs: README's layout), held for every module's imports beside the size rules of test_layout."""

import ast
import os

import tensorflow as tf

from tests import helpers
from tests import test_layout

TRAINING_CORE = ("trainer.replicated", "trainer.optim", "trainer.loss_scale")
SERVING = ("common", "input", "ops", "trainer.models", "trainer.run_dir", "trainer.serving")
# What each part of the code may import from this project besides itself. A module belongs
# to the longest part its name starts with.
MAY_IMPORT = {
    "trainer": ("common",),  # the package root: its requirements
    "common": (),
    "ops": ("common",),
    "input": ("common", "ops"),  # knows nothing of models or training
    "trainer.models": ("common", "ops"),  # each architecture whole, behind one protocol
    "trainer.replicated": ("common",),
    "trainer.optim": ("common", "trainer.replicated"),
    "trainer.loss_scale": ("common", "trainer.replicated"),
    "trainer.evaluation": ("common", "input", "ops", "trainer.models"),
    "trainer.losses": ("common", "ops", "trainer.evaluation"),
    # The step knows no flags, files or loop: research code imports it with its own model.
    "trainer.step": ("common", "ops", "trainer.models") + TRAINING_CORE,
    "trainer.run_dir": ("common", "trainer.models"),  # a run read back, training or serving
    # The loop knows no step, optimizer or data: it calls what it is given.
    "trainer.loop": ("common", "ops", "trainer.evaluation", "trainer.run_dir"),
    "trainer.serving": SERVING,  # never training code (tests/trainer/serving/test_boundary)
    "trainer.program": ("trainer", "common", "input", "ops", "trainer.models",
                        "trainer.evaluation", "trainer.losses", "trainer.step",
                        "trainer.run_dir", "trainer.loop") + TRAINING_CORE,
    # The commands: thin programs around the packages they name.
    "trainer.main": ("common", "input", "trainer.run_dir", "trainer.loop", "trainer.program"),
    "trainer.export": SERVING,
    "trainer.denoise": SERVING,
    "trainer.stream": SERVING,
}
PROJECT = ("common", "ops", "input", "trainer")


def part(module: str) -> str:
  """The part of MAY_IMPORT `module` belongs to."""
  matches = [p for p in MAY_IMPORT if module == p or module.startswith(p + ".")]
  return max(matches, key=len) if matches else module


def imports(path: str):
  """The project modules a file imports (`from a import b` names `a.b`)."""
  with open(path) as f:
    tree = ast.parse(f.read())
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
      names = [f"{node.module}.{alias.name}" for alias in node.names]
    else:
      continue
    yield from (name for name in names if name.split(".")[0] in PROJECT)


def module_name(path: str) -> str:
  name = os.path.relpath(path, helpers.REPO)[:-3].replace(os.sep, ".")
  return name[:-len(".__init__")] if name.endswith(".__init__") else name


class ImportRulesTest(tf.test.TestCase):

  def test_every_module_imports_only_what_its_part_may(self):
    broken = []
    for path in test_layout.modules():
      own = part(module_name(path))
      self.assertIn(own, MAY_IMPORT, f"{path} belongs to no part of MAY_IMPORT")
      allowed = (own, *MAY_IMPORT[own])
      broken += [f"{module_name(path)} imports {name}" for name in imports(path)
                 if part(name) not in allowed]
    self.assertEqual(broken, [])

  def test_the_rules_catch_a_broken_boundary(self):
    self.assertEqual(part("trainer.serving.tflite"), "trainer.serving")
    self.assertEqual(part("trainer.optim"), "trainer.optim")
    self.assertNotIn(part("trainer.optim"), MAY_IMPORT["trainer.serving"])
    self.assertNotIn(part("trainer.models.unet"), MAY_IMPORT["input"])
    self.assertNotIn(part("trainer.step"), MAY_IMPORT["trainer.loop"])


if __name__ == "__main__":
  tf.test.main()
