"""The export command: a trained run as a SavedModel, or a causal model's stream step as TFLite (the work is trainer.serving.saved_model's and trainer.serving.tflite's).

Run: python -m trainer.export --model_dir=runs/cpu --output=exported/cpu
     python -m trainer.export --model_dir=runs/causal --format=tflite --output=exported/causal.tflite
     python -m trainer.export --model_dir=runs/causal --format=tflite --quantize=dynamic --output=exported/causal_int8.tflite
"""

from absl import app
from absl import flags

from common import cli
from ops import kept_input
from trainer import run_dir
from trainer.serving import kept_input_flags
from trainer.serving import saved_model
from trainer.serving import tflite

FLAGS = flags.FLAGS


def main(argv):
  del argv
  write, options = saved_model.export, {}
  if FLAGS.format == "tflite":
    write, options = tflite.export, dict(quantize=FLAGS.quantize)
  with cli.one_line_errors("trainer.export", run_dir.CheckpointError):
    if FLAGS.format != "tflite" and FLAGS.quantize != "none":
      raise ValueError(f"--quantize={FLAGS.quantize} applies to --format=tflite only.")
    path = write(FLAGS.model_dir, FLAGS.output, overwrite=FLAGS.overwrite,
                 weights=FLAGS.weights, checkpoint=FLAGS.checkpoint,
                 keep_input=FLAGS.keep_input, keep_presence=FLAGS.keep_presence, **options)
  print(f"Exported to {path}")


if __name__ == "__main__":
  flags.DEFINE_string("model_dir", None, "A trainer.main model_dir.")
  flags.DEFINE_string("output", None, "SavedModel directory to write (new or empty), or with "
                      "--format=tflite the .tflite file.")
  flags.DEFINE_enum("format", "saved_model", ["saved_model", "tflite"], "saved_model: the "
                    "denoise signatures (and stream_step for causal models); tflite: the "
                    "stream step of a causal model (mask or U-Net), builtin ops only "
                    "(trainer.serving.tflite).")
  flags.DEFINE_enum("quantize", "none", list(tflite.QUANTIZE), "--format=tflite: none "
                    "(float32) or dynamic (int8 weights, activations quantised on the fly; "
                    "for models whose FFT length is a power of two, e.g. 16 kHz). Its "
                    "size, speed and precision: BENCHMARKS.md.")
  flags.DEFINE_bool("overwrite", False, "Replace --output if it holds an earlier export.")
  flags.DEFINE_enum("weights", "auto", list(run_dir.WEIGHTS), "ema: the run's moving average of "
                    "the weights (--ema_decay); raw: the trained weights; auto: ema if the "
                    "run kept one.")
  flags.DEFINE_string("checkpoint", "latest", "latest, best (model_dir/best/, kept by "
                      "--keep_best) or a checkpoint path (runs/x/checkpoints/ckpt-2000).")
  kept_input_flags.define(kept_input.KEEP, kept_input.PRESENCE_KEEP)
  flags.mark_flags_as_required(["model_dir", "output"])
  app.run(main, flags_parser=cli.parse_flags)
