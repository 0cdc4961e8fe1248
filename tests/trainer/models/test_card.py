"""Tests for trainer.models.card: defaults from the constructors, config.json round trip, checks and clear errors."""

import json
import os

import tensorflow as tf

from common import checks
from trainer.models import card as card_lib
from trainer.models import mask
from trainer.models import unet


class ModelCardTest(tf.test.TestCase):

  def test_shape_arguments_are_the_constructors_defaults(self):
    self.assertEqual(card_lib.shape_arguments("mask"),
                     dict(hidden=128, depth=6, kernel_size=3, causal=False, level="power",
                          level_seconds=1.0, fft_length=0, noise_floor=0.0))
    self.assertEqual(card_lib.shape_arguments("unet")["hidden"], 16)
    with self.assertRaisesRegex(checks.ArgumentError, "architecture=lstm must be one of"):
      card_lib.shape_arguments("lstm")

  def test_create_fills_defaults_and_builds_the_model(self):
    card = card_lib.ModelCard.create("mask", sample_rate=8000, hidden=8, seed=2)
    self.assertEqual(card.arguments, dict(hidden=8, depth=6, kernel_size=3, causal=False,
                                          level="power", level_seconds=1.0, fft_length=0,
                                          noise_floor=0.0))
    model = card.build()
    self.assertIsInstance(model, mask.MaskDenoiser)
    self.assertEqual(model.window, 256)  # 32 ms at the card's rate
    self.assertIsInstance(card_lib.ModelCard.create("unet", sample_rate=8000).build(),
                          unet.UNet)
    with self.assertRaisesRegex(checks.ArgumentError, "stride=4 is not an argument of the "
                                "mask model"):
      card_lib.ModelCard.create("mask", sample_rate=8000, stride=4)

  def test_config_json_round_trip_and_check(self):
    model_dir = self.create_tempdir().full_path
    self.assertIsNone(card_lib.ModelCard.stored(model_dir))
    card = card_lib.ModelCard.create("unet", sample_rate=16000, depth=2, seed=1)
    card.write(model_dir)
    self.assertEqual(card_lib.ModelCard.read(model_dir), card)
    card.check(model_dir)
    other = card_lib.ModelCard.create("unet", sample_rate=16000, depth=3, seed=1)
    with self.assertRaisesRegex(ValueError, "holds a model trained with --depth=2, but the "
                                "flags say --depth=3. Use the run's model flags, or a new "
                                "--model_dir"):
      other.check(model_dir)
    other.write(model_dir)  # never replaces the card a run was trained with
    self.assertEqual(card_lib.ModelCard.read(model_dir), card)

  def test_a_card_written_before_architecture_existed_is_a_unet(self):
    card = card_lib.ModelCard.from_json(dict(model=dict(hidden=8), sample_rate=8000, seed=0))
    self.assertEqual(card.architecture, "unet")

  def test_a_mask_card_written_before_level_existed_keeps_its_models_level(self):
    card = card_lib.ModelCard.from_json(dict(architecture="mask", model=dict(hidden=8),
                                             sample_rate=8000, seed=0))
    self.assertEqual(card.arguments["level"], "log")
    self.assertEqual(card.build().level, "log")
    self.assertIsNone(card.build().level_frames)  # the level over everything so far

  def test_broken_config_json_is_named(self):
    model_dir = self.create_tempdir().full_path
    path = os.path.join(model_dir, card_lib.CONFIG_FILE)
    with self.assertRaisesRegex(FileNotFoundError, "config.json is missing"):
      card_lib.ModelCard.read(model_dir)
    with open(path, "w") as f:
      f.write("{not json")
    with self.assertRaisesRegex(ValueError, f"{path} is not valid JSON"):
      card_lib.ModelCard.read(model_dir)
    with open(path, "w") as f:
      json.dump(dict(architecture="mask", sample_rate=8000), f)
    with self.assertRaisesRegex(ValueError, f'{path} is not a model card .*"model"'):
      card_lib.ModelCard.read(model_dir)


if __name__ == "__main__":
  tf.test.main()
