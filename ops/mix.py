"""On-the-fly mixing: clean speech, noise and room responses become a noisy input and its target, on the device inside the step."""

from typing import NamedTuple, Optional, Tuple

import numpy as np
import tensorflow as tf

from common import checks
from ops import reverb
from ops import stateless

Range = Tuple[float, float]
_FLOOR = 1e-5  # RMS below this (-100 dBFS) counts as silence: it is not amplified further


class MixDraws(NamedTuple):
  """One draw of mixing parameters for a batch (`[batch]` tensors)."""
  speech_level_db: tf.Tensor   # RMS of the speech in the mix, dB re full scale (1.0)
  snr_db: tf.Tensor            # speech power / noise power in the mix, in dB
  second_noise: tf.Tensor      # bool: add another example's noise to this one's
  second_noise_db: tf.Tensor   # its level relative to the first noise, in dB
  reverberate: tf.Tensor       # bool: convolve speech (and noise) with a room response
  speech_room: tf.Tensor       # int32 index of the speech's room response
  noise_room: tf.Tensor        # int32 index of the noise's room response
  clip: tf.Tensor              # bool: clip the mix
  clip_db: tf.Tensor           # clipping threshold relative to the mix's peak, in dB
  band_limit: tf.Tensor        # bool: low-pass input and target
  cutoff_hz: tf.Tensor         # the low-pass's cutoff


