"""The old name of mcl.backends.opencl.pocl_cache (PoCL's kernel cache),
for the scripts, benchmarks and tests that import it from here: this module is that
one."""

import sys

from mcl.backends.opencl import pocl_cache as _moved
from mcl.backends.opencl.pocl_cache import *  # noqa: F403 - the names, for type checkers

sys.modules[__name__] = _moved
