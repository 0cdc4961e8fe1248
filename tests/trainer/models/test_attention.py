"""Tests for trainer.models.attention: a windowed causal block attends as its offline form does, step by step over any split with its key/value cache."""

from absl.testing import parameterized
import tensorflow as tf

from tests.trainer.models import test_layers
from trainer.models import attention


class AttentionStepTest(tf.test.TestCase, parameterized.TestCase):

  @parameterized.parameters(1, 4, 9)
  def test_its_steps_equal_the_block_offline(self, window):
    block = attention.AttentionBlock(8, 2, causal=True, window=window, seed=3)
    x = tf.random.stateless_normal([41, 8], [5, window])
    offline = block(x[None])[0]
    for sizes in test_layers.feeds(window, 10):
      state = [tf.zeros(shape) for shape in block.state_shapes]
      self.assertAllClose(test_layers.in_steps(block.step, x, sizes, state), offline,
                          atol=1e-6, rtol=0)

  def test_a_block_attending_to_everything_so_far_does_not_step(self):
    block = attention.AttentionBlock(8, 2, causal=True, window=None, seed=3)
    with self.assertRaisesRegex(ValueError, "grow its state without bound"):
      block.state_shapes  # pylint: disable=pointless-statement


if __name__ == "__main__":
  tf.test.main()
