"""Benchmark: real time on one CPU thread - algorithmic latency, time per hop, real-time factor, file and state size of the streaming model, beside whole-clip models and denoiser's DemucsStreamer.

The causal mask model (the streaming flagfile's at 48 kHz, its FFT 2048; the
same at 16 kHz, FFT 512) and the GPU
flagfiles' U-Net trained causal, at 16 and 48 kHz, streamed hop (or block) by
hop through `trainer.serving.streamer.Streamer` from Python: the TensorFlow step
(as `trainer.stream` runs it) and the TFLite files (`trainer.export
--format=tflite`, float and `--quantize=dynamic` where the model allows it),
run by TFLite's interpreter with its default delegates. Whole clips at once
for comparison, and the default (non-causal) mask model, which does not stream.
Untrained weights unless `--model_dir` names a trained causal mask run (its rate's rows):
the time does not depend on them, the int8 file's precision does (its output
SNR against the float file, on `--speech` mixed with white noise at 5 dB).

With `--transform_choices`, also the 48 kHz TFLite files of models with
another window or FFT length (built for the comparison: the choice of the
shipped transform).

The pretrained denoisers people run (bench.anchors: RNNoise, DeepFilterNet3,
where installed) streamed frame by frame at 48 kHz in the same run; their
latency is the lag of their output.

With `--demucs_python`, a Python that has torch and denoiser 0.1.5 (never a
dependency of this project: `python -m venv demucs && demucs/bin/pip install
torch==2.13.0 numpy && demucs/bin/pip install --no-deps denoiser==0.1.5`;
torchaudio is not needed), also times denoiser's causal Demucs (H=48, random
weights) through its `DemucsStreamer`, one stride per call, in the same run.
  python -m bench.stream [--seconds 10] [--model_dir runs/streaming --speech x.wav]
      [--demucs_python /path/to/venv/bin/python] [--transform_choices]
  python -m bench.stream --latency [--saved_model=name=dir ...]   # end to end, alone
"""

import argparse
import os
import select
import subprocess
import sys
import tempfile
import time
from unittest import mock

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # pylint: disable=g-import-not-at-top
import tensorflow as tf  # pylint: disable=g-import-not-at-top

from bench import anchors  # pylint: disable=g-import-not-at-top
from bench import timing  # pylint: disable=g-import-not-at-top
from input import audio  # pylint: disable=g-import-not-at-top
from ops import kept_input  # pylint: disable=g-import-not-at-top
from trainer import run_dir  # pylint: disable=g-import-not-at-top
from trainer.models import mask  # pylint: disable=g-import-not-at-top
from trainer.models import unet  # pylint: disable=g-import-not-at-top
from trainer.serving import pipe  # pylint: disable=g-import-not-at-top
from trainer.serving import streamer as streamer_lib  # pylint: disable=g-import-not-at-top
from trainer.serving import tflite  # pylint: disable=g-import-not-at-top

RATES = (16000, 48000)
STREAMING_RATE, STREAMING_FFT = 48000, 2048  # flags/streaming.flags' --sample_rate, --fft_length
CLICK_QUIET_SECONDS = 0.3  # click_rows: the stream has answered a block once this passes
GPU_UNET = dict(hidden=48, depth=5, kernel_size=8, stride=4, attention_heads=8)  # a100.flags
# Run by --demucs_python: denoiser's causal Demucs streamed one stride per call; prints RTF.
DEMUCS = """
import sys, time, torch
from denoiser.demucs import Demucs, DemucsStreamer
torch.set_num_threads(1)
rate, seconds = 16000, float(sys.argv[1])
streamer = DemucsStreamer(Demucs(hidden=48, causal=True), num_frames=1)
signal = 0.1 * torch.randn(1, int(rate * seconds))
with torch.no_grad():
  streamer.feed(signal[:, :streamer.stride])  # warm-up (it has no reset: the stream goes on)
  start = time.perf_counter()
  for first in range(0, signal.shape[1], streamer.stride):
    streamer.feed(signal[:, first:first + streamer.stride])
  streamer.flush()
print((time.perf_counter() - start) / seconds, streamer.stride)
"""


def white_noise(seconds: float, rate: int) -> np.ndarray:
  """The signal every timing here streams: `seconds` of white noise at 0.1 RMS (seed 0)."""
  return (0.1 * np.random.default_rng(0).standard_normal(int(seconds * rate))).astype(
      np.float32)


def streamed_seconds(streamer: streamer_lib.Streamer, signal: np.ndarray) -> float:
  """Wall time to stream `signal` hop by hop (after one untimed hop: tracing)."""
  streamer.feed(signal[:streamer.hop])
  streamer.reset()
  start = time.perf_counter()
  for first in range(0, len(signal), streamer.hop):
    streamer.feed(signal[first:first + streamer.hop])
  streamer.flush()
  return time.perf_counter() - start


