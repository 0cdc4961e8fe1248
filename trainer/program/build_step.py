"""A run's step and evaluator from its configs: model, AdamW, loss scale, augmentations and objective."""

from typing import Optional

import numpy as np

from common import checks
from input import pipeline
import ops
from trainer import loss_scale as loss_scale_lib
from trainer import optim
from trainer import step as step_lib
from trainer.evaluation import evaluator as evaluator_lib
from trainer.models import card as card_lib
from trainer.program.config import configs as configs_lib
from trainer.program.config import data as data_config
from trainer.program.config import optimization as optimization_config
from trainer.program.config import run as run_config


def _schedule(opt: optimization_config.OptimizationConfig,
              train_steps: int) -> optim.Schedule:
  if opt.schedule == "constant":
    return optim.constant(opt.learning_rate)
  with checks.renamed(peak="learning_rate", total_steps="train_steps",
                      final_fraction="final_lr_fraction"):
    return optim.warmup_cosine(opt.learning_rate, warmup_steps=opt.warmup_steps,
                               total_steps=train_steps,
                               final_fraction=opt.final_lr_fraction)


def _augmentations(data: data_config.DataConfig, sample_rate: int, rirs: Optional[np.ndarray]):
  """`(mix or None, on the device or None, host reverb or None)`."""
  mix = None
  if data.mixing:
    with checks.renamed(early_ms="early_reflections_ms"):
      mix = ops.Mix(sample_rate=sample_rate, snr_db=data.snr_db,
                    speech_level_db=data.speech_level_db, rir_proba=data.rir_proba, rirs=rirs,
                    early_ms=data.early_reflections_ms,
                    second_noise_proba=data.second_noise_proba, clip_proba=data.clip_proba,
                    band_limit_proba=data.band_limit_proba)
  with checks.renamed(proba="reverb_proba", keep_clean="reverb_keep_clean"):
    reverb = ops.RevEcho(sample_rate=sample_rate, proba=data.reverb_proba,
                         keep_clean=data.reverb_keep_clean) if data.reverb != "off" else None
  with checks.renamed(proba="remix_proba"):
    remix = ops.Remix(proba=data.remix_proba)
  on_device = [remix] if remix.proba > 0 else []
  on_device += [reverb] if data.reverb == "device" else []
  return (mix, ops.chain(*on_device) if on_device else None,
          reverb if data.reverb == "host" else None)


def train_step(configs: configs_lib.Configs, strategy, card: card_lib.ModelCard,
                     rirs: Optional[np.ndarray] = None):
  """Model, AdamW, loss scale, mix, augmentations and loss under `strategy` (`rirs`: the
  mix's room responses); returns `(train_step, loss_fn, host reverb or None)`."""
  run, opt = configs.run, configs.optimization
  with strategy.scope():
    model = card.build()
    optimizer = optim.AdamW(_schedule(opt, run.train_steps), beta_1=opt.beta_1, beta_2=opt.beta_2,
                            weight_decay=opt.weight_decay)
    with checks.renamed(initial="initial_loss_scale",
                        growth_interval="loss_scale_growth_interval"):
      loss_scale = loss_scale_lib.for_precision(
          opt.loss_scale, opt.precision, initial=opt.initial_loss_scale,
          growth_interval=opt.loss_scale_growth_interval)
    ema = (optim.ExponentialMovingAverage(opt.ema_decay, warmup=opt.ema_warmup)
           if opt.ema_decay else None)
  mix, on_device, host_reverb = _augmentations(configs.data, card.sample_rate, rirs)
  loss_fn = configs.model.loss(card.sample_rate)
  train_step = step_lib.make_train_step(
      model, loss_fn, optimizer, strategy, global_batch_size=run.global_batch_size,
      loss_scale=loss_scale, precision=opt.precision, augment=on_device,
      clip_norm=opt.clip_norm, steps_per_loop=run.steps_per_loop,
      jit_compile=run.jit_compile == "on" or (
          run.jit_compile == "auto" and "GPU" in strategy.extended.worker_devices[0]),
      seed=run.seed, accumulate_steps=run.accumulate_steps, ema=ema, mix=mix)
  return train_step, loss_fn, host_reverb


def evaluator(run: run_config.RunConfig, opt: optimization_config.OptimizationConfig,
              strategy, model, loss_fn, manifest) -> Optional[evaluator_lib.Evaluator]:
  if manifest is None:
    return None
  return evaluator_lib.Evaluator(
      strategy, model, loss_fn,
      pipeline.distribute(strategy, pipeline.make_eval_dataset_fn(
          manifest, global_batch_size=run.global_batch_size)),
      sample_rate=manifest.sample_rate,
      precision_dtype=step_lib.compute_dtype(opt.precision),
      perceptual_examples=run.eval_perceptual_examples)
