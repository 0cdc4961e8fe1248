"""Tests for trainer.loss_scale: the dynamic schedule, fixed and none, configuration."""

from absl.testing import parameterized
import tensorflow as tf

from trainer import loss_scale as loss_scale_lib


class LossScaleTest(tf.test.TestCase, parameterized.TestCase):

  def test_dynamic_grows_after_interval_and_halves_on_overflow(self):
    scale = loss_scale_lib.LossScale(initial=4.0, growth_interval=3)
    history = []
    for finite in [True, True, True, True, False, False, True]:
      scale.update(tf.constant(finite))
      history.append(float(scale.scale.numpy()))
    self.assertEqual(history, [4.0, 4.0, 8.0, 8.0, 4.0, 2.0, 2.0])
    self.assertEqual(int(scale.skipped_steps.numpy()), 2)

  def test_dynamic_floor_and_overflowing_growth(self):
    scale = loss_scale_lib.LossScale(initial=2.0, growth_interval=1, minimum=1.0)
    for _ in range(3):
      scale.update(tf.constant(False))
    self.assertEqual(float(scale.scale.numpy()), 1.0)
    huge = loss_scale_lib.LossScale(initial=3e38, growth_interval=1)
    huge.update(tf.constant(True))
    self.assertEqual(float(huge.scale.numpy()), float(tf.constant(3e38).numpy()))

  def test_default_schedule_is_2_15_and_2000(self):
    scale = loss_scale_lib.LossScale()
    self.assertEqual((float(scale.scale.numpy()), scale.growth_interval), (2.0**15, 2000))

  def test_fixed_and_none_never_move(self):
    for scale, value in ((loss_scale_lib.LossScale.fixed(64.0), 64.0),
                         (loss_scale_lib.LossScale.none(), 1.0)):
      scale.update(tf.constant(False))
      scale.update(tf.constant(True))
      self.assertEqual(float(scale.scale.numpy()), value)
      self.assertEqual(int(scale.skipped_steps.numpy()), 1)

  @parameterized.parameters(("auto", "mixed_float16", True, 2.0**15),
                            ("auto", "mixed_bfloat16", True, 2.0**15),
                            ("auto", "float32", False, 1.0),
                            ("dynamic", "mixed_bfloat16", True, 2.0**15),
                            ("fixed", "float32", False, 2.0**15),
                            ("none", "mixed_float16", False, 1.0))
  def test_for_precision(self, kind, precision, dynamic, initial):
    scale = loss_scale_lib.for_precision(kind, precision)
    self.assertEqual((scale.dynamic, float(scale.scale.numpy())), (dynamic, initial))

  def test_bad_configuration(self):
    with self.assertRaisesRegex(ValueError, "Unknown loss scale 'big'"):
      loss_scale_lib.for_precision("big", "float32")
    with self.assertRaisesRegex(ValueError, "^multiplier=1.0 must be > 1"):
      loss_scale_lib.LossScale(multiplier=1.0)
    with self.assertRaisesRegex(ValueError, "^growth_interval=0 must be >= 1"):
      loss_scale_lib.LossScale(growth_interval=0)
    with self.assertRaisesRegex(ValueError, "^initial=0.5 must be >= 1.0"):
      loss_scale_lib.LossScale(initial=0.5)


if __name__ == "__main__":
  tf.test.main()