def whole_clip_rtf(model, signal: np.ndarray, seconds: float) -> float:
  whole, clip = tf.function(model), tf.constant(signal[None])
  return timing.median_seconds(lambda: whole(clip), runs=3) / seconds


def int8_snr(float_path: str, int8_path: str, speech: np.ndarray) -> float:
  """Output SNR (dB) of the int8 file against the float file on `speech`."""
  outs = []
  for path in (float_path, int8_path):
    streamer = streamer_lib.Streamer.from_tflite(path, num_threads=1)
    outs.append(np.concatenate([streamer.feed(speech), streamer.flush()]).astype(np.float64))
  return 10 * np.log10(np.sum(outs[0] ** 2) / np.sum((outs[0] - outs[1]) ** 2))


def stream_rows(name: str, model, rate: int, signal: np.ndarray, seconds: float,
                work_dir: str, speech):
  """A causal model's rows: TF step, TFLite float and (where it can) int8."""
  step = streamer_lib.step_for(model)
  state = f"{4 * step.state_size / 1024:.0f} KiB"
  latency = f"{1e3 * step.latency / rate:.1f}"
  paths = {}
  for quantize in tflite.quantizations(model):
    paths[quantize] = os.path.join(work_dir, f"{name}-{rate}-{quantize}.tflite")
    with open(paths[quantize], "wb") as f:
      f.write(tflite.convert(model, quantize=quantize))
  streamers = [("TF step", streamer_lib.Streamer.for_model(model), "-", "-")]
  for quantize, path in paths.items():
    snr = (f"{int8_snr(paths['none'], path, speech):.1f}"
           if quantize != "none" and speech is not None else "-")
    streamers.append(("TFLite float" if quantize == "none" else "TFLite int8 (dynamic)",
                      streamer_lib.Streamer.from_tflite(path, num_threads=1),
                      f"{os.path.getsize(path) / 2**20:.1f} MB", snr))
  rows = []
  for how, streamer, size, snr in streamers:
    took = streamed_seconds(streamer, signal)
    rows.append([f"{rate}", f"{name}: {how}", latency,
                 f"{1e3 * took * streamer.hop / len(signal):.3f}", f"{took / seconds:.4f}",
                 size, state, snr])
  return rows


def causal_mask(rate: int, trained):
  """`(name, model)`: the causal mask model at `rate`: `trained` (`(name, model)` of
  --model_dir's run, or None) where it is at that rate, else untrained: streaming.flags'
  shape at its rate, the default shape elsewhere."""
  if trained and trained[1].sample_rate == rate:
    return trained
  if rate == STREAMING_RATE:
    return "streaming.flags", mask.MaskDenoiser(sample_rate=rate, causal=True,
                                                fft_length=STREAMING_FFT)
  return "mask, causal", mask.MaskDenoiser(sample_rate=rate, causal=True)


def rows_at(rate: int, seconds: float, work_dir: str, trained, speech):
  signal = white_noise(seconds, rate)
  name, streaming = causal_mask(rate, trained)
  gpu_unet = unet.UNet(sample_rate=rate, causal=True, **GPU_UNET)
  at_rate = None if speech is None else audio.resample(speech, 16000, rate, name="speech")
  rows = (stream_rows(name, streaming, rate, signal, seconds, work_dir, at_rate)
          + stream_rows("a100.flags U-Net, causal", gpu_unet, rate, signal, seconds,
                        work_dir, at_rate))
  for name, whole in ((f"{name}: whole clip", streaming),
                      ("default (not causal): whole clip",
                       mask.MaskDenoiser(sample_rate=rate)),
                      ("a100.flags U-Net, causal: whole clip", gpu_unet)):
    rows.append([f"{rate}", name, "-", "-", f"{whole_clip_rtf(whole, signal, seconds):.4f}",
                 "-", "-", "-"])
  return rows


def transform_choices(seconds: float, work_dir: str):
  """48 kHz TFLite files of the default causal shape with the model's 1536-sample window
  as matrix products (the default), its window zero-padded to a 2048-point RFFT2D
  (`--fft_length=2048`), or a 1024-sample window (21 ms, a shape built here for the
  comparison)."""
  rate = 48000
  signal = white_noise(seconds, rate)
  choices = (("1536 window, 1536-point DFT as matmul (default)", mask.WINDOW_SECONDS, None),
             ("1536 window, zero-padded 2048-point RFFT2D", mask.WINDOW_SECONDS, 2048),
             ("1024 window, 1024-point RFFT2D", 1024 / rate, None))
  rows = []
  for name, window_seconds, fft_length in choices:
    with mock.patch.object(mask, "WINDOW_SECONDS", window_seconds):
      model = mask.MaskDenoiser(sample_rate=rate, causal=True, fft_length=fft_length or 0)
    for quantize in tflite.quantizations(model):
      path = os.path.join(work_dir, f"choice-{model.window}-{model.fft_length}-{quantize}")
      with open(path, "wb") as f:
        f.write(tflite.convert(model, quantize=quantize))
      took = streamed_seconds(streamer_lib.Streamer.from_tflite(path, num_threads=1), signal)
      rows.append([name, quantize, f"{1e3 * (model.window - 1) / rate:.1f}",
                   f"{model.fft_length // 2 + 1}", f"{took / seconds:.4f}",
                   f"{os.path.getsize(path) / 2**20:.1f} MB"])
  return rows


