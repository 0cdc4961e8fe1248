"""RevEcho reverb as TensorFlow ops: sparse echo-train impulse responses and FFT convolution."""

import math
from typing import NamedTuple, Tuple

import tensorflow as tf

from common import checks
from ops import spectral
from ops import stateless

Range = Tuple[float, float]


def rev_echo_bounds(*, length: int, sample_rate: float, rt60_max: float,
                    first_delay_min: float, first_delay_max: float,
                    jitter: float) -> Tuple[int, int]:
  """Static sizes that hold every echo the configured ranges can produce.

  Args:
    length: signal length in samples.
    sample_rate: samples per second.
    rt60_max: the largest rt60 that will be drawn, in seconds.
    first_delay_min: the smallest first delay that will be drawn, in seconds.
    first_delay_max: the largest first delay that will be drawn, in seconds.
    jitter: relative jitter of delays and attenuations, in [0, 1).

  Returns:
    `(max_echoes, ir_length)`: echoes per train to draw jitters for, and the
    number of IR taps that can be non-zero (at most `length`).
  """
  _check_positive(sample_rate=sample_rate, rt60_max=rt60_max,
                  first_delay_min=first_delay_min,
                  first_delay_max=first_delay_max, length=length)
  _check_jitter(jitter)
  max_echoes = math.ceil(rt60_max / (first_delay_min * (1 - jitter))) + 1
  ir_length = (math.ceil(rt60_max * sample_rate * (1 + jitter) / (1 - jitter))
               + max_echoes
               + math.ceil((1 + jitter) * first_delay_max * sample_rate) + 2)
  return max_echoes, min(length, ir_length)


def rev_echo_ir(initial, first_delay, rt60, jitter_u, *, length: int,
                sample_rate: float, jitter: float = 0.1,
                threshold: float = 1e-3, ir_length: int = None) -> tf.Tensor:
  """Impulse responses of `repeat` decaying echo trains per example.

  Every train starts at amplitude `initial`; echo k of train r sits
  `1 + floor((1 + jitter*u[r,k,0]) * first_delay * sample_rate)` samples after
  the previous one and the train decays by
  `10 ** (-3 * (1 + jitter*u[r,k,1]) * first_delay / rt60)` per echo, until the
  remaining fraction is at most `threshold`. Delays and decisions are computed
  in float64; the IR is returned in float32.

  Args:
    initial: `[batch]` amplitude of each train's first echo.
    first_delay: `[batch]` mean echo spacing in seconds.
    rt60: `[batch]` time for the trains to decay by 60 dB, in seconds.
    jitter_u: `[batch, repeat, max_echoes, 2]` uniforms in [-1, 1].
    length: signal length in samples; taps at or past it are dropped.
    sample_rate: samples per second of the signal.
    jitter: relative jitter, in [0, 1).
    threshold: a train stops once its remaining fraction is <= this.
    ir_length: static number of taps to return (default `length`); use
      `rev_echo_bounds` to pick the smallest one that is safe.

  Returns:
    `[batch, ir_length]` float32 impulse responses with `h[:, 0] == 0`.

  Raises:
    ValueError: on bad sizes, or (when the parameters are known while
      tracing or eagerly) if `jitter_u` holds fewer echoes than needed.
  """
  _check_positive(length=length, sample_rate=sample_rate)
  _check_jitter(jitter)
  ir_length = length if ir_length is None else ir_length
  if not 0 < ir_length <= length:
    raise ValueError(f"ir_length must be in [1, length={length}], got {ir_length}.")
  jitter_u = tf.convert_to_tensor(jitter_u)
  if jitter_u.shape.rank != 4 or jitter_u.shape[-1] != 2:
    raise ValueError("jitter_u must have shape [batch, repeat, max_echoes, 2], "
                     f"got {jitter_u.shape}.")
  jitter_u = tf.cast(jitter_u, tf.float64)
  initial, first_delay, rt60 = (
      tf.cast(tf.convert_to_tensor(v, dtype_hint=tf.float64), tf.float64)[:, None, None]
      for v in (initial, first_delay, rt60))

  delays = tf.minimum(
      1.0 + tf.floor((1.0 + jitter * jitter_u[..., 0]) * first_delay * sample_rate),
      float(length))
  positions = tf.cumsum(delays, axis=-1)
  attenuation = 10.0 ** (-3.0 * (1.0 + jitter * jitter_u[..., 1]) * first_delay / rt60)
  fraction = tf.math.cumprod(attenuation, axis=-1, exclusive=True)
  _check_enough_echoes(fraction[..., -1] * attenuation[..., -1], threshold,
                       jitter_u.shape[2])
  active = (fraction > threshold) & (positions < ir_length)
  amplitude = tf.where(active, initial * fraction, 0.0)

  batch = tf.shape(jitter_u)[0]
  index = tf.cast(tf.where(active, positions, 0.0), tf.int32)
  rows = tf.broadcast_to(tf.range(batch)[:, None, None], tf.shape(index))
  scatter_index = tf.reshape(tf.stack([rows, index], axis=-1), [-1, 2])
  return tf.scatter_nd(scatter_index,
                       tf.reshape(tf.cast(amplitude, tf.float32), [-1]),
                       tf.stack([batch, ir_length]))


