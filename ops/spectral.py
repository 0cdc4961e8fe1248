"""Spectral helpers every package shares: fast FFT sizes and STFT magnitudes (float32)."""

import tensorflow as tf


def fft_length(n: int) -> int:
  """Returns the smallest 2^a * 3^b * 5^c that is >= `n` (fast FFT sizes)."""
  if n < 1:
    raise ValueError(f"fft_length needs a positive size, got {n}.")
  best = 1 << max(0, (n - 1).bit_length())
  power5 = 1
  while power5 < best:
    power35 = power5
    while power35 < best:
      size = power35
      while size < n:
        size *= 2
      best = min(best, size)
      power35 *= 3
    power5 *= 5
  return best


def stft_magnitude(signal, window_samples: int, hop_samples: int):
  """|STFT| of `[batch, time]` float32 audio with a Hann window (5-smooth FFT size)."""
  return tf.abs(tf.signal.stft(signal, window_samples, hop_samples,
                               fft_length(window_samples), pad_end=True))
