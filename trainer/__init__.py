"""The training library: the distributed step, the optimizer and loss scale at its top; models, evaluation, the outer loop and the program in sub-packages; the export and denoise tools."""

from common import requirements

requirements.require_tensorflow()
