"""The TensorFlow versions this library is tested with, one clear error where none is installed, and commands that print their own lines rather than TensorFlow's start-up logs."""

import functools
import importlib.util
import os
import sys
import warnings

# The lowest and highest TensorFlow minor versions CI tests (.ci/floor.txt, .ci/ceiling.txt);
# setup.cfg's [cpu] and [and-cuda] extras ask for this range.
TESTED = ((2, 17), (2, 21))
INSTALL = ("pip install 'denoise-train[cpu]' (CPU only) or 'denoise-train[and-cuda]' "
           "(NVIDIA GPUs), or any tensorflow / tensorflow-cpu {low}-{high}")


def _minor(version: str):
  return tuple(int(part) for part in version.split(".")[:2])


def _named(minor) -> str:
  return ".".join(map(str, minor))


# A command's flag that keeps TensorFlow's C++ logs (absl defines it in common.cli).
TENSORFLOW_LOGS_FLAG = "--tensorflow_logs"


def quiet_commands() -> None:
  """Before TensorFlow loads in one of this project's commands (`python -m trainer.main`,
  `-m input.prepare`, ...; the package is imported while sys.argv[0] is still "-m"), leaves
  out TensorFlow's C++ info and warning lines (CPU features, GPU libraries, rendezvous) so
  the command's own lines are what it prints, unless TF_CPP_MIN_LOG_LEVEL is set or
  --tensorflow_logs is passed. Library use (research code, tests) is left as it is.

  A multi-worker process (TF_CONFIG set) leaves out the C++ error lines too: when
  a peer is lost, its collectives and coordination service print the same
  failure many times over, and the command ends with one line that names it."""
  if sys.argv[:1] == ["-m"] and TENSORFLOW_LOGS_FLAG not in sys.argv:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3" if os.environ.get("TF_CONFIG") else "2")


@functools.lru_cache(maxsize=None)
def require_tensorflow() -> None:
  """Raises ImportError, saying what to install, if TensorFlow is missing; warns once if its
  version lies outside the tested range (it may still work). Quiets it first in a command
  (`quiet_commands`)."""
  quiet_commands()
  low, high = (_named(minor) for minor in TESTED)
  if importlib.util.find_spec("tensorflow") is None:
    raise ImportError("denoise-train needs TensorFlow, and none is installed: "
                      + INSTALL.format(low=low, high=high) + ".")
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if not TESTED[0] <= _minor(tf.__version__) <= TESTED[1]:
    warnings.warn(f"TensorFlow {tf.__version__} is outside the range denoise-train is tested "
                  f"with ({low}-{high}); if something fails, install one in that range.",
                  stacklevel=2)
