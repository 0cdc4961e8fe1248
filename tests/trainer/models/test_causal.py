"""`causal=True` models of both architectures: changing input after time t leaves output before t - lookahead unchanged, also through an exported SavedModel."""

import os

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from trainer.models import card as card_lib
from trainer.serving import saved_model

RATE, CUT = 8000, 4000
CARDS = {
    "unet": card_lib.ModelCard.create("unet", sample_rate=RATE, hidden=8, depth=3,
                                      attention_heads=2, causal=True),
    "mask": card_lib.ModelCard.create("mask", sample_rate=RATE, hidden=8, depth=3,
                                      causal=True),
}


def inputs():
  """A signal, and the same signal 10x louder after CUT (so its level differs too)."""
  x = np.random.default_rng(0).normal(0, 0.1, size=[1, 2 * CUT]).astype(np.float32)
  changed = x.copy()
  changed[:, CUT:] *= 10.0
  return x, changed


class CausalTest(tf.test.TestCase, parameterized.TestCase):

  def assert_causal(self, denoise, lookahead):
    x, changed = inputs()
    y, y_changed = np.asarray(denoise(tf.constant(x))), np.asarray(denoise(tf.constant(changed)))
    before = CUT - lookahead
    self.assertAllClose(y[:, :before], y_changed[:, :before], rtol=1e-5, atol=1e-6)
    self.assertNotAllClose(y[:, CUT:], y_changed[:, CUT:])

  @parameterized.parameters(*CARDS)
  def test_the_future_does_not_change_the_past(self, architecture):
    model = CARDS[architecture].build()
    self.assertIsNotNone(model.lookahead)
    self.assert_causal(model, model.lookahead)

  @parameterized.parameters(*CARDS)
  def test_a_model_that_is_not_causal_looks_ahead(self, architecture):
    card = CARDS[architecture]
    model = card_lib.ModelCard.create(architecture, sample_rate=RATE,
                                      **dict(card.arguments, causal=False)).build()
    self.assertIsNone(model.lookahead)
    x, changed = inputs()
    self.assertNotAllClose(model(x)[:, :CUT // 2], model(changed)[:, :CUT // 2])

  @parameterized.parameters(*CARDS)
  def test_the_exported_model_is_causal_too(self, architecture):
    card = CARDS[architecture]
    model_dir = self.create_tempdir().full_path
    card.write(model_dir)
    model = card.build()
    tf.train.Checkpoint(model=model).save(os.path.join(model_dir, "checkpoints", "ckpt"))
    output = saved_model.export(model_dir, os.path.join(self.create_tempdir().full_path, "export"))
    loaded = tf.saved_model.load(output)  # kept: its functions need its variables
    self.assert_causal(loaded.denoise, model.lookahead)  # its kept input is causal too


if __name__ == "__main__":
  tf.test.main()
