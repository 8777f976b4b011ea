"""How much memory a run needs, estimated before anything is allocated (`mcl run` at the
paper's sizes): the kernel's arrays from their declared shapes and the run's sizes, the
host's share (inputs, the float64 reference and the error bounds) and the device's
(one buffer per array). A run that cannot fit is an error with the figures, not a
MemoryError or a driver's out-of-resources failure halfway through."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

from mcl.diagnostics import MclError, error

# Host memory per byte of kernel data: the inputs themselves, the reference's float64
# copies of them, the absolute-value run for the error bounds, the expected outputs and
# their bounds (measured: spmv at 2·10⁷ non-zeros peaks below 8x, gesummv near 4x).
HOST_FACTOR = 5
# Without a comparison: the inputs and a copy of each output read back.
HOST_FACTOR_UNCHECKED = 2


def array_bytes(function: Any, sizes: Mapping[str, int]) -> dict[str, int]:
    """Bytes of each array parameter of `function` (an MCPL ast.Function) at `sizes`;
    arrays whose shape needs more than the sizes are left out."""
    from mcl.codegen.c_names import PRIMITIVES, byte_size
    from mcl.codegen.host_eval import Number, evaluate
    from mcl.mcpl import ast

    env: dict[str, Number] = {k: int(v) for k, v in sizes.items()}
    found: dict[str, int] = {}
    for p in function.params:
        t = p.type
        if not isinstance(t, ast.ArrayType) or not isinstance(t.element, ast.Prim) \
                or t.element.name not in PRIMITIVES:
            continue
        try:
            count = math.prod(int(evaluate(d, env)) for group in t.dims for d in group)
        except MclError:
            continue
        found[p.name] = max(count, 0) * byte_size(t.element.name)
    return found


def host_available() -> int | None:
    """Bytes of memory the host can still give (Linux MemAvailable), or None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def gib(n: float) -> str:
    return f"{n / 1024**3:.2f} GiB" if n >= 1024**3 else f"{n / 1024**2:.1f} MiB"


def check_footprint(function: Any, sizes: Mapping[str, int], device: Any = None,
                    available: int | None = None, verify: bool = True,
                    backend: str | None = None) -> dict[str, int]:
    """The arrays' bytes; a `run-memory` error when the host (HOST_FACTOR x the arrays,
    HOST_FACTOR_UNCHECKED without `verify`) or `device`, a device of `backend` (default:
    mcl.backends' DEFAULT_BACKEND; every array a buffer, none above its largest
    allocation), cannot hold them. Every backend's device gives its memory under OpenCL's
    names, `global_mem_size` and `max_mem_alloc_size`. `available` overrides the host's
    free memory (tests)."""
    arrays = array_bytes(function, sizes)
    total = sum(arrays.values())
    largest = max(arrays, key=lambda k: arrays[k], default=None)
    where = " ".join(f"{k}={v}" for k, v in sizes.items())
    detail = ", ".join(f"{k} {gib(v)}" for k, v in sorted(arrays.items(), key=lambda kv: -kv[1]))
    hint = "choose smaller sizes with -D"
    free = host_available() if available is None else available
    factor = HOST_FACTOR if verify else HOST_FACTOR_UNCHECKED
    if free is not None and factor * total > free:
        why = "the float64 reference and the error bounds" if verify else "the outputs read back"
        raise MclError(error(
            "run-memory",
            f"{function.name} at {where} has {gib(total)} of arrays ({detail}); with the "
            f"inputs, {why} the host needs about {gib(factor * total)}, and has "
            f"{gib(free)} available", None, hint=hint))
    if device is not None and largest is not None:
        from mcl.backends import DEFAULT_BACKEND, get_backend

        describe = get_backend(backend or DEFAULT_BACKEND).describe
        if total > device.global_mem_size:
            raise MclError(error(
                "run-memory",
                f"{function.name} at {where} needs {gib(total)} of device buffers ({detail}); "
                f"{describe(device)} has {gib(device.global_mem_size)}", None, hint=hint))
        if arrays[largest] > device.max_mem_alloc_size:
            raise MclError(error(
                "run-memory",
                f"array '{largest}' of {function.name} at {where} needs a buffer of "
                f"{gib(arrays[largest])}; {describe(device)} allocates at most "
                f"{gib(device.max_mem_alloc_size)} at once", None, hint=hint))
    return arrays
