"""Room impulse responses without downloads: a shoebox image-source simulator with a stochastic tail, and the loader of room stores.

`simulate` models a rectangular room whose six walls share one
frequency-independent reflection coefficient, set by Sabine's formula for the
requested T60 (`alpha = 0.161 V / (S T60)`, `beta = sqrt(1 - alpha)`). Every
image source up to `mixing_time` (default 80 ms) is placed exactly (Allen &
Berkley's method, each tap a Hann-windowed sinc at its fractional delay, amplitude
`beta^reflections / distance`): the direct path and the early reflections, which
is what the target of `ops.Mix` keeps. After it the response is Gaussian noise
decaying by 60 dB per T60, its level continuing the image sources' energy over
the last 20 ms before the mixing time (the usual hybrid of image sources for the
early part and a statistical late tail). Left out: frequency-dependent
absorption (real tails lose highs faster), air absorption, source and
microphone directivity.
"""

import math
from typing import Iterator, NamedTuple, Tuple

import numpy as np
import tensorflow as tf

from common import checks
from input import records

SPEED_OF_SOUND = 343.0  # m/s
T60_RANGE = (0.2, 1.3)  # s, the DNS Challenge's range
MIC_DISTANCE_RANGE = (0.3, 3.0)  # m
ROOM_RANGES = ((3.0, 10.0), (2.5, 8.0), (2.4, 4.0))  # length, width, height in m
_WALL_MARGIN = 0.3  # m: sources and microphones stay this far from any wall
_SINC_HALF_WIDTH = 8  # taps each side of a fractional delay


class Room(NamedTuple):
  """One simulated response's geometry and reverberation time."""
  size: Tuple[float, float, float]
  source: Tuple[float, float, float]
  microphone: Tuple[float, float, float]
  t60: float

  @property
  def distance(self) -> float:
    return float(np.linalg.norm(np.subtract(self.source, self.microphone)))


def simulate(room: Room, *, sample_rate: int, taps: int, mixing_time: float = 0.08,
             seed: int = 0) -> np.ndarray:
  """The response of `room` from source to microphone, `[taps]` float32 with peak 1.

  Args:
    room: the geometry (metres) and T60 (seconds).
    sample_rate: Hz.
    taps: length of the response.
    mixing_time: seconds after which the stochastic tail replaces the image sources.
    seed: of the tail's noise.
  """
  size = np.asarray(room.size, np.float64)
  volume = float(np.prod(size))
  surface = 2.0 * (size[0] * size[1] + size[0] * size[2] + size[1] * size[2])
  alpha = 0.161 * volume / (surface * checks.positive("t60", room.t60))
  if alpha >= 1.0:
    raise checks.ArgumentError("t60", room.t60, f"is shorter than a {size.tolist()} m room "
                               f"with fully absorbing walls allows ({0.161 * volume / surface:.3f}"
                               " s).")
  beta = math.sqrt(1.0 - alpha)
  response = np.zeros(taps + 2 * _SINC_HALF_WIDTH + 1)
  delays, amplitudes = _image_sources(size, np.asarray(room.source), np.asarray(room.microphone),
                                      beta, max_distance=SPEED_OF_SOUND * mixing_time)
  positions = delays * sample_rate
  offsets = np.arange(-_SINC_HALF_WIDTH, _SINC_HALF_WIDTH + 1)
  base = np.floor(positions).astype(np.int64)
  taps_at = base[:, None] + offsets[None, :]
  distance = taps_at - positions[:, None]
  kernel = np.sinc(distance) * (0.5 + 0.5 * np.cos(np.pi * distance / (_SINC_HALF_WIDTH + 1)))
  inside = taps_at < taps
  np.add.at(response, taps_at[inside] + _SINC_HALF_WIDTH,
            (amplitudes[:, None] * kernel)[inside])
  response = response[_SINC_HALF_WIDTH:_SINC_HALF_WIDTH + taps]

  start = int(round(mixing_time * sample_rate))
  if start < taps:
    time = np.arange(taps) / sample_rate
    envelope = 10.0 ** (-3.0 * time / room.t60)
    tail = np.random.default_rng(seed).normal(size=taps) * envelope
    window = slice(max(0, start - int(0.02 * sample_rate)), start)
    level = math.sqrt(np.sum(response[window] ** 2) / max(np.sum(tail[window] ** 2), 1e-30))
    response[start:] = level * tail[start:]
  return (response / np.abs(response).max()).astype(np.float32)


