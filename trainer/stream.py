"""The stream command: enhances audio as it arrives with an export of a causal model (the packaged streaming model unless --saved_model names another), from a file or stdin to a file or stdout.

Run:
  arecord -f S16_LE -c 1 -r 48000 | python -m trainer.stream | aplay
  python -m trainer.stream --saved_model=exported/causal --input=noisy.wav --output=out.wav

Input: a mono 16-bit WAV, or raw 16-bit PCM with --raw_rate. Output: the same
rate as the input, as a WAV (to stdout its sizes are left unknown, as streams
write them) or raw PCM with --raw_output. The latency and the real-time factor
go to stderr at the end.
"""

import contextlib
import sys

from absl import app
from absl import flags

from common import checks
from common import cli
from common import files
from input import wav
from trainer.serving import file_denoising
from trainer.serving import packaged
from trainer.serving import pipe
from trainer.serving import saved_model as saved_model_lib
from trainer.serving import streamer

FLAGS = flags.FLAGS
BLOCK_SECONDS = 0.01  # read at most this much at a time


def run(loaded, source, sink, *, raw_rate: int = 0, raw_output: bool = False,
        seekable_output: bool = False, extend_band: bool = True, quality: str = "VHQ",
        name: str = "the input") -> pipe.Pipe:
  """Streams `source` (a binary stream, called `name` in errors) through the loaded export into
  `sink`; returns the pipe. A WAV's audio is its data chunk alone. A SIGINT or SIGTERM
  (`cli.stop_on_signals`) ends the input there: what came in is enhanced and written whole,
  and `stopped_by` on the pipe names the signal."""
  if raw_rate:
    if not wav.MIN_RATE <= raw_rate <= wav.MAX_RATE:
      raise checks.ArgumentError("raw_rate", raw_rate, f"must be a rate of audio, "
                                 f"{wav.MIN_RATE}-{wav.MAX_RATE} Hz (0: the input is a WAV).")
    rate, size = raw_rate, None
  else:
    found = pipe.read_wav_header(source, name)
    rate, size = found.rate, found.data_size
  new_pipe = lambda: pipe.Pipe(  # pylint: disable=g-long-lambda
      streamer.Streamer.from_saved_model(loaded), rate=rate,
      model_rate=int(loaded.sample_rate), keep_input=float(loaded.keep_input),
      extend_band=extend_band, quality=quality)
  block_samples = max(1, int(BLOCK_SECONDS * rate))
  through = new_pipe()
  through.latency_seconds = pipe.measure_latency(new_pipe, block_samples)
  print(f"trainer.stream: {rate} Hz through a {through.model_rate} Hz model; latency "
        f"{latency(through)}", file=sys.stderr)
  if not raw_output:
    sink.write(wav.header(rate))
  try:
    for block in pipe.pcm_blocks(source, 2 * block_samples, size):
      sink.write(pipe.to_pcm16(through.feed(block)))
      sink.flush()
  except BaseException as e:  # pylint: disable=broad-except
    through.stopped_by = cli.received(e)  # a signal: the audio so far is the stream
    if through.stopped_by is None:
      raise
  sink.write(pipe.to_pcm16(through.flush()))
  if seekable_output and not raw_output:  # a file: give the header its sizes
    sink.seek(0)
    sink.write(wav.header(rate, through.samples_out))
  sink.flush()
  return through


