"""The stream command: enhances audio as it arrives with an export of a causal model, from a file or stdin to a file or stdout.

Run:
  arecord -f S16_LE -c 1 -r 16000 | python -m trainer.stream --saved_model=exported/causal | aplay
  python -m trainer.stream --saved_model=exported/causal --input=noisy.wav --output=out.wav

Input: a mono 16-bit WAV, or raw 16-bit PCM with --raw_rate. Output: the same
rate as the input, as a WAV (to stdout its sizes are left unknown, as streams
write them) or raw PCM with --raw_output. The latency and the real-time factor
go to stderr at the end.
"""

import os
import sys

from absl import app
from absl import flags

from common import cli
from common import files
from input import wav
from trainer.serving import pipe
from trainer.serving import saved_model as saved_model_lib
from trainer.serving import streamer

FLAGS = flags.FLAGS
BLOCK_SECONDS = 0.01  # read at most this much at a time


def run(saved_model: str, source, sink, *, raw_rate: int = 0, raw_output: bool = False,
        seekable_output: bool = False, extend_band: bool = True) -> pipe.Pipe:
  """Streams `source` (a binary stream) through the export into `sink`; returns the pipe."""
  loaded = saved_model_lib.load_export(saved_model)
  stream = streamer.Streamer.from_saved_model(loaded)
  rate = raw_rate or pipe.read_wav_header(source)
  through = pipe.Pipe(stream, rate=rate, model_rate=int(loaded.sample_rate),
                      keep_input=float(loaded.keep_input), extend_band=extend_band)
  if not raw_output:
    sink.write(wav.header(rate))
  for block in pipe.pcm_blocks(source, max(2, 2 * int(BLOCK_SECONDS * rate))):
    sink.write(pipe.to_pcm16(through.feed(block)))
    sink.flush()
  sink.write(pipe.to_pcm16(through.flush()))
  if seekable_output and not raw_output:  # a file: give the header its sizes
    sink.seek(0)
    sink.write(wav.header(rate, through.samples_out))
  sink.flush()
  return through


def main(argv):
  del argv
  with cli.one_line_errors("trainer.stream"):
    if FLAGS.output != "-" and os.path.exists(FLAGS.output) and not FLAGS.overwrite:
      raise FileExistsError(f"output {FLAGS.output} exists; pass --overwrite to replace it.")
    source = sys.stdin.buffer if FLAGS.input == "-" else open(FLAGS.input, "rb")
    with source:
      if FLAGS.output == "-":
        through = run(FLAGS.saved_model, source, sys.stdout.buffer, raw_rate=FLAGS.raw_rate,
                      raw_output=FLAGS.raw_output, extend_band=FLAGS.extend_band)
      else:
        with files.atomic_writer(FLAGS.output) as sink:
          through = run(FLAGS.saved_model, source, sink, raw_rate=FLAGS.raw_rate,
                        raw_output=FLAGS.raw_output, seekable_output=True,
                        extend_band=FLAGS.extend_band)
  print(f"trainer.stream: {through.seconds_in:.2f} s of audio; latency "
        f"{1e3 * through.latency_seconds:.1f} ms; real-time factor "
        f"{through.busy_seconds / max(through.seconds_in, 1e-9):.3f}", file=sys.stderr)


if __name__ == "__main__":
  flags.DEFINE_string("saved_model", None, "An export of a causal model "
                      "(trainer.main --causal, then trainer.export).")
  flags.DEFINE_string("input", "-", "A mono 16-bit WAV or raw PCM file; - reads stdin.")
  flags.DEFINE_bool("extend_band", True, "Above a lower-rate model's band (a 16 kHz model, "
                    "a 48 kHz stream), keep the input's band where speech is expected there, "
                    "as trainer.denoise does; it waits 48 ms longer. --noextend_band returns "
                    "the model's band alone.")
  flags.DEFINE_string("output", "-", "Where the enhanced audio goes; - writes stdout.")
  flags.DEFINE_integer("raw_rate", 0, "The input is raw 16-bit little-endian mono PCM at "
                       "this rate (0: the input is a WAV).")
  flags.DEFINE_bool("raw_output", False, "Write raw 16-bit PCM instead of a WAV.")
  flags.DEFINE_bool("overwrite", False, "Replace --output if it exists.")
  flags.mark_flags_as_required(["saved_model"])
  app.run(main)