def _image_sources(size, source, microphone, beta, *, max_distance):
  """Delays (s) and amplitudes of every image source closer than `max_distance`."""
  orders = [np.arange(-(int(max_distance // length) + 1), int(max_distance // length) + 2)
            for length in size]
  positions, reflections = [], []
  for axis in range(3):
    n = orders[axis][:, None]
    parity = np.array([0, 1])[None, :]
    # image coordinate (1 - 2p) x_s + 2 n L, after |n - p| + |n| wall reflections
    positions.append(((1 - 2 * parity) * source[axis] + 2 * n * size[axis]).ravel())
    reflections.append((np.abs(n - parity) + np.abs(n)).ravel())
  grid = np.meshgrid(*positions, indexing="ij")
  count = np.meshgrid(*reflections, indexing="ij")
  offsets = np.stack([g.ravel() for g in grid], axis=1) - microphone[None, :]
  distance = np.maximum(np.linalg.norm(offsets, axis=1), 0.01)
  bounces = sum(c.ravel() for c in count)
  keep = distance <= max_distance
  amplitude = beta ** bounces[keep] / (4 * np.pi * distance[keep])
  return distance[keep] / SPEED_OF_SOUND, amplitude


def draw_room(rng: np.random.Generator) -> Room:
  """A random room: its size, a T60 in T60_RANGE it can have, and a source 0.3-3 m from the
  microphone (as far as the room allows), both away from the walls."""
  size = np.array([rng.uniform(*r) for r in ROOM_RANGES])
  volume, surface = np.prod(size), 2 * (size[0] * size[1] + size[0] * size[2]
                                        + size[1] * size[2])
  shortest = 0.161 * volume / surface / 0.9  # walls absorbing at most 90%
  t60 = rng.uniform(max(T60_RANGE[0], shortest), T60_RANGE[1])
  microphone = rng.uniform(_WALL_MARGIN, size - _WALL_MARGIN)
  for _ in range(100):
    direction = rng.normal(size=3)
    source = microphone + direction / np.linalg.norm(direction) * rng.uniform(
        *MIC_DISTANCE_RANGE)
    if np.all(source >= _WALL_MARGIN) and np.all(source <= size - _WALL_MARGIN):
      break
  else:  # a tiny room: the source goes to the room's centre
    source = size / 2
  return Room(tuple(size), tuple(source), tuple(microphone), float(t60))


def simulated_set(count: int, *, sample_rate: int, seconds: float,
                  seed: int = 0) -> Iterator[Tuple[np.ndarray, Room]]:
  """`count` simulated `(response, room)`s of `seconds`, room i drawn from (seed, i)."""
  checks.at_least("count", count, 1)
  taps = int(round(checks.positive("seconds", seconds) * sample_rate))
  for index in range(count):
    room = draw_room(np.random.default_rng([seed, index]))
    yield simulate(room, sample_rate=sample_rate, taps=taps, seed=seed * 100003 + index), room


def read_store(data_dir: str, split: str, *, sample_rate: int = None) -> np.ndarray:
  """A room store's responses as one `[rooms, taps]` float32 array (for `ops.Mix(rirs=)`).

  Raises:
    ValueError: the split is not a room store, or is at another rate than `sample_rate`.
  """
  manifest = records.read_manifest(data_dir, split, kind="rir")
  if sample_rate is not None and manifest.sample_rate != sample_rate:
    raise ValueError(f"The room store {split!r} in {data_dir} is at {manifest.sample_rate} Hz, "
                     f"but the speech is at {sample_rate} Hz: prepare the rooms at "
                     f"{sample_rate} Hz (input.prepare --kind=rir --sample_rate).")
  dataset = tf.data.TFRecordDataset(manifest.paths,
                                    records.tfrecord_compression(manifest.compression))
  rooms = [records.parse_batch(batch, segment_samples=manifest.segment_samples,
                               kind="rir")["rir"].numpy()
           for batch in dataset.batch(256)]
  return np.concatenate(rooms)
