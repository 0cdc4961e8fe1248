"""The denoise command: an audio file of any length and sample rate through an exported SavedModel, the packaged default unless --saved_model names another (the work is trainer.serving.file_denoising's).

Run: python -m trainer.denoise --input=noisy.wav --output=enhanced.wav [--saved_model=exported/cpu]
"""

from absl import app
from absl import flags

from common import cli
from trainer.serving import file_denoising
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
  flags.DEFINE_float("keep_input", None, "Share of the unprocessed input kept in the "
                     "output outside the presence band: limits the noise attenuation (0.15: "
                     "about -16.5 dB) and restores speech detail; 0 (with --keep_presence=0): "
                     "the model's output alone. Default: the share the export keeps "
                     "(trainer.export --keep_input).")
  flags.DEFINE_float("keep_presence", None, "Share of the input kept in the presence band "
                     "(3-5 kHz, ramps over 1.5-3 and 5-7 kHz), where consonants live (0.5: "
                     "about -6 dB at most); a mask model keeps it as far as a frame holds "
                     "speech by its own gain, so pauses keep --keep_input; equal to "
                     "--keep_input, one share everywhere. "
                     "Default: the export's (trainer.export --keep_presence).")
  flags.mark_flags_as_required(["input", "output"])
  app.run(main, flags_parser=cli.parse_flags)