def main(argv):
  del argv
  with cli.one_line_errors("trainer.stream"), cli.stop_on_signals():
    saved_model = FLAGS.saved_model or packaged.path(packaged.STREAMING)
    if FLAGS.output != "-":
      file_denoising.check_output(FLAGS.input, FLAGS.output, saved_model=saved_model,
                                  overwrite=FLAGS.overwrite, wav_output=not FLAGS.raw_output)
    for name, stream, flag in (("stdin", sys.stdin, "input"), ("stdout", sys.stdout, "output")):
      if getattr(FLAGS, flag) == "-" and stream is None:  # the shell closed it (<&-, >&-)
        raise ValueError(f"{name} is closed: pass --{flag}=FILE, or give the command a "
                         f"{name}.")
    loaded = saved_model_lib.load_export(saved_model)  # before any output is opened
    source = sys.stdin.buffer if FLAGS.input == "-" else open(FLAGS.input, "rb")
    name = "stdin" if FLAGS.input == "-" else FLAGS.input
    to_file = FLAGS.output != "-"
    with source, (files.atomic_writer(FLAGS.output, replace=FLAGS.overwrite) if to_file
                  else contextlib.nullcontext(sys.stdout.buffer)) as sink:
      through = run(loaded, source, sink, raw_rate=FLAGS.raw_rate,
                    raw_output=FLAGS.raw_output, seekable_output=to_file,
                    extend_band=FLAGS.extend_band, quality=FLAGS.resample_quality, name=name)
  if through.stopped_by is not None:
    through.stopped_by.exit(f"trainer.stream: stopped by {through.stopped_by}: "
                            f"{summary(through)}; the audio enhanced so far is in "
                            f"{'stdout' if FLAGS.output == '-' else FLAGS.output}.")
  print(f"trainer.stream: {summary(through)}", file=sys.stderr)


def summary(through: pipe.Pipe) -> str:
  """The run in one line: audio, latency and, once a hop of audio went through, the
  real-time factor (on less it would be start-up time over next to no audio)."""
  hop_seconds = through.streamer.hop / through.model_rate
  rtf = (f"real-time factor {through.busy_seconds / through.seconds_in:.3f}"
         if through.seconds_in >= hop_seconds else "no real-time factor (less than one hop "
         "of audio)")
  return f"{through.seconds_in:.2f} s of audio; latency {latency(through)}; {rtf}"


def latency(through: pipe.Pipe) -> str:
  """The measured end-to-end latency and the model's part, e.g. `127.9 ms end to end, the
  model's 31.9`."""
  model = f"the model's {1e3 * through.model_latency_seconds:.1f}"
  if through.latency_seconds is None:  # not measured
    return model + " ms"
  return f"{1e3 * through.latency_seconds:.1f} ms end to end, {model}"


if __name__ == "__main__":
  flags.DEFINE_string("saved_model", None, "An export of a causal model "
                      "(trainer.main --causal, then trainer.export). Default: the trained "
                      "streaming model that ships in the package (docs/pretrained.md).")
  flags.DEFINE_string("input", "-", "A mono 16-bit WAV or raw PCM file; - reads stdin.")
  flags.DEFINE_bool("extend_band", True, "Above a lower-rate model's band (a 16 kHz model, "
                    "a 48 kHz stream), keep the input's band where speech is expected there, "
                    "as trainer.denoise does; it waits 48 ms longer. --noextend_band returns "
                    "the model's band alone.")
  flags.DEFINE_enum("resample_quality", "VHQ", list(pipe.QUALITIES), "soxr's quality for "
                    "audio at another rate than the model's: VHQ (as trainer.denoise), HQ, or "
                    "LQ (16-bit precision, as the output has, and the least delay). The latency "
                    "printed at the start adds up the model's, the resamplers' and the band "
                    "extension's; each setting's delay and cost: BENCHMARKS.md "
                    "(bench.stream).")
  flags.DEFINE_string("output", "-", "Where the enhanced audio goes; - writes stdout.")
  flags.DEFINE_integer("raw_rate", 0, "The input is raw 16-bit little-endian mono PCM at "
                       "this rate (0: the input is a WAV).")
  flags.DEFINE_bool("raw_output", False, "Write raw 16-bit PCM instead of a WAV.")
  flags.DEFINE_bool("overwrite", False, "Replace --output if it exists.")
  app.run(main, flags_parser=cli.parse_flags)