def apply_ir(signal, ir) -> tf.Tensor:
  """Causal convolution of `signal` `[batch, time]` with `ir` `[batch, taps]`.

  The output is truncated to the signal's length and has the signal's dtype;
  the FFTs run in float32 at a 2^a*3^b*5^c length.
  """
  signal = tf.convert_to_tensor(signal)
  ir = tf.convert_to_tensor(ir)
  if signal.shape.rank != 2 or ir.shape.rank != 2:
    raise ValueError("apply_ir takes signal [batch, time] and ir [batch, taps], "
                     f"got {signal.shape} and {ir.shape}.")
  time, taps = signal.shape[1], ir.shape[1]
  if time is None or taps is None:
    raise ValueError("apply_ir needs static time and tap counts, got "
                     f"{signal.shape} and {ir.shape}.")
  n = spectral.fft_length(time + taps - 1)
  spectrum = (tf.signal.rfft(tf.cast(signal, tf.float32), [n])
              * tf.signal.rfft(tf.cast(ir, tf.float32), [n]))
  return tf.cast(tf.signal.irfft(spectrum, [n])[:, :time], signal.dtype)


class RevEchoParams(NamedTuple):
  """One draw of RevEcho parameters for a batch (all float64 tensors)."""
  apply: tf.Tensor          # [batch] bool: reverberate this example.
  initial: tf.Tensor        # [batch]
  first_delay: tf.Tensor    # [batch] seconds
  rt60: tf.Tensor           # [batch] seconds
  noise_jitter: tf.Tensor   # [batch, repeat, max_echoes, 2] in [-1, 1]
  clean_jitter: tf.Tensor   # [batch, repeat, max_echoes, 2] in [-1, 1]


class RevEcho(tf.Module):
  """Reverb augmentation of noisy/clean pairs, on whatever device runs it.

  Call it as `noisy, clean = rev_echo(noisy, clean, seed)` with `[batch, time]`
  signals and a `[2]` integer seed. Each example is reverberated with
  probability `proba`; noise and clean share `initial`, `first_delay` and
  `rt60` but get independent jitters; `keep_clean` of the clean reverb stays in
  the target and the rest moves to the noise.
  """

  def __init__(self, *, sample_rate: float, proba: float = 0.5,
               initial: float = 0.3, rt60: Range = (0.3, 1.3),
               first_delay: Range = (0.01, 0.03), repeat: int = 3,
               jitter: float = 0.1, keep_clean: float = 0.1,
               threshold: float = 1e-3, name: str = None):
    super().__init__(name=name)
    _check_positive(sample_rate=sample_rate, repeat=repeat)
    _check_unit(proba=proba, keep_clean=keep_clean)
    if initial < 0:
      raise checks.ArgumentError("initial", initial, "must be >= 0.")
    self.rt60 = _check_range("rt60", rt60)
    self.first_delay = _check_range("first_delay", first_delay)
    _check_jitter(jitter)
    self.sample_rate = float(sample_rate)
    self.proba = float(proba)
    self.initial = float(initial)
    self.repeat = int(repeat)
    self.jitter = float(jitter)
    self.keep_clean = float(keep_clean)
    self.threshold = float(threshold)

  def bounds(self, length: int) -> Tuple[int, int]:
    """`(max_echoes, ir_length)` for signals of `length` samples."""
    return rev_echo_bounds(length=length, sample_rate=self.sample_rate,
                           rt60_max=self.rt60[1],
                           first_delay_min=self.first_delay[0],
                           first_delay_max=self.first_delay[1],
                           jitter=self.jitter)

  def sample(self, seed, batch_size, length: int) -> RevEchoParams:
    """Draws per-example parameters from the stateless `seed` (shape [2]).

    The draws are identical eagerly, in tf.function and under XLA (see
    `ops.stateless`), so a compiled step and a debugging run agree.
    """
    max_echoes, _ = self.bounds(length)
    seeds = stateless.split(seed, 6)
    jitter_shape = tf.stack([batch_size, self.repeat, max_echoes, 2])

    def uniform(i, lo, hi, shape=None):
      shape = tf.reshape(batch_size, [1]) if shape is None else shape
      return stateless.uniform(shape, seeds[i], lo, hi, tf.float64)

    return RevEchoParams(
        apply=uniform(0, 0.0, 1.0) < self.proba,
        initial=uniform(1, 0.0, self.initial),
        first_delay=uniform(2, *self.first_delay),
        rt60=uniform(3, *self.rt60),
        noise_jitter=uniform(4, -1.0, 1.0, jitter_shape),
        clean_jitter=uniform(5, -1.0, 1.0, jitter_shape))

  def apply(self, noisy, clean, params: RevEchoParams):
    """Reverberates `noisy`/`clean` `[batch, time]` with the given draws."""
    noisy, clean = _check_pair(noisy, clean)
    length = noisy.shape[1]
    _, ir_length = self.bounds(length)

    def ir(jitter_u):
      return rev_echo_ir(params.initial, params.first_delay, params.rt60,
                         jitter_u, length=length, sample_rate=self.sample_rate,
                         jitter=self.jitter, threshold=self.threshold,
                         ir_length=ir_length)

    clean32 = tf.cast(clean, tf.float32)
    noise32 = tf.cast(noisy, tf.float32) - clean32
    noise_reverb = apply_ir(noise32, ir(params.noise_jitter))
    clean_reverb = apply_ir(clean32, ir(params.clean_jitter))
    new_noise = noise32 + noise_reverb + (1.0 - self.keep_clean) * clean_reverb
    new_clean = clean32 + self.keep_clean * clean_reverb
    selected = params.apply[:, None]
    return (tf.where(selected, tf.cast(new_noise + new_clean, noisy.dtype), noisy),
            tf.where(selected, tf.cast(new_clean, clean.dtype), clean))

  def __call__(self, noisy, clean, seed):
    """Returns `(noisy, clean)` reverberated with draws keyed by `seed`."""
    noisy, clean = _check_pair(noisy, clean)
    params = self.sample(seed, tf.shape(noisy)[0], noisy.shape[1])
    return self.apply(noisy, clean, params)


