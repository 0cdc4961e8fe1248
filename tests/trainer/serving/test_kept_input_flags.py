"""Tests for trainer.serving.kept_input_flags: both commands get the same two flags, with their own defaults."""

from absl import flags
from absl.testing import absltest

from ops import kept_input
from trainer.serving import kept_input_flags


class KeptInputFlagsTest(absltest.TestCase):

  def test_numeric_defaults_parse_and_are_overridden(self):
    values = flags.FlagValues()
    kept_input_flags.define(kept_input.KEEP, kept_input.PRESENCE_KEEP, flag_values=values)
    values(["export", "--keep_presence=0.7"])
    self.assertEqual((values.keep_input, values.keep_presence), (kept_input.KEEP, 0.7))

  def test_a_default_note_names_each_flag(self):
    values = flags.FlagValues()
    kept_input_flags.define(None, None, "Default: the export's (--{flag}).", flag_values=values)
    values(["denoise"])
    self.assertIsNone(values.keep_input)
    for name in ("keep_input", "keep_presence"):
      help_text = values[name].help
      self.assertTrue(help_text.endswith(f"Default: the export's (--{name})."), help_text)
    self.assertIn("presence band", values["keep_input"].help)


if __name__ == "__main__":
  absltest.main()
