"""Run generated C with OpenMP in this process: the module compiled to a shared library
(build.py), its kernels called through ctypes on the numpy arrays of the run.

The flow is the runners' (mcl.codegen.session.SessionBase: arrays to buffers, the host
program with its launches, results back); a "buffer" here is a host array the kernels
work on, so a copy "to the device" is a copy into it (every repetition starts from the
inputs), and a kernel's time is the wall time of its call (or what `clock` measures:
a benchmark on a shared machine may time one thread by its CPU time instead).
"""

from __future__ import annotations

import ctypes
import os
import platform
import time
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from mcl.backends.openmp.build import build_library
from mcl.backends.openmp.prelude import START_FUNCTION
from mcl.codegen.host_eval import Number
from mcl.codegen.plan import GeneratedModule, KernelPlan, ParamPlan
from mcl.codegen.session import SessionBase, ndrange_of
from mcl.diagnostics import MclError, error

# The C type of a scalar argument, by MCPL type: kernel parameters (bool and byte are
# bytes there, as in buffers) and host variables (bool is C's bool).
_PARAMETER_TYPES: dict[str, Any] = {"int": ctypes.c_int, "float": ctypes.c_float,
                                    "double": ctypes.c_double, "bool": ctypes.c_ubyte,
                                    "byte": ctypes.c_ubyte}
_HOST_TYPES = {**_PARAMETER_TYPES, "bool": ctypes.c_bool}


@cache
def processor_name() -> str:
    """The CPU's model name (Linux: /proc/cpuinfo), else what Python knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "CPU"


def threads() -> int:
    """The threads an OpenMP parallel loop gets: $OMP_NUM_THREADS, else one per CPU this
    process may run on (what libgomp counts: its affinity mask, which a container or
    `taskset` may make smaller than the machine's CPUs)."""
    value = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if value.isdigit() and int(value) > 0:
        return int(value)
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def host_device() -> str:
    count = threads()
    return f"{processor_name()} (OpenMP, {count} thread{'' if count == 1 else 's'})"


class OpenMPSession(SessionBase):
    """A generated module compiled for this CPU; run any of its functions on it."""

    def __init__(self, generated: GeneratedModule, options: tuple[str, ...] = ()):
        self.generated = generated
        self.options = tuple(options)
        self.compiled_now = False  # whether a build of this session ran the compiler
        self.programs = {"": self._build(())}
        self.kernels: dict[tuple[str, str], Any] = {}
        # What a kernel's time is read from: wall time, or for a run on one thread on a
        # machine that others load, time.thread_time (the calling thread runs the
        # kernel then, and its CPU time leaves out the time the system gives others).
        self.clock: Callable[[], float] = time.perf_counter

    def _build(self, options: tuple[str, ...]) -> Any:
        built = build_library(self.generated.source, (*self.options, *options))
        self.compiled_now |= not built.cached
        library = ctypes.CDLL(str(built.path))
        getattr(library, START_FUNCTION)()
        return library

    def device_name(self) -> str:
        return host_device()

    def _buffer(self, a: np.ndarray, p: ParamPlan) -> np.ndarray:
        return np.empty_like(a)

    def _upload(self, buffer: np.ndarray, a: np.ndarray) -> float:
        start = time.perf_counter()
        np.copyto(buffer, a)
        return time.perf_counter() - start

    def _download(self, out: np.ndarray, buffer: np.ndarray) -> float:
        start = time.perf_counter()
        np.copyto(out, buffer)
        return time.perf_counter() - start

    def _finish(self) -> None:
        """Every call has returned when it is timed: nothing runs in the background."""

    def _seconds(self, handles: list[Any]) -> float:
        return float(sum(handles))

    def _kernel(self, k: KernelPlan, env: dict[str, Number]) -> Any:
        def find(library: Any) -> Any:
            function = getattr(library, k.name)
            function.restype = None
            function.argtypes = [*(self._c_type(a.kind, a.element, a.is_struct, k)
                                   for a in k.args),
                                 *[ctypes.c_int] * (2 * len(k.groups))]
            return function

        return self._cached_kernel(k, env, find)

    @staticmethod
    def _c_type(kind: str, element: str, is_struct: bool, k: KernelPlan) -> Any:
        if kind == "buffer":
            return ctypes.c_void_p
        if is_struct:
            raise MclError(error(
                "run-openmp-struct", f"kernel {k.name} takes a value of type {element}; "
                "the OpenMP runner passes arrays and scalars of primitive types only",
                k.span, hint="pass the value in a one-element array"))
        return (_PARAMETER_TYPES if kind == "scalar" else _HOST_TYPES)[element]

    def _launch(self, k: KernelPlan, env: dict[str, Number], buffers: dict[str, Any],
                args: dict[str, Any]) -> float | None:
        groups, local = ndrange_of(k, env)
        if any(n <= 0 for n in groups + local):
            return None  # a foreach with no units: nothing to run
        kernel = self._kernel(k, env)
        values: list[Any] = []
        for a in k.args:
            if a.kind == "buffer":
                values.append(buffers[a.name].ctypes.data)
            else:
                values.append(env[a.name])
        start = self.clock()
        kernel(*values, *groups, *local)
        return self.clock() - start
