"""The old name of mcl.backends.cuda.cubin (the CUDA backend's cubin reader),
for the scripts, benchmarks and tests that import it from here: this module is that
one."""

import sys

from mcl.backends.cuda import cubin as _moved
from mcl.backends.cuda.cubin import *  # noqa: F403 - the names, for type checkers

sys.modules[__name__] = _moved
