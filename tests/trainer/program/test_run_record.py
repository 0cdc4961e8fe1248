"""Tests for trainer.program.run_record: the run's flags recorded at each start, binding ones refused on resume."""

import json
import os

from absl.testing import flagsaver
import tensorflow as tf

from tests.trainer.program import parsed
from trainer.program import run_record


class RunRecordTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.enter_context(flagsaver.flagsaver())
    self.model_dir = self.create_tempdir().full_path
    self.path = os.path.join(self.model_dir, run_record.RUN_CONFIG_FILE)

  def stored(self):
    with open(self.path) as f:
      return json.load(f)

  def test_every_flag_is_recorded_and_changes_are_logged_and_kept(self):
    run_record.record(self.model_dir, parsed.configs("--learning_rate=0.002"), step=0, replace=True)
    recorded = self.stored()
    self.assertEqual(recorded["flags"]["learning_rate"], 0.002)
    self.assertEqual(recorded["flags"]["snr_db"], [-5.0, 20.0])
    self.assertEqual(recorded["changes"], [])
    with self.assertLogs(level="WARNING") as logs:
      run_record.record(self.model_dir, parsed.configs("--learning_rate=0.001", "--train_steps=3000"),
                        step=500)
    self.assertIn("Resuming at step 500 with flags changed since the run last started: "
                  "--learning_rate 0.002 -> 0.001, --train_steps 2000 -> 3000.",
                  "\n".join(logs.output))
    self.assertEqual(self.stored()["changes"], [dict(step=500, changed=dict(
        learning_rate=[0.002, 0.001], train_steps=[2000, 3000]))])
    self.assertEqual(self.stored()["flags"]["learning_rate"], 0.001)
    run_record.check(self.model_dir, parsed.configs("--learning_rate=0.1"))  # not binding

  def test_a_binding_change_is_refused_naming_the_flags(self):
    run_record.record(self.model_dir, parsed.configs(), step=0, replace=True)
    with self.assertRaisesRegex(ValueError, f"^{self.model_dir} was trained with "
                                "--accumulate_steps=1, --global_batch_size=16, but the flags "
                                "say --accumulate_steps=2, --global_batch_size=32: resuming"):
      run_record.check(self.model_dir, parsed.configs("--global_batch_size=32", "--accumulate_steps=2"))

  def test_a_value_edited_to_another_type_is_named_as_such(self):
    run_record.record(self.model_dir, parsed.configs(), step=0, replace=True)
    stored = self.stored()
    stored["flags"]["global_batch_size"] = "16"
    with open(self.path, "w") as f:
      json.dump(stored, f)
    with self.assertRaisesRegex(ValueError, f"^{self.path} holds global_batch_size='16', of "
                                "another type than the flag's: it was edited by hand"):
      run_record.check(self.model_dir, parsed.configs())

  def test_a_run_from_before_records_is_not_redefined_by_its_first_resume(self):
    with self.assertLogs(level="WARNING") as logs:
      run_record.record(self.model_dir, parsed.configs("--global_batch_size=8"), step=500)
    self.assertIn("has checkpoints but no run_config.json: it was trained before runs "
                  "recorded their flags", "\n".join(logs.output))
    self.assertEqual(self.stored()[run_record.ASSUMED], 500)
    with self.assertLogs(level="WARNING") as logs:  # another batch: said, not refused
      run_record.check(self.model_dir, parsed.configs("--global_batch_size=32"))
    self.assertIn("not holding this resume's --global_batch_size=32 to the values assumed "
                  "then (--global_batch_size=8)", "\n".join(logs.output))
    run_record.record(self.model_dir, parsed.configs("--global_batch_size=32"), step=900)
    self.assertEqual(self.stored()[run_record.ASSUMED], 500)  # still assumed

  def test_a_first_start_replaces_a_record_that_bound_nothing(self):
    run_record.record(self.model_dir, parsed.configs("--learning_rate=0.5"), step=0, replace=True)
    run_record.record(self.model_dir, parsed.configs("--learning_rate=0.002"), step=0, replace=True)
    self.assertEqual(self.stored()["changes"], [])


if __name__ == "__main__":
  tf.test.main()