def rev_echo(noisy, clean, seed, *, sample_rate: float, proba: float = 0.5,
             initial: float = 0.3, rt60: Range = (0.3, 1.3),
             first_delay: Range = (0.01, 0.03), repeat: int = 3,
             jitter: float = 0.1, keep_clean: float = 0.1):
  """Functional form of `RevEcho`: returns the reverberated `(noisy, clean)`."""
  return RevEcho(sample_rate=sample_rate, proba=proba, initial=initial,
                 rt60=rt60, first_delay=first_delay, repeat=repeat,
                 jitter=jitter, keep_clean=keep_clean)(noisy, clean, seed)


def _check_enough_echoes(remaining, threshold, max_echoes):
  """Fails if some train is still above `threshold` after `max_echoes` echoes.

  Checked whenever the value is known (eagerly, or for constant parameters);
  inside a compiled step the caller sizes `jitter_u` with `rev_echo_bounds`.
  """
  message = (f"jitter_u holds {max_echoes} echoes per train, but the decay "
             "parameters need more; draw max_echoes from rev_echo_bounds().")
  value = tf.get_static_value(remaining)
  if value is not None and (value > threshold).any():
    raise ValueError(message)


def _check_pair(noisy, clean):
  noisy = tf.convert_to_tensor(noisy)
  clean = tf.convert_to_tensor(clean)
  if noisy.shape.rank != 2 or clean.shape.rank != 2:
    raise ValueError("noisy and clean must be [batch, time], got "
                     f"{noisy.shape} and {clean.shape}.")
  if not noisy.shape.is_compatible_with(clean.shape):
    raise ValueError(f"noisy {noisy.shape} and clean {clean.shape} differ in shape.")
  if noisy.shape[1] is None:
    raise ValueError("RevEcho needs a static time length; crop or pad to a fixed "
                     f"length first (got {noisy.shape}).")
  if noisy.dtype != clean.dtype or not noisy.dtype.is_floating:
    raise ValueError("noisy and clean must share one floating dtype, got "
                     f"{noisy.dtype.name} and {clean.dtype.name}.")
  return noisy, clean


def _check_positive(**values):
  for name, value in values.items():
    checks.positive(name, value)


def _check_unit(**values):
  for name, value in values.items():
    checks.probability(name, value)


def _check_jitter(jitter):
  if not 0.0 <= jitter < 1.0:
    raise checks.ArgumentError("jitter", jitter, "must be in [0, 1).")


def _check_range(name, value) -> Range:
  lo, hi = (float(v) for v in value)
  if not 0 < lo <= hi:
    raise checks.ArgumentError(name, f"({lo:g}, {hi:g})", "must be a range (lo, hi) with "
                               "0 < lo <= hi.")
  return lo, hi
