"""Tests for ops.frame_stft: the three ways of one frame's STFT and its inverse agree with tf.signal."""

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from ops import frame_stft


class TransformsTest(tf.test.TestCase, parameterized.TestCase):

  @parameterized.parameters((512, 128, 512, "matmul"), (512, 128, 512, "rfft"),
                            (1536, 384, 1536, "matmul"), (400, 100, 512, "rfft"))
  def test_each_equals_tf_signal(self, window, hop, fft_length, kind):
    frame = tf.constant(np.random.default_rng(window).standard_normal(window), tf.float32)
    gain = tf.constant(np.random.default_rng(1).uniform(size=[1, 1, fft_length // 2 + 1]),
                       tf.float32)
    reference = frame_stft.create("fft", window, hop, fft_length)
    transform = frame_stft.create(kind, window, hop, fft_length)
    expected, spectrum = reference.analyse(frame), transform.analyse(frame)
    self.assertAllClose(spectrum.power, expected.power, rtol=1e-4, atol=1e-3)
    self.assertAllClose(transform.synthesise(spectrum, gain),
                        reference.synthesise(expected, gain), atol=1e-5)

  def test_tflite_takes_the_fft_where_the_length_is_a_power_of_two(self):
    self.assertEqual([frame_stft.for_tflite(n) for n in (256, 512, 1536, 2048)],
                     ["rfft", "rfft", "matmul", "rfft"])
    with self.assertRaisesRegex(ValueError, "rfft needs a power-of-two FFT length, not "
                                "1536: use matmul"):
      frame_stft.create("rfft", 1536, 384, 1536)
    with self.assertRaisesRegex(ValueError, "transform='dct': use one of fft, matmul, rfft"):
      frame_stft.create("dct", 512, 128, 512)


if __name__ == "__main__":
  tf.test.main()