def latency_rows(seconds: float):
  """A 48 kHz stream through the causal mask model (untrained) at 16 kHz, each resampling
  quality with and without the band extension, then through streaming.flags' shape at 48
  kHz (nothing resampled), in 10 ms blocks as trainer.stream reads: the latency measured
  end to end, the real-time factor, and how far the output moves from VHQ's with the same
  band setting, as an SNR."""
  rate, block = 48000, 480
  signal = white_noise(seconds, rate)

  def measured(model, **settings):
    new_pipe = lambda: pipe.Pipe(streamer_lib.Streamer.for_model(model), rate=rate,
                                 model_rate=model.sample_rate, keep_input=kept_input.KEEP,
                                 **settings)
    latency = pipe.measure_latency(new_pipe, block)
    through, start = new_pipe(), time.perf_counter()
    out = np.concatenate([through.feed(signal[i:i + block])
                          for i in range(0, len(signal), block)] + [through.flush()])
    return latency, (time.perf_counter() - start) / seconds, out.astype(np.float64)

  model = mask.MaskDenoiser(sample_rate=16000, causal=True)
  outputs, rows = {}, []
  for quality in pipe.QUALITIES:
    for extend_band in (True, False):
      latency, rtf, outputs[quality, extend_band] = measured(
          model, extend_band=extend_band, quality=quality)
      reference, out = outputs["VHQ", extend_band], outputs[quality, extend_band]
      error = np.sum((reference - out) ** 2)
      snr = "-" if quality == "VHQ" else f"{10 * np.log10(np.sum(reference ** 2) / error):.1f}"
      rows.append(["16 kHz", quality, "on" if extend_band else "off", f"{1e3 * latency:.1f}",
                   f"{rtf:.4f}", snr])
  latency, rtf, _ = measured(mask.MaskDenoiser(sample_rate=rate, causal=True,
                                                fft_length=STREAMING_FFT))
  rows.append(["48 kHz (streaming.flags)", "none", "-", f"{1e3 * latency:.1f}", f"{rtf:.4f}",
               "-"])
  return rows


def anchor_rows(seconds: float):
  """The installed anchors' rows at 48 kHz, one frame per call (after one untimed frame),
  and notes on those that are not installed."""
  signal = white_noise(seconds, anchors.RATE)
  installed, notes = anchors.available()
  rows = []
  for name, anchor in installed.items():
    process = anchor.new_state()
    process(signal[:anchors.FRAME])
    start = time.perf_counter()
    for first in range(0, len(signal) - anchors.FRAME + 1, anchors.FRAME):
      process(signal[first:first + anchors.FRAME])
    took = time.perf_counter() - start
    rows.append([f"{anchors.RATE}", f"{name} (pretrained, {anchors.FRAME}-sample frames)",
                 f"{1e3 * anchor.delay / anchors.RATE:.1f}",
                 f"{1e3 * took * anchors.FRAME / len(signal):.3f}", f"{took / seconds:.4f}",
                 "-", "-", "-"])
  return rows, notes


