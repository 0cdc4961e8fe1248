"""Tests for trainer.serving.pipe and the trainer.stream command: audio enhanced as it arrives, at any rate, equal to the offline model at the model's rate."""

import io
import os
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest
from scipy.io import wavfile
import tensorflow as tf

from input import wav
from ops import kept_input
from tests import helpers
from trainer import stream as stream_command
from trainer.models import mask
from trainer.serving import file_denoising
from trainer.serving import pipe
from trainer.serving import saved_model
from trainer.serving import streamer

RATE = 16000
# How far (in 16-bit LSB) a causal model's file output may differ from its stream past the
# first 10 s chunk (docs/realtime.md).
STREAM_FILE_BOUND_LSB = 128


def causal_model():
  return mask.MaskDenoiser(sample_rate=RATE, hidden=8, depth=3, causal=True, seed=2)


def kept(model, signal):
  """The offline model's output for `signal` at RATE, with the shares of the input a stream
  keeps by default."""
  return model.keeping(tf.constant(signal[None], tf.float32), kept_input.KEEP,
                       kept_input.PRESENCE_KEEP)[0]


def band_power(x, rate, low):
  """The power of `x` above `low` Hz."""
  power = np.abs(np.fft.rfft(x.astype(np.float64))) ** 2
  return power[np.fft.rfftfreq(len(x), 1.0 / rate) >= low].sum()


def speechlike(seconds, rate, seed=0):
  t = np.arange(int(seconds * rate)) / rate
  rng = np.random.default_rng(seed)
  return (0.3 * np.sin(2 * np.pi * 220 * t) * (1 + np.sin(2 * np.pi * 3 * t))
          + 0.05 * rng.standard_normal(len(t))).astype(np.float32)


