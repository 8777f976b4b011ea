"""When a process may fork and let the child carry on with what it inherited.

A forked child holds only the thread that forked it. A lock that another thread held at
the fork is never released in the child, and a runtime that works through threads of its
own (an OpenCL runtime: PoCL runs kernels and compiles on worker threads) has lost them:
a child that waits on either waits for ever. Both the tuner (which forks workers to
rank configurations) and the fuzzer (which forks a child per command) ask here.
"""

from __future__ import annotations

import os
import sys
import threading


def single_threaded() -> bool:
    """Whether this process runs one thread (Linux: /proc/self/task; elsewhere Python's
    own count)."""
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return threading.active_count() == 1


def opencl_loaded() -> bool:
    """Whether an OpenCL runtime may have started in this process: pyopencl's native part
    is loaded (the runtime starts with the first platform query and never stops)."""
    return "pyopencl._cl" in sys.modules