class Mix(tf.Module):
  """Mixes clean speech and noise into `(noisy, target)` per example, as the DNS Challenge
  synthesizer does, with every draw stateless from the call's seed.

  Call it as `noisy, target = mix(clean, noise, seed)` with `[batch, time]` float signals
  (float32 or bfloat16; the math runs in float32) and a `[2]` integer seed. Per example:

  1. with probability `rir_proba` the speech is convolved (by FFT) with a room response
     drawn from `rirs`; the target keeps the direct path and the early reflections, the
     response up to `early_ms` after its strongest tap (the direct path), like the DNS
     recipe's early-reverberation target; without a room the target is the clean speech;
  2. the speech is scaled so that its RMS in the mix is `speech_level_db` dBFS (full
     scale 1.0: a full-scale sine is -3 dBFS), the target by the same gain;
  3. with probability `second_noise_proba` another example's noise (the next in the
     batch) joins this one's at `second_noise_db` relative to it (both RMS-normalised);
     with a room and `reverb_noise`, the noise is convolved with its own room response;
  4. the noise is scaled to `snr_db` below the speech (power over the whole crop);
  5. optionally the mix is clipped at `clip_db` below its peak (`clip_proba`), and the
     mix and the target are low-passed at `cutoff_hz` (`band_limit_proba`; telephone,
     codecs), by zeroing the FFT bins above the cutoff.

  `draws(batch_size, seed)` returns the per-example parameters a call with that seed uses,
  and `components(clean, noise, draws)` the scaled speech, noise and target before the
  clipping and band limit, so their realised levels can be checked.

  Args:
    sample_rate: of the signals, in Hz.
    snr_db: `(lo, hi)` uniform range of the SNR.
    speech_level_db: `(lo, hi)` uniform range of the speech's RMS in dBFS.
    rir_proba: probability of a room.
    rirs: `[rooms, taps]` room responses (e.g. `input.rooms.read_store`), or None; held on the
      device as a constant. They may also be passed to each call.
    early_ms: how much of the room response after the direct path the target keeps.
    reverb_noise: convolve the noise with a room response too, when the speech gets one.
    second_noise_proba, second_noise_db: a second noise per example.
    clip_proba, clip_db: clipping (`clip_db` <= 0: the threshold below the mix's peak).
    band_limit_proba, cutoff_hz: low-pass of input and target.
  """

  def __init__(self, *, sample_rate: float, snr_db: Range = (-5.0, 20.0),
               speech_level_db: Range = (-35.0, -15.0), rir_proba: float = 0.0,
               rirs=None, early_ms: float = 50.0, reverb_noise: bool = True,
               second_noise_proba: float = 0.0, second_noise_db: Range = (-5.0, 5.0),
               clip_proba: float = 0.0, clip_db: Range = (-12.0, -1.0),
               band_limit_proba: float = 0.0, cutoff_hz: Range = (3400.0, 8000.0),
               name: str = None):
    super().__init__(name=name)
    self.sample_rate = float(checks.positive("sample_rate", sample_rate))
    self.snr_db = checks.interval("snr_db", snr_db)
    self.speech_level_db = checks.interval("speech_level_db", speech_level_db)
    self.rir_proba = checks.probability("rir_proba", rir_proba)
    self.early_samples = int(round(checks.at_least("early_ms", early_ms, 0.0)
                                   * 1e-3 * self.sample_rate))
    self.reverb_noise = bool(reverb_noise)
    self.second_noise_proba = checks.probability("second_noise_proba", second_noise_proba)
    self.second_noise_db = checks.interval("second_noise_db", second_noise_db)
    self.clip_proba = checks.probability("clip_proba", clip_proba)
    self.clip_db = checks.interval("clip_db", clip_db)
    if self.clip_db[1] > 0:
      raise checks.ArgumentError("clip_db", self.clip_db, "must be <= 0 dB (a threshold "
                                 "below the mix's peak).")
    self.band_limit_proba = checks.probability("band_limit_proba", band_limit_proba)
    self.cutoff_hz = checks.interval("cutoff_hz", cutoff_hz, low=1.0)
    self.rirs = None if rirs is None else _check_rirs(rirs)

  def draws(self, batch_size, seed, rirs=None) -> MixDraws:
    """The per-example parameters of a call with `seed` (identical eagerly and under XLA)."""
    rooms = self._rooms(rirs)
    num_rooms = 1 if rooms is None else tf.shape(rooms)[0]
    seeds = stateless.split(seed, 11)
    shape = tf.reshape(batch_size, [1])

    def uniform(i, lo=0.0, hi=1.0):
      return stateless.uniform(shape, seeds[i], lo, hi, tf.float32)

    def index(i):
      return tf.minimum(tf.cast(tf.floor(uniform(i) * tf.cast(num_rooms, tf.float32)),
                                tf.int32), num_rooms - 1)

    return MixDraws(
        speech_level_db=uniform(0, *self.speech_level_db), snr_db=uniform(1, *self.snr_db),
        second_noise=uniform(2) < self.second_noise_proba,
        second_noise_db=uniform(3, *self.second_noise_db),
        reverberate=(uniform(4) < self.rir_proba if rooms is not None
                     else tf.zeros(shape, tf.bool)),
        speech_room=index(5), noise_room=index(6),
        clip=uniform(7) < self.clip_proba, clip_db=uniform(8, *self.clip_db),
        band_limit=uniform(9) < self.band_limit_proba, cutoff_hz=uniform(10, *self.cutoff_hz))

  def components(self, clean, noise, draws: MixDraws, rirs=None):
    """`(speech, noise, target)` float32 `[batch, time]`: the mix's parts at their drawn
    levels (`speech + noise` is the mix before clipping and band limit)."""
    clean, noise = _check_signals(clean, noise)
    clean, noise = tf.cast(clean, tf.float32), tf.cast(noise, tf.float32)
    rooms = self._rooms(rirs)
    speech, target = clean, clean
    if rooms is not None:
      check_room_length(rooms.shape[1], clean.shape[1], self.sample_rate)
      # windowed over the whole set, not per example: constant-folded for constant rooms
      early_rooms = rooms * early_window(rooms, self.early_samples)
      reverberant = reverb.apply_ir(clean, tf.gather(rooms, draws.speech_room))
      early = reverb.apply_ir(clean, tf.gather(early_rooms, draws.speech_room))
      speech = tf.where(draws.reverberate[:, None], reverberant, clean)
      target = tf.where(draws.reverberate[:, None], early, clean)
    gain = 10.0 ** (draws.speech_level_db / 20.0) / rms(speech)
    speech, target = speech * gain[:, None], target * gain[:, None]

    other = tf.roll(noise, shift=1, axis=0)
    second = tf.where(draws.second_noise, 10.0 ** (draws.second_noise_db / 20.0), 0.0)
    noise = noise / rms(noise)[:, None] + other / rms(other)[:, None] * second[:, None]
    if rooms is not None and self.reverb_noise:
      reverberant = reverb.apply_ir(noise, tf.gather(rooms, draws.noise_room))
      noise = tf.where(draws.reverberate[:, None], reverberant, noise)
    noise *= (rms(speech) / (rms(noise) * 10.0 ** (draws.snr_db / 20.0)))[:, None]
    return speech, noise, target

  def apply(self, clean, noise, draws: MixDraws, rirs=None):
    """`(noisy, target)` in `clean`'s dtype, mixed with the given draws."""
    speech, noise, target = self.components(clean, noise, draws, rirs)
    noisy = speech + noise
    if self.clip_proba > 0:
      peak = tf.reduce_max(tf.abs(noisy), axis=-1)
      limit = tf.where(draws.clip, peak * 10.0 ** (draws.clip_db / 20.0), peak)
      noisy = tf.clip_by_value(noisy, -limit[:, None], limit[:, None])
    if self.band_limit_proba > 0:
      cutoff = tf.where(draws.band_limit, draws.cutoff_hz, self.sample_rate)
      noisy, target = (low_pass(x, cutoff, self.sample_rate) for x in (noisy, target))
    dtype = tf.convert_to_tensor(clean).dtype
    return tf.cast(noisy, dtype), tf.cast(target, dtype)

  def __call__(self, clean, noise, seed, *, rirs=None):
    """`(noisy, target)` mixed with draws keyed by `seed`."""
    clean, noise = _check_signals(clean, noise)
    rooms = self._rooms(rirs)  # checked and converted once for the draws and the mix
    return self.apply(clean, noise, self.draws(tf.shape(clean)[0], seed, rooms), rooms)

  def _rooms(self, rirs) -> Optional[tf.Tensor]:
    rooms = self.rirs if rirs is None else _check_rirs(rirs)
    if rooms is None and self.rir_proba > 0:
      raise ValueError(f"rir_proba={self.rir_proba:g} needs room responses: pass rirs= "
                       "(e.g. from input.rooms.read_store) to Mix or to the call.")
    return rooms


