"""The old name of mcl.backends.cuda.nvrtc (the CUDA backend's NVRTC compiler),
for the scripts, benchmarks and tests that import it from here: this module is that
one."""

import sys

from mcl.backends.cuda import nvrtc as _moved
from mcl.backends.cuda.nvrtc import *  # noqa: F403 - the names, for type checkers

sys.modules[__name__] = _moved
