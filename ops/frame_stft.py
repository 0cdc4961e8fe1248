"""One frame's STFT and its overlap-add inverse for a model's stream step, three ways: tf.signal (as the mask model computes it), real matrix products (TFLite builtins at any FFT length), or TFLite's builtin RFFT2D (powers of two: smaller and faster, and nothing in it for int8 quantisation to coarsen).

Each takes a frame of `window` samples and returns a `Spectrum` of
`[1, 1, bins]`; `synthesise` applies a gain per bin and returns the frame's
windowed output samples `[window]`, to overlap-add every `hop`. All three
compute what `tf.signal.stft` and `tf.signal.inverse_stft` (Hann window) do.
"""

import numpy as np
import tensorflow as tf

KINDS = ("fft", "matmul", "rfft")


class Spectrum:
  """One frame's spectrum: complex (tf.signal) or its real and imaginary parts."""

  def __init__(self, *, complex=None, real=None, imag=None):  # pylint: disable=redefined-builtin
    self.complex, self.real, self.imag = complex, real, imag

  @property
  def power(self) -> tf.Tensor:
    if self.complex is not None:
      return tf.square(tf.abs(self.complex))
    return tf.square(self.real) + tf.square(self.imag)


def for_tflite(fft_length: int) -> str:
  """The transform a TFLite file uses: rfft where TFLite's RFFT2D takes the length (a power
  of two), matmul elsewhere."""
  return "rfft" if fft_length & (fft_length - 1) == 0 else "matmul"


def create(kind: str, window: int, hop: int, fft_length: int):
  """The transform `kind` (one of KINDS) for frames of `window` every `hop` samples."""
  if kind == "rfft" and for_tflite(fft_length) != "rfft":
    raise ValueError(f"transform=rfft needs a power-of-two FFT length, not {fft_length}: "
                     "use matmul.")
  kinds = {"fft": TfSignal, "matmul": DftMatrices, "rfft": RealFft}
  if kind not in kinds:
    raise ValueError(f"transform={kind!r}: use one of {', '.join(KINDS)}.")
  return kinds[kind](window, hop, fft_length)


def _synthesis_window(window: int, hop: int, dtype=tf.float32) -> tf.Tensor:
  return tf.signal.inverse_stft_window_fn(hop, forward_window_fn=tf.signal.hann_window)(
      window, dtype)


class TfSignal:
  """tf.signal's STFT and inverse, as the model computes them."""

  def __init__(self, window: int, hop: int, fft_length: int):
    self.window, self.hop, self.fft_length = window, hop, fft_length

  def analyse(self, frame: tf.Tensor) -> Spectrum:
    return Spectrum(complex=tf.signal.stft(frame[None], self.window, self.hop,
                                           self.fft_length))

  def synthesise(self, spectrum: Spectrum, gain: tf.Tensor) -> tf.Tensor:
    return tf.signal.inverse_stft(
        spectrum.complex * tf.complex(gain, tf.zeros_like(gain)), self.window, self.hop,
        self.fft_length, window_fn=tf.signal.inverse_stft_window_fn(self.hop))[0]


class DftMatrices:
  """The STFT of one frame and its inverse as one real matrix product each: the analysis
  window and the rfft's real and imaginary parts in `[window, 2 * bins]`, the irfft and
  the synthesis window in `[2 * bins, window]`."""

  def __init__(self, window: int, hop: int, fft_length: int):
    bins = fft_length // 2 + 1
    times, freqs = np.arange(window)[:, None], np.arange(bins)[None, :]
    angle = 2.0 * np.pi * times * freqs / fft_length  # [window, bins]
    analysis = tf.signal.hann_window(window, dtype=tf.float64).numpy()[:, None]
    self.forward = tf.constant(np.concatenate([analysis * np.cos(angle),
                                               -analysis * np.sin(angle)], 1), tf.float32)
    weight = np.full(bins, 2.0 / fft_length)  # each bin and its mirror image
    weight[0] = 1.0 / fft_length
    if fft_length % 2 == 0:
      weight[-1] = 1.0 / fft_length
    synthesis = _synthesis_window(window, hop, tf.float64).numpy()[None, :]
    self.inverse = tf.constant(np.concatenate([weight[:, None] * np.cos(angle.T),
                                               -weight[:, None] * np.sin(angle.T)], 0)
                               * synthesis, tf.float32)

  def analyse(self, frame: tf.Tensor) -> Spectrum:
    real, imag = tf.split(tf.matmul(frame[None], self.forward), 2, axis=-1)
    return Spectrum(real=real[None], imag=imag[None])

  def synthesise(self, spectrum: Spectrum, gain: tf.Tensor) -> tf.Tensor:
    parts = tf.concat([spectrum.real * gain, spectrum.imag * gain], -1)[0]  # [1, 2 * bins]
    return tf.matmul(parts, self.inverse)[0]


class RealFft:
  """The real FFT both ways (a power-of-two length N). The inverse is two forward real
  FFTs: for a Hermitian spectrum X, N x[n] = sum_k Re X[k] cos(2 pi k n / N) - Im X[k]
  sin(2 pi k n / N); the first sum is the real part of the real FFT of Re X extended
  evenly (an even sequence: its FFT is real and even), the second the imaginary part of
  the real FFT of Im X extended oddly (odd: its FFT is imaginary and odd), so bins
  0..N/2 give every sample."""

  def __init__(self, window: int, hop: int, fft_length: int):
    self.window, self.fft_length = window, fft_length
    self.analysis = tf.signal.hann_window(window)
    self.synthesis = _synthesis_window(window, hop)

  def analyse(self, frame: tf.Tensor) -> Spectrum:
    spectrum = tf.signal.rfft(frame * self.analysis, [self.fft_length])
    return Spectrum(real=tf.math.real(spectrum)[None, None],
                    imag=tf.math.imag(spectrum)[None, None])

  def synthesise(self, spectrum: Spectrum, gain: tf.Tensor) -> tf.Tensor:
    real, imag = (spectrum.real * gain)[0, 0], (spectrum.imag * gain)[0, 0]
    even = tf.concat([real, tf.reverse(real[1:-1], [0])], 0)
    odd = tf.concat([imag, -tf.reverse(imag[1:-1], [0])], 0)
    cosines = tf.math.real(tf.signal.rfft(even, [self.fft_length]))  # bins 0..N/2
    sines = tf.math.imag(tf.signal.rfft(odd, [self.fft_length]))
    first, second = cosines + sines, cosines - sines  # samples n and N - n
    samples = tf.concat([first, tf.reverse(second[1:-1], [0])], 0) / self.fft_length
    return samples[:self.window] * self.synthesis