class PipeTest(tf.test.TestCase):

  def test_wav_headers_round_trip_and_bad_ones_are_named(self):
    self.assertEqual(pipe.read_wav_header(io.BytesIO(wav.header(44100) + b"\0\0")).rate, 44100)
    stereo = wav.header(16000).replace(b"\x01\x00\x01\x00", b"\x01\x00\x02\x00", 1)
    with self.assertRaisesRegex(ValueError, "2 channel.*stream mono 16-bit PCM"):
      pipe.read_wav_header(io.BytesIO(stereo))
    with self.assertRaisesRegex(ValueError, "not a WAV file"):
      pipe.read_wav_header(io.BytesIO(b"ID3" + b"\0" * 40))
    with self.assertRaisesRegex(ValueError, "ends inside its WAV header"):
      pipe.read_wav_header(io.BytesIO(wav.header(16000)[:20]))

  def test_at_the_models_rate_the_pipe_is_the_offline_model(self):
    model = causal_model()
    signal = speechlike(0.5, RATE)
    through = pipe.Pipe(streamer.Streamer.for_model(model), rate=RATE, model_rate=RATE)
    blocks = [through.feed(signal[i:i + 100]) for i in range(0, len(signal), 100)]
    out = np.concatenate(blocks + [through.flush()])
    self.assertAllClose(out, kept(model, signal), atol=1e-5, rtol=0)
    self.assertEqual(through.model_latency_seconds, (model.window - 1) / RATE)

  def test_at_another_rate_the_length_is_kept_and_the_audio_follows_the_model(self):
    model = causal_model()
    rate = 44100
    signal = speechlike(1.0, rate)
    through = pipe.Pipe(streamer.Streamer.for_model(model), rate=rate, model_rate=RATE)
    out = np.concatenate([through.feed(signal[i:i + 441]) for i in range(0, len(signal), 441)]
                         + [through.flush()])
    self.assertLen(out, len(signal))
    # the band the model covers, against the model at its own rate on the resampled input
    at_model_rate = kept(model, pipe.soxr.resample(signal, rate, RATE))
    back = pipe.soxr.resample(out, rate, RATE)
    middle = slice(RATE // 10, -RATE // 10)
    error = np.linalg.norm(back[middle] - at_model_rate.numpy()[middle]) / np.linalg.norm(
        at_model_rate.numpy()[middle])
    self.assertLess(error, 0.01)


  def test_the_latency_measured_is_how_long_a_sample_waits_and_lq_waits_less(self):
    rate, block = 48000, 480
    measured = {}
    for quality in ("VHQ", "LQ"):
      for extend_band in (True, False):
        new_pipe = lambda: pipe.Pipe(  # pylint: disable=g-long-lambda,cell-var-from-loop
            streamer.Streamer.for_model(causal_model()), rate=rate, model_rate=RATE,
            keep_input=kept_input.KEEP, extend_band=extend_band, quality=quality)
        measured[quality, extend_band] = pipe.measure_latency(new_pipe, block)
        through, fed, returned, waits = new_pipe(), 0, 0, []
        for _ in range(rate // block):  # how long each sample of the second half waits
          before = returned
          returned += len(through.feed(np.zeros(block, np.float32)))
          fed += block
          waits += [fed - n for n in range(max(before, rate // 2), returned)]
        # the same worst wait, within the blocks the resamplers release in
        self.assertAllClose(max(waits) / rate, measured[quality, extend_band],
                            atol=2 * block / rate)
    self.assertLess(measured["LQ", False], measured["VHQ", True] / 2)
    self.assertLess(measured["LQ", False], measured["LQ", True])
    self.assertGreater(measured["LQ", False], (causal_model().window - 1) / RATE)

  @pytest.mark.slow
  def test_past_the_first_chunk_stream_and_file_differ_by_the_stated_bound(self):
    model, signal = causal_model(), speechlike(30.0, RATE)
    stream = streamer.Streamer.for_model(model)
    streamed = np.concatenate([stream.feed(signal), stream.flush()])
    as_file = file_denoising.denoise_signal(saved_model.ExportedDenoiser(model, RATE), signal,
                                            RATE)  # 10 s chunks, 0.5 s cross-fades
    lsb = np.abs(streamed - as_file) * 32768
    first_chunk = int(9.5 * RATE)  # before the first cross-fade
    self.assertLess(lsb[:first_chunk].max(), 1.0)
    self.assertLess(lsb.max(), STREAM_FILE_BOUND_LSB)  # docs/realtime.md states it
    self.assertGreater(lsb.max(), 1.0)  # the chunks do restart the model

  def test_above_the_models_band_the_stream_extends_it_as_a_file_is(self):
    model, rate = causal_model(), 48000
    rng = np.random.default_rng(4)
    signal = (speechlike(1.0, rate) + 0.02 * rng.standard_normal(rate)).astype(np.float32)
    as_file = file_denoising.denoise_signal(saved_model.ExportedDenoiser(model, RATE), signal, rate)
    outputs = {}
    for extend_band in (True, False):
      through = pipe.Pipe(streamer.Streamer.for_model(model), rate=rate, model_rate=RATE,
                          keep_input=kept_input.KEEP, extend_band=extend_band)
      outputs[extend_band] = np.concatenate(
          [through.feed(signal[i:i + 480]) for i in range(0, len(signal), 480)]
          + [through.flush()])
      self.assertLen(outputs[extend_band], len(signal))
    upper = lambda x: band_power(x[rate // 10:-rate // 10], rate, 9000)  # pylint: disable=g-long-lambda
    self.assertAllClose(upper(outputs[True]), upper(as_file), rtol=0.02)
    self.assertLess(upper(outputs[False]), 1e-3 * upper(as_file))
    middle = slice(rate // 10, -rate // 10)
    error = np.linalg.norm(outputs[True][middle] - as_file[middle]) / np.linalg.norm(
        as_file[middle])
    self.assertLess(error, 0.01)


class StreamCommandTest(tf.test.TestCase):

  @pytest.mark.end_to_end
  def test_a_pipe_gets_audio_out_before_its_input_ends(self):
    model = causal_model()
    saved = os.path.join(self.create_tempdir().full_path, "exported")
    module = saved_model.ExportedDenoiser(model, RATE)
    tf.saved_model.save(module, saved, signatures=module.signatures())
    signal = speechlike(2.0, RATE)
    pcm = pipe.to_pcm16(signal)
    child = subprocess.Popen(
        [sys.executable, "-m", "trainer.stream", f"--saved_model={saved}",
         f"--raw_rate={RATE}", "--raw_output"], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=helpers.env(), cwd=helpers.REPO)
    try:
      half = len(pcm) // 2
      child.stdin.write(pcm[:half])
      child.stdin.flush()
      early = []  # what comes out while the second half has not been written
      reader = threading.Thread(target=lambda: early.append(child.stdout.read(
          half - 2 * (model.window - 1))))
      reader.start()
      reader.join(timeout=120)
      self.assertFalse(reader.is_alive(), "no output while the input was still open")
      child.stdin.write(pcm[half:])
      child.stdin.close()
      rest = child.stdout.read()
      err = child.stderr.read().decode()
      self.assertEqual(child.wait(timeout=120), 0, err[-2000:])
    finally:
      child.kill()
    out = np.frombuffer(early[0] + rest, "<i2").astype(np.float32) / 32768.0
    offline = kept(model, np.frombuffer(pcm, "<i2") / 32768.0)
    self.assertLen(out, len(signal))
    self.assertAllClose(out, offline, atol=3 / 32768, rtol=0)
    self.assertRegex(err, r"trainer.stream: 2.00 s of audio; latency \d+\.\d ms end to "
                     r"end, the model's 31.9; real-time "
                     r"factor \d+\.\d{3}")

  @pytest.mark.end_to_end
  def test_a_wav_file_becomes_a_whole_wav_file_and_nothing_is_replaced_unasked(self):
    saved = os.path.join(self.create_tempdir().full_path, "exported")
    module = saved_model.ExportedDenoiser(causal_model(), RATE)
    tf.saved_model.save(module, saved, signatures=module.signatures())
    directory = self.create_tempdir().full_path
    noisy, enhanced = os.path.join(directory, "noisy.wav"), os.path.join(directory, "out.wav")
    signal = speechlike(0.7, 22050)
    with open(noisy, "wb") as f:
      f.write(wav.header(22050, len(signal)) + pipe.to_pcm16(signal))
    command = ["trainer.stream", f"--saved_model={saved}", f"--input={noisy}",
               f"--output={enhanced}"]
    result = helpers.run_module(*command, timeout=300)
    self.assertEqual(result.returncode, 0, result.stderr[-2000:])
    rate, out = wavfile.read(enhanced)
    self.assertEqual((rate, len(out)), (22050, len(signal)))
    again = helpers.run_module(*command, timeout=300)
    self.assertNotEqual(again.returncode, 0)
    self.assertIn("exists; pass overwrite (--overwrite) to replace it", again.stderr)
    self.assertEqual(wavfile.read(enhanced)[1].tolist(), out.tolist())

  @pytest.mark.end_to_end
  def test_every_output_that_would_lose_something_is_refused_before_any_input_is_read(self):
    saved = os.path.join(self.create_tempdir().full_path, "exported")
    module = saved_model.ExportedDenoiser(causal_model(), RATE)
    tf.saved_model.save(module, saved, signatures=module.signatures())
    directory = self.create_tempdir().full_path
    noisy = os.path.join(directory, "noisy.wav")
    signal = speechlike(0.3, RATE)
    original = wav.header(RATE, len(signal)) + pipe.to_pcm16(signal)
    with open(noisy, "wb") as f:
      f.write(original)
    for output, flags, why in (
        (noisy, ["--overwrite"], f"output {noisy} is the input file {noisy}"),
        (directory, ["--overwrite"], f"output {directory} is a directory"),
        (os.path.join(saved, "x.wav"), [], "lies inside the SavedModel")):
      result = helpers.run_module("trainer.stream", f"--saved_model={saved}",
                                  f"--input={noisy}", f"--output={output}", *flags, timeout=300)
      self.assertNotEqual(result.returncode, 0)
      self.assertIn(why, result.stderr)
      self.assertNotIn("Traceback", result.stderr)
    with open(noisy, "rb") as f:
      self.assertEqual(f.read(), original)
    self.assertEqual(sorted(os.listdir(directory)), ["noisy.wav"])  # nothing left behind

  @pytest.mark.end_to_end
  def test_a_signal_keeps_what_was_enhanced_as_a_whole_wav_in_one_line(self):
    saved = os.path.join(self.create_tempdir().full_path, "exported")
    module = saved_model.ExportedDenoiser(causal_model(), RATE)
    tf.saved_model.save(module, saved, signatures=module.signatures())
    pcm = pipe.to_pcm16(speechlike(1.0, RATE))
    for signum in (signal.SIGINT, signal.SIGTERM):
      directory = self.create_tempdir().full_path
      output = os.path.join(directory, "out.wav")
      child = subprocess.Popen(
          [sys.executable, "-m", "trainer.stream", f"--saved_model={saved}",
           f"--raw_rate={RATE}", f"--output={output}"], stdin=subprocess.PIPE,
          stderr=subprocess.PIPE, env=helpers.env(), cwd=helpers.REPO)
      child.stdin.write(pcm)
      child.stdin.flush()
      through = lambda: any(  # pylint: disable=g-long-lambda,cell-var-from-loop
          os.path.getsize(os.path.join(directory, n)) > len(pcm) - 2048
          for n in os.listdir(directory))  # all but the latency's worth of audio is out
      code, err = helpers.stop_when(child, through, signum)
      self.assertEqual(code, 128 + signum, err[-2000:])
      self.assertNotIn("Traceback", err)
      self.assertRegex(err.strip().splitlines()[-1],
                       f"^trainer.stream: stopped by {signal.Signals(signum).name}: "
                       r"\d\.\d\d s of audio; "  # what was out when the signal came
                       f".*the audio enhanced so far is in {output}.$")
      self.assertEqual(os.listdir(directory), ["out.wav"])  # no temporary left
      rate, out = wavfile.read(output)  # a whole WAV: its header's sizes are right
      self.assertEqual((rate, len(out)), (RATE, RATE))

  @pytest.mark.end_to_end
  def test_a_closed_stdin_or_stdout_is_named(self):
    saved = os.path.join(self.create_tempdir().full_path, "exported")
    command = f"{sys.executable} -m trainer.stream --saved_model={saved} --raw_rate={RATE}"
    for closed, name in (("<&-", "stdin"), (">&-", "stdout")):
      result = subprocess.run(f"{command} {closed}", shell=True, capture_output=True,
                              text=True, env=helpers.env(), cwd=helpers.REPO, timeout=300)
      self.assertNotEqual(result.returncode, 0)
      self.assertEqual(result.stderr.strip().splitlines()[-1], f"trainer.stream: {name} is "
                       f"closed: pass --{'input' if name == 'stdin' else 'output'}=FILE, or "
                       f"give the command a {name}.")

  def test_less_than_a_hop_of_audio_reports_no_real_time_factor(self):
    through = pipe.Pipe(streamer.Streamer.for_model(causal_model()), rate=RATE,
                        model_rate=RATE)
    through.feed(np.zeros(10, np.float32))
    through.flush()
    self.assertRegex(stream_command.summary(through), "no real-time factor")
    through.feed(np.zeros(RATE // 10, np.float32))
    self.assertRegex(stream_command.summary(through), r"real-time factor \d+\.\d{3}$")


if __name__ == "__main__":
  tf.test.main()