def click_rows(saved_models):
  """Each export's latency at 48 kHz measured live through the CLI: 1 s of raw 48 kHz PCM
  with a click at 0.5 s piped into `python -m trainer.stream` in 10 ms blocks, the output
  read after each block until none comes for CLICK_QUIET_SECONDS. The click (carried by
  the share of the input the export keeps) comes out only once this much more input went
  in; beside it, the input it held back at the end, and the latency the command printed."""
  rate, block, at = 48000, 480, 24000
  click = np.zeros(rate, np.int16)
  click[at] = 16384
  rows = []
  for name, path in saved_models:
    process = subprocess.Popen(
        [sys.executable, "-m", "trainer.stream", f"--saved_model={path}",
         f"--raw_rate={rate}", "--raw_output"], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, fed, click_after = b"", 0, None
    for first in range(0, len(click), block):
      process.stdin.write(click[first:first + block].tobytes())
      process.stdin.flush()
      fed += block
      while select.select([process.stdout], [], [], CLICK_QUIET_SECONDS)[0]:
        out += os.read(process.stdout.fileno(), 1 << 16)
      samples = np.frombuffer(out[:len(out) // 2 * 2], np.int16)
      if click_after is None and len(samples) > at and abs(int(samples[at])) > 1000:
        click_after = fed - at
    held = fed - len(out) // 2
    process.stdin.close()
    stderr = process.stderr.read().decode()
    if process.wait():
      raise SystemExit(f"trainer.stream --saved_model={path}: {stderr[-2000:]}")
    printed = stderr.strip().splitlines()[-1].split("latency ")[1].split(";")[0]
    rows.append([name, "-" if click_after is None else f"{1e3 * click_after / rate:.1f}",
                 f"{1e3 * held / rate:.1f}", printed])
  return rows


def demucs_row(python: str, seconds: float):
  """DemucsStreamer's row, timed by `python` (which has torch and denoiser)."""
  result = subprocess.run([python, "-c", DEMUCS, str(seconds)], capture_output=True,
                          text=True, check=False)
  if result.returncode:
    raise SystemExit(f"--demucs_python={python} could not run DemucsStreamer:\n"
                     f"{result.stderr.strip()[-2000:]}")
  rtf, stride = result.stdout.split()[-2:]
  return ["16000", "denoiser DemucsStreamer (H=48, causal)", "-",
          f"{1e3 * float(rtf) * int(stride) / 16000:.3f}", f"{float(rtf):.4f}", "-", "-", "-"]


def noisy_speech(path: str) -> np.ndarray:
  """The speech in `path` at 16 kHz with white noise 5 dB below it."""
  speech, rate = audio.read_file(path)
  speech = audio.resample(speech, rate, 16000, name="speech")
  noise = np.random.default_rng(1).standard_normal(len(speech))
  noise *= np.sqrt(np.mean(speech ** 2) / np.mean(noise ** 2) / 10 ** 0.5)
  return (speech + noise).astype(np.float32)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--seconds", type=float, default=10.0)
  parser.add_argument("--model_dir", help="A trained causal mask run (its rate's rows).")
  parser.add_argument("--speech", help="A speech recording (WAV/FLAC): the int8 file's SNR.")
  parser.add_argument("--demucs_python", help="A Python with torch and denoiser 0.1.5.")
  parser.add_argument("--transform_choices", action="store_true",
                      help="Also time the 48 kHz TFLite transforms a model could use.")
  parser.add_argument("--latency", action="store_true",
                      help="Only the end-to-end latency of trainer.stream's settings.")
  parser.add_argument("--saved_model", action="append", default=[],
                      help="--latency: name=dir of an export whose latency at 48 kHz is "
                      "measured with a click through trainer.stream (repeatable).")
  args = parser.parse_args()
  tf.config.threading.set_intra_op_parallelism_threads(1)
  tf.config.threading.set_inter_op_parallelism_threads(1)
  if args.latency:
    print(f"48 kHz through the causal mask model at 16 and 48 kHz, {args.seconds:g} s "
          f"in 10 ms blocks, 1 thread (TF step); {timing.machine()}")
    print(timing.table(["model", "resampling", "band extension", "latency ms", "RTF",
                        "SNR vs VHQ dB"], latency_rows(args.seconds)))
    if args.saved_model:
      rows = click_rows([item.partition("=")[::2] for item in args.saved_model])
      print("\nA click in 48 kHz audio piped live through python -m trainer.stream, 10 ms "
            "blocks:")
      print(timing.table(["export", "input after the click before it came out, ms",
                          "input held back, ms", "latency trainer.stream printed"], rows))
    return
  speech = noisy_speech(args.speech) if args.speech else None
  with tempfile.TemporaryDirectory() as work_dir:
    trained = args.model_dir and (args.model_dir,
                                  run_dir.restore_model(args.model_dir)[0])
    table = [r for rate in RATES
             for r in rows_at(rate, args.seconds, work_dir, trained, speech)]
    choices = transform_choices(args.seconds, work_dir) if args.transform_choices else []
  rows, notes = anchor_rows(args.seconds)
  table += rows
  if args.demucs_python:
    table.append(demucs_row(args.demucs_python, args.seconds))
  for note in notes:
    print(f"note: {note}")
  print(f"{args.seconds:g} s of audio, 1 thread; weights: "
        f"{args.model_dir or 'untrained'}; {timing.machine()}")
  print(timing.table(["rate Hz", "model: how", "latency ms", "ms per hop", "RTF",
                      "file", "state", "int8 SNR dB"], table))
  if choices:
    print("\n48 kHz TFLite transforms (default causal shape, untrained), streamed:")
    print(timing.table(["transform", "quantize", "latency ms", "bins", "RTF", "file"],
                       choices))


if __name__ == "__main__":
  main()
