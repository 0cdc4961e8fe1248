"""The code stays readable in small pieces: no module over ~300 lines unless one job needs it (named below), no function over 50 lines of code."""

import ast
import glob
import os

import tensorflow as tf

from tests import helpers

PACKAGES = ("common", "ops", "input", "trainer")
MODULE_LINES, FUNCTION_LINES = 300, 50
# Modules over MODULE_LINES that do one job, and what it is.
ONE_JOB = {
    "trainer/step.py": "the training step; over a third of it is TrainStep's documented "
                       "contract (batches, attempted vs applied steps, accumulation, metrics)",
    "input/pipeline.py": "the training input: one TrainInputConfig and one small function per "
                         "sharding mode (files, records, data service), plus the eval input",
    "input/speech.py": "the talker synthesizer; a third of it is phone and speaker tables",
}


def modules():
  for package in PACKAGES:
    yield from sorted(glob.glob(os.path.join(helpers.REPO, package, "**", "*.py"),
                                recursive=True))


def code_lines(function: ast.AST) -> int:
  """Lines of a function without its docstring."""
  lines = function.end_lineno - function.lineno + 1
  first = function.body[0]
  if isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant):
    lines -= first.end_lineno - first.lineno + 1
  return lines


class LayoutTest(tf.test.TestCase):

  def test_modules_are_small_unless_one_job_needs_more(self):
    long = {}
    for path in modules():
      with open(path) as f:
        length = len(f.readlines())
      if length > MODULE_LINES:
        long[os.path.relpath(path, helpers.REPO)] = length
    self.assertEqual(sorted(long), sorted(ONE_JOB), f"modules over {MODULE_LINES} lines: "
                     f"{long}; split one by job, or name its one job in ONE_JOB")

  def test_functions_are_short(self):
    long = []
    for path in modules():
      with open(path) as f:
        tree = ast.parse(f.read())
      long += [f"{os.path.relpath(path, helpers.REPO)}:{node.lineno} {node.name} "
               f"({code_lines(node)} lines)" for node in ast.walk(tree)
               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
               and code_lines(node) > FUNCTION_LINES]
    self.assertEqual(long, [])


if __name__ == "__main__":
  tf.test.main()
