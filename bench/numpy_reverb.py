"""The classic host-side reverb: shift the echo, add, attenuate, repeat (NumPy, float64-exact).

It is both the benchmark's "before" and the reference the ops/ tests compare
the RevEcho op with (run on a unit impulse, it yields the impulse response).
"""

import math

import numpy as np


def shift_and_add(signal, initial, first_delay, rt60, jitter_u, *, sample_rate,
                  jitter=0.1, threshold=1e-3):
  """Reverb of one 1-D `signal` by the echo-train loop, one full pass per echo.

  Consumes the same draws as `ops.rev_echo_ir` (`jitter_u`: [repeat, echoes, 2]).
  """
  length = len(signal)
  out = np.zeros_like(signal)
  for train in jitter_u:
    frac, amp, pos, k = 1.0, initial, 0, 0
    while frac > threshold:
      pos += min(1 + math.floor((1 + jitter * train[k, 0]) * first_delay * sample_rate),
                 length)
      if pos < length:
        out[pos:] += amp * signal[:length - pos]
      att = 10 ** (-3 * (1 + jitter * train[k, 1]) * first_delay / rt60)
      amp *= att
      frac *= att
      k += 1
  return out


def rev_echo_numpy(noisy, clean, params, *, sample_rate, keep_clean=0.1, jitter=0.1):
  """RevEcho on a `[batch, time]` pair with NumPy draws `params` (an ops.RevEchoParams)."""
  noisy, clean = noisy.copy(), clean.copy()
  for b in np.nonzero(params.apply)[0]:
    common = dict(sample_rate=sample_rate, jitter=jitter)
    args = (params.initial[b], params.first_delay[b], params.rt60[b])
    noise = noisy[b] - clean[b]
    noise_reverb = shift_and_add(noise, *args, params.noise_jitter[b], **common)
    clean_reverb = shift_and_add(clean[b], *args, params.clean_jitter[b], **common)
    new_clean = clean[b] + keep_clean * clean_reverb
    noisy[b] = noise + noise_reverb + (1 - keep_clean) * clean_reverb + new_clean
    clean[b] = new_clean
  return noisy, clean
