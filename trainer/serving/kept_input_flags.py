"""The --keep_input and --keep_presence flags, one definition for trainer.export and trainer.denoise."""

from typing import Optional

from absl import flags

KEEP_INPUT_HELP = (
    "Share of the unprocessed input kept in the output outside the presence band: limits the "
    "noise attenuation (0.15: about -16.5 dB) and restores speech detail; 0 (with "
    "--keep_presence=0): the model's output alone.")
KEEP_PRESENCE_HELP = (
    "Share of the input kept in the presence band (3-5 kHz, ramps over 1.5-3 and 5-7 kHz), "
    "where consonants live (0.5: about -6 dB at most); a mask model keeps it as far as a "
    "frame holds speech by its own gain, so pauses keep --keep_input; equal to --keep_input, "
    "one share everywhere. BENCHMARKS.md compares the shares on held-out speech.")


def define(keep_input: Optional[float], keep_presence: Optional[float], default_note: str = "",
           flag_values: flags.FlagValues = flags.FLAGS):
  """Defines both flags with these defaults; `default_note` ("{flag}" for the flag's name)
  ends each help text, for a default that is not a number."""
  for name, default, text in (("keep_input", keep_input, KEEP_INPUT_HELP),
                              ("keep_presence", keep_presence, KEEP_PRESENCE_HELP)):
    note = default_note.format(flag=name)
    flags.DEFINE_float(name, default, f"{text} {note}".strip(), flag_values=flag_values)
