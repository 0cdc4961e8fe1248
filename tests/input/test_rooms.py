"""Tests for input.rooms: simulated responses have the drawn T60, the direct path where geometry puts it, and stay in range."""

import numpy as np
import tensorflow as tf

from common import checks
from input import rooms

RATE = 16000


def schroeder_t60(response, sample_rate):
  """T60 from the -5..-25 dB slope of the backward-integrated energy (ISO 3382's T20)."""
  energy = np.cumsum(response[::-1] ** 2)[::-1]
  decay = 10 * np.log10(energy / energy[0])
  start, stop = np.argmax(decay < -5), np.argmax(decay < -25)
  return 3 * (stop - start) / sample_rate


class RoomsTest(tf.test.TestCase):

  def test_simulated_rooms_have_their_t60_and_direct_path(self):
    count = 0
    for response, room in rooms.simulated_set(16, sample_rate=RATE, seconds=1.5, seed=3):
      count += 1
      self.assertEqual(response.shape, (int(1.5 * RATE),))
      self.assertEqual(response.dtype, np.float32)
      self.assertAllClose(np.abs(response).max(), 1.0)
      self.assertAllInRange([room.t60], *rooms.T60_RANGE)
      self.assertBetween(room.distance, 0.29, 3.01)
      self.assertAllClose(schroeder_t60(response, RATE), room.t60, rtol=0.15)
      self.assertAllClose(np.argmax(np.abs(response)), room.distance / 343 * RATE, atol=1.0)
    self.assertEqual(count, 16)

  def test_the_same_seed_gives_the_same_rooms(self):
    first = [r for r, _ in rooms.simulated_set(2, sample_rate=RATE, seconds=0.2, seed=1)]
    again = [r for r, _ in rooms.simulated_set(2, sample_rate=RATE, seconds=0.2, seed=1)]
    other = [r for r, _ in rooms.simulated_set(2, sample_rate=RATE, seconds=0.2, seed=2)]
    self.assertAllEqual(first, again)
    self.assertNotAllClose(first[0], other[0])

  def test_a_t60_the_room_cannot_have_is_refused(self):
    room = rooms.Room((3.0, 3.0, 2.5), (1.0, 1.0, 1.0), (2.0, 2.0, 1.5), t60=0.05)
    with self.assertRaisesRegex(checks.ArgumentError, "t60=0.05 is shorter than"):
      rooms.simulate(room, sample_rate=RATE, taps=100)


if __name__ == "__main__":
  tf.test.main()
