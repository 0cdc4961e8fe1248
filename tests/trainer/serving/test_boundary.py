"""Serving imports the models and audio I/O, never the training step, loop or program: a deployment carries no training code."""

import subprocess
import sys

import pytest
import tensorflow as tf

from tests import helpers

TRAINING = ("trainer.step", "trainer.loop", "trainer.program", "trainer.losses", "trainer.optim",
            "trainer.loss_scale", "trainer.evaluation", "input.pipeline")
CHECK = f"""
import sys
import trainer.denoise, trainer.export, trainer.stream
import trainer.serving.band_extension, trainer.serving.denoise, trainer.serving.export
import trainer.serving.kept_input, trainer.serving.pipe, trainer.serving.stream
import trainer.serving.tflite, trainer.serving.transforms, trainer.serving.mask_step
import trainer.serving.unet_step, trainer.serving.stream_step
loaded = sorted(m for m in sys.modules if m.startswith({TRAINING!r}))
print(",".join(loaded))
"""


class BoundaryTest(tf.test.TestCase):

  @pytest.mark.end_to_end
  def test_serving_and_its_commands_load_no_training_code(self):
    result = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True,
                            env=helpers.env(), timeout=300, check=True)
    loaded = [m for m in result.stdout.strip().split(",") if m]
    # The weight average's variables are restored through its optimizer module.
    self.assertEqual(loaded, ["trainer.optim"])


if __name__ == "__main__":
  tf.test.main()
