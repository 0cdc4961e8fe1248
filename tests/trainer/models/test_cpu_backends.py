"""Both architectures train on TensorFlow's stock CPU kernels (the suite runs with oneDNN off) and match a run on the other CPU backend."""

import functools
import os
import tempfile

from absl.testing import parameterized
import numpy as np
import pytest
import tensorflow as tf

from tests import helpers
from tests.trainer.models import few_steps


@functools.lru_cache(maxsize=None)
def trained(architecture, precision, jit_compile):
  """few_steps.train on the suite's MirroredStrategy, once per path in this process (the
  arguments are the cache's key: pass all three)."""
  return few_steps.train(architecture, helpers.mirrored(), precision=precision,
                         jit_compile=jit_compile)


class CpuBackendsTest(tf.test.TestCase, parameterized.TestCase):

  def test_the_suite_runs_on_the_backend_its_environment_names(self):
    # tests/conftest.py sets TF_ENABLE_ONEDNN_OPTS=0 (the stock kernels) unless it is set
    self.assertEqual(few_steps.onednn_enabled(), os.environ["TF_ENABLE_ONEDNN_OPTS"] == "1")

  def assert_trains(self, architecture, precision, jit_compile=False):
    weights, step_losses = trained(architecture, precision, jit_compile)
    self.assertTrue(np.all(np.isfinite(step_losses)), step_losses)
    self.assertTrue(all(np.all(np.isfinite(w)) for w in weights))

  @parameterized.product(architecture=few_steps.ARCHITECTURES,
                         precision=["float32", "mixed_bfloat16"])
  def test_every_path_trains_on_two_replicas_on_the_cpu_kernels(self, architecture, precision):
    self.assert_trains(architecture, precision)

  def test_the_mask_model_trains_xla_compiled_in_bfloat16(self):
    # XLA brings its own CPU kernels, whatever the backend, so one XLA path per architecture
    # is enough: float32 compiles the same graph without the casts, and the U-Net's is
    # a100.flags' (tests/trainer/test_main.py's DiagnoseModeTest runs it).
    self.assert_trains("mask", "mixed_bfloat16", jit_compile=True)

  def test_the_default_path_trains_on_one_device(self):
    _, step_losses = few_steps.train("mask", helpers.one_device())
    self.assertTrue(np.all(np.isfinite(step_losses)), step_losses)

  @pytest.mark.slow
  @pytest.mark.end_to_end
  def test_training_on_the_other_cpu_backend_gives_the_same_weights(self):
    here = few_steps.onednn_enabled()
    path = tempfile.mkdtemp() + "/other.npz"
    result = helpers.run_module("tests.trainer.models.few_steps", path,
                                env=helpers.env(TF_ENABLE_ONEDNN_OPTS="0" if here else "1"))
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    other = np.load(path)
    self.assertNotEqual(bool(other["onednn"]), here, "the child ran the same backend")
    for architecture in few_steps.ARCHITECTURES:
      weights, step_losses = trained(architecture, "float32", False)
      self.assertAllClose(other[f"{architecture}/losses"], step_losses, rtol=1e-4, atol=1e-4)
      for i, w in enumerate(weights):
        # 3 AdamW steps of 1e-3 move a weight by up to 3e-3; the backends agree to ~3e-6
        self.assertAllClose(other[f"{architecture}/{i}"], w, rtol=0, atol=2e-5,
                            msg=f"{architecture} variable {i}")


if __name__ == "__main__":
  tf.test.main()
