"""Test-process setup: oneDNN off and two logical CPU devices, so every machine tests the same path.

TensorFlow turns oneDNN on by default only on CPUs with AVX-512 VNNI/BF16,
AVX-VNNI or AMX; elsewhere its stock (Eigen) kernels run, and they lack some
features (no dilated convolution gradient). The suite runs the stricter stock
path on every CPU; `TF_ENABLE_ONEDNN_OPTS=1 python -m pytest` runs it with
oneDNN on. Child processes inherit the setting.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")  # before TensorFlow is imported

import tensorflow as tf  # pylint: disable=g-import-not-at-top

_cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    _cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

# absltest helpers (create_tempdir, ...) read flags; pytest does not parse them.
from absl import flags  # pylint: disable=g-import-not-at-top

flags.FLAGS.mark_as_parsed()

import subprocess  # pylint: disable=g-import-not-at-top,g-bad-import-order
import sys  # pylint: disable=g-import-not-at-top,g-bad-import-order

import pytest  # pylint: disable=g-import-not-at-top,g-bad-import-order


@pytest.fixture(autouse=True)
def _python_children_need_the_end_to_end_mark(request, monkeypatch):
  """A test that starts a Python child process (a program, a CLI, a worker) must be marked
  `end_to_end`, so `-m "not end_to_end"` runs the in-process suite alone."""
  if request.node.get_closest_marker("end_to_end"):
    return
  start = subprocess.Popen.__init__

  def refuse_python(self, args, *rest, **kwargs):
    program = args[0] if isinstance(args, (list, tuple)) else str(args).split()[0]
    if program == sys.executable:
      pytest.fail(f"{request.node.nodeid} starts {' '.join(map(str, args[:3]))} ...: mark "
                  "it @pytest.mark.end_to_end.", pytrace=False)
    start(self, args, *rest, **kwargs)

  monkeypatch.setattr(subprocess.Popen, "__init__", refuse_python)


def pytest_collection_modifyitems(items):
  """tf.test.TestCase's `test_session` is a context manager, not a test: pytest collects it
  in every test class and reports it skipped; drop it, so every skip the suite reports is a
  real one (a package or a TensorFlow this environment lacks)."""
  items[:] = [item for item in items if item.name != "test_session"]
