"""Accelerator-side audio ops (XLA-compilable TensorFlow): mixing, reverb, remix, stateless draws, spectral helpers, the kept input's filters and one frame's STFT for stream steps."""

from common import requirements

requirements.require_tensorflow()

# pylint: disable=g-import-not-at-top,g-bad-import-order
from ops import mix
from ops import spectral
from ops import stateless
from ops.mix import Mix
from ops.mix import MixDraws
from ops.remix import Remix
from ops.remix import chain
from ops.reverb import RevEcho
from ops.reverb import RevEchoParams
from ops.reverb import apply_ir
from ops.reverb import rev_echo
from ops.reverb import rev_echo_bounds
from ops.reverb import rev_echo_ir
