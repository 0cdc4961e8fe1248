"""The denoise command: an audio file of any length and sample rate through an exported SavedModel, the packaged default unless --saved_model names another (the work is trainer.serving.file_denoising's).

Run: python -m trainer.denoise --input=noisy.wav --output=enhanced.wav [--saved_model=exported/cpu]
"""

from absl import app
from absl import flags

from common import cli
from trainer.serving import file_denoising
from trainer.serving import kept_input_flags
from trainer.serving import packaged

FLAGS = flags.FLAGS


def main(argv):
  del argv
  with cli.one_line_errors("trainer.denoise"), cli.stop_on_signals():
    samples = file_denoising.denoise_file(
        FLAGS.saved_model or packaged.path(packaged.DEFAULT), FLAGS.input, FLAGS.output,
        chunk_seconds=FLAGS.chunk_seconds, overlap_seconds=FLAGS.overlap_seconds,
        overwrite=FLAGS.overwrite, keep_input=FLAGS.keep_input,
        keep_presence=FLAGS.keep_presence)
  print(f"Wrote {FLAGS.output} ({samples} samples)")


if __name__ == "__main__":
  flags.DEFINE_string("saved_model", None, "A directory written by trainer.export. Default: "
                      "the trained default model that ships in the package (docs/pretrained.md).")
  flags.DEFINE_string("input", None, "Noisy audio file (WAV or FLAC, any rate).")
  flags.DEFINE_string("output", None, "Enhanced 16-bit WAV to write (not the input).")
  flags.DEFINE_bool("overwrite", False, "Replace --output if it exists.")
  flags.DEFINE_float("chunk_seconds", 10.0, "Audio enhanced per model call.")
  flags.DEFINE_float("overlap_seconds", 0.5, "Cross-faded overlap between chunks.")
  kept_input_flags.define(None, None, "Default: the export's (trainer.export --{flag}).")
  flags.mark_flags_as_required(["input", "output"])
  app.run(main, flags_parser=cli.parse_flags)
