"""The old name of mcl.backends.opencl.bundled_pocl (recognising the bundled PoCL),
for the scripts, benchmarks and tests that import it from here: this module is that
one."""

import sys

from mcl.backends.opencl import bundled_pocl as _moved
from mcl.backends.opencl.bundled_pocl import *  # noqa: F403 - the names, for type checkers

sys.modules[__name__] = _moved
