"""The model card: which architecture, with which arguments, at which sample rate - it builds the model and is model_dir/config.json.

    card = ModelCard.create("mask", sample_rate=16000, hidden=64)
    model = card.build()
    card.write(model_dir)                 # once; later runs check against it
    ModelCard.read(model_dir).build()     # export, denoise

Every architecture's shape arguments and their defaults come from its
constructor's signature, so the program's model flags, config.json and the
models never disagree.
"""

import dataclasses
import inspect
import os
from typing import Any, Dict, Mapping

import tensorflow as tf

from common import checks
from common import files
from trainer.models import mask
from trainer.models import unet

CONFIG_FILE = "config.json"
ARCHITECTURES = {"mask": mask.MaskDenoiser, "unet": unet.UNet}
# Constructor arguments that are not the model's shape.
_NOT_SHAPE = ("sample_rate", "seed", "name")
# Arguments added after cards were written, as the models of those cards had them.
_BEFORE_ADDED = {"mask": {"level": "log", "level_seconds": 0.0},
                 "unet": {"level_seconds": 0.0, "attention_seconds": 0.0}}


def shape_arguments(architecture: str) -> Dict[str, Any]:
  """`{argument: default}` of the architecture's shape (its constructor's keyword arguments)."""
  checks.one_of("architecture", architecture, sorted(ARCHITECTURES))
  parameters = inspect.signature(ARCHITECTURES[architecture]).parameters.values()
  return {p.name: p.default for p in parameters if p.name not in _NOT_SHAPE}


@dataclasses.dataclass(frozen=True)
class ModelCard:
  """A frozen record of a model: `architecture`, its complete shape `arguments`, the
  `sample_rate` it runs at and the initialisation `seed`."""
  architecture: str
  arguments: Mapping[str, Any]
  sample_rate: int
  seed: int = 0

  @classmethod
  def create(cls, architecture: str, *, sample_rate: int, seed: int = 0,
             **arguments) -> "ModelCard":
    """A card with every shape argument not given at the architecture's default.

    Raises:
      ArgumentError: an unknown architecture, or an argument it does not take.
    """
    defaults = shape_arguments(architecture)
    for name in arguments:
      if name not in defaults:
        raise checks.ArgumentError(name, arguments[name], f"is not an argument of the "
                                   f"{architecture} model ({', '.join(defaults)}).")
    return cls(architecture, dict(defaults, **arguments), int(sample_rate), int(seed))

  def build(self) -> tf.Module:
    """The model, freshly initialised from `seed` (raises ArgumentError for a bad shape)."""
    return ARCHITECTURES[self.architecture](**self.arguments, sample_rate=self.sample_rate,
                                            seed=self.seed)

  def to_json(self) -> dict:
    return dict(architecture=self.architecture, model=dict(self.arguments),
                sample_rate=self.sample_rate, seed=self.seed)

  @classmethod
  def from_json(cls, value: dict, *, source: str = "the model card") -> "ModelCard":
    """The card `to_json` wrote (one written before "architecture" existed is a U-Net; an
    argument added since takes the value the card's model had)."""
    try:
      architecture = value.get("architecture", "unet")
      return cls.create(architecture, sample_rate=value["sample_rate"],
                        seed=value.get("seed", 0),
                        **dict(_BEFORE_ADDED.get(architecture, {}), **value["model"]))
    except (KeyError, TypeError, AttributeError, checks.ArgumentError) as e:
      raise ValueError(f"{source} is not a model card ({type(e).__name__}: {e}); it needs "
                       '"architecture", "model" (its arguments) and "sample_rate".') from None

  @classmethod
  def read(cls, model_dir: str) -> "ModelCard":
    """The card of a trainer.main model_dir.

    Raises:
      FileNotFoundError: the model_dir has no config.json.
      ValueError: config.json is not valid JSON or not a model card (naming it).
    """
    path = os.path.join(model_dir, CONFIG_FILE)
    value = files.read_json(path, fix="restore it from a copy, or start a new model_dir.")
    if value is None:
      raise FileNotFoundError(f"{path} is missing: is {model_dir} a trainer.main model_dir?")
    return cls.from_json(value, source=path)

  @classmethod
  def stored(cls, model_dir: str):
    """The card in `model_dir`, or None if it has none yet."""
    if not tf.io.gfile.exists(os.path.join(model_dir, CONFIG_FILE)):
      return None
    return cls.read(model_dir)

  def check(self, model_dir: str):
    """Raises ValueError if `model_dir` holds a card of another model, naming what differs."""
    stored = self.stored(model_dir)
    if stored is None or stored == self:
      return
    old, new = stored.flat(), self.flat()
    differs = sorted(name for name in set(old) | set(new) if old.get(name) != new.get(name))
    raise ValueError(
        f"{model_dir} holds a model trained with "
        f"{', '.join(f'--{n}={old.get(n)}' for n in differs)}, but the flags say "
        f"{', '.join(f'--{n}={new.get(n)}' for n in differs)}. Use the run's model flags, or "
        "a new --model_dir.")

  def flat(self) -> dict:
    """The card as flag values: architecture, each model argument, sample_rate and seed."""
    return dict(architecture=self.architecture, **self.arguments,
                sample_rate=self.sample_rate, seed=self.seed)

  def write(self, model_dir: str, *, replace: bool = False):
    """Records the card in `model_dir` unless it holds one already (or, with `replace`,
    whatever it holds: for a model_dir with no checkpoint, whose card describes nothing
    that was trained)."""
    if replace or self.stored(model_dir) is None:
      files.write_json(os.path.join(model_dir, CONFIG_FILE), self.to_json())