def rms(x: tf.Tensor) -> tf.Tensor:
  """`[batch]` RMS of `[batch, time]` signals, floored at -100 dBFS."""
  return tf.maximum(tf.sqrt(tf.reduce_mean(tf.square(x), axis=-1)), _FLOOR)


def early_window(rirs: tf.Tensor, early_samples: int) -> tf.Tensor:
  """`[rooms, taps]` 1 up to `early_samples` after each response's strongest tap, else 0."""
  direct = tf.argmax(tf.abs(rirs), axis=-1, output_type=tf.int32)
  taps = tf.range(tf.shape(rirs)[1])[None, :]
  return tf.cast(taps <= direct[:, None] + early_samples, rirs.dtype)


def low_pass(x: tf.Tensor, cutoff_hz: tf.Tensor, sample_rate: float) -> tf.Tensor:
  """`[batch, time]` float32 with the FFT bins above each example's `cutoff_hz` zeroed."""
  time = x.shape[1]
  spectrum = tf.signal.rfft(x, [time])
  frequencies = tf.range(time // 2 + 1, dtype=tf.float32) * (sample_rate / time)
  keep = tf.cast(frequencies[None, :] <= cutoff_hz[:, None], tf.complex64)
  return tf.signal.irfft(spectrum * keep, [time])


def _check_signals(clean, noise):
  clean, noise = tf.convert_to_tensor(clean), tf.convert_to_tensor(noise)
  if clean.shape.rank != 2 or not clean.shape.is_compatible_with(noise.shape):
    raise ValueError(f"Mix takes clean and noise of one shape [batch, time], got {clean.shape} "
                     f"and {noise.shape}.")
  if clean.shape[1] is None:
    raise ValueError(f"Mix needs a static time length; crop to a fixed length first (got "
                     f"{clean.shape}).")
  if clean.dtype != noise.dtype or not clean.dtype.is_floating:
    raise ValueError(f"clean and noise must share one floating dtype, got {clean.dtype.name} "
                     f"and {noise.dtype.name}.")
  return clean, noise


def _check_rirs(rirs) -> tf.Tensor:
  """Room responses as a `[rooms, taps]` float32 tensor; values given as arrays are checked
  (a tensor, e.g. one this already returned, is taken as it is)."""
  if isinstance(rirs, tf.Tensor):
    rooms = tf.cast(rirs, tf.float32)
  else:
    values = np.asarray(rirs, np.float32)
    if values.ndim != 2 or not values.size:
      raise ValueError(f"rirs must be [rooms, taps] with at least one room, got shape "
                       f"{values.shape}.")
    if not np.isfinite(values).all() or not np.abs(values).max(axis=1).all():
      raise ValueError("rirs hold a non-finite value or an all-zero response: re-create the "
                       "room store.")
    rooms = tf.constant(values)
  if rooms.shape.rank != 2:
    raise ValueError(f"rirs must be [rooms, taps], got shape {rooms.shape}.")
  return rooms


def check_room_length(taps: Optional[int], time: int, sample_rate: float):
  """Raises ValueError if room responses of `taps` are longer than the `time`-sample crops."""
  if taps is not None and taps > time:
    raise ValueError(f"The room responses are {taps} samples ({taps / sample_rate:g} s), "
                     f"longer than the {time}-sample ({time / sample_rate:g} s) crops they "
                     "reverberate: raise --crop_seconds, or write the rooms shorter "
                     "(input.prepare --kind=rir --rir_seconds).")
