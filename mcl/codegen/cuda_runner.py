"""The old name of mcl.backends.cuda.runner (the CUDA backend's driver-API runner),
for the scripts, benchmarks and tests that import it from here: this module is that
one."""

import sys

from mcl.backends.cuda import runner as _moved
from mcl.backends.cuda.runner import *  # noqa: F403 - the names, for type checkers

sys.modules[__name__] = _moved
