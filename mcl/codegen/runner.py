"""The old name of mcl.backends.opencl.runner (the OpenCL backend's pyopencl runner),
for the scripts, benchmarks and tests that import it from here: this module is that
one."""

import sys

from mcl.backends.opencl import runner as _moved
from mcl.backends.opencl.runner import *  # noqa: F403 - the names, for type checkers

sys.modules[__name__] = _moved
