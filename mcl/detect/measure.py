"""`mcl hwd detect --measure`: short OpenCL benchmarks for what no query gives.

- copy bandwidth of device memory: a float4 copy kernel over buffers several times the
  last-level cache, bytes read plus bytes written over the best time of `repeat`;
- the float32 FMA peak: independent chains of fused multiply-adds in every work-item,
  vectors of the device's native float width (a CPU's SIMD lanes, one float on a GPU);
- host<->device bandwidth (GPUs only: a CPU device shares the host's memory): copies
  between a pinned host buffer and a device buffer, each direction.

Every figure is the best of `repeat` timed runs after one warm-up, timed with OpenCL
profiling events, so the description's roofs are what the device reached, not less.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from mcl.detect.generate import Measurements

CHAINS = 12  # independent FMA chains per work-item: more than latency x pipes on CPUs/GPUs

COPY_SOURCE = """
__kernel void copy4(__global const float4 *src, __global float4 *dst) {
    size_t i = get_global_id(0);
    dst[i] = src[i];
}
"""

FMA_SOURCE = """
__kernel void fma_chains(__global float *out, float b, float c, int iters) {
    VT x = (VT)((float)get_global_id(0) * 1e-7f);
""" + "".join(f"    VT a{k} = x + {k}.0f;\n" for k in range(CHAINS)) + """
    for (int i = 0; i < iters; ++i) {
""" + "".join(f"        a{k} = fma(a{k}, (VT)(b), (VT)(c));\n" for k in range(CHAINS)) + """
    }
    VT s = """ + " + ".join(f"a{k}" for k in range(CHAINS)) + """;
    out[get_global_id(0)] = SUM(s);
}
"""


def _sum_macro(width: int) -> str:
    if width == 1:
        return "(v)"
    names = "0123456789abcdef"[:width]
    return "(" + " + ".join(f"(v).s{c}" for c in names) + ")"


def best_time(run: Any, repeat: int) -> float:
    """The shortest of `repeat` runs (seconds) after one warm-up; `run()` returns its
    OpenCL event."""
    run().wait()
    times = []
    for _ in range(repeat):
        event = run()
        event.wait()
        times.append((event.profile.end - event.profile.start) * 1e-9)
    return min(times)


def measure(device: Any, query: dict[str, Any], repeat: int = 5,
            copy_bytes: int | None = None, fma_seconds: float = 0.2) -> Measurements:
    """Run the benchmarks on `device` (a pyopencl device); `query` is its query (the
    device type and vector width choose the sizes)."""
    import pyopencl as cl

    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    ocl = query.get("opencl") or {}
    kind = ocl.get("type", "cpu")
    notes: dict[str, str] = {}

    # Several times the last-level cache, and at most an eighth of device memory.
    cache = max([int(c.get("size", 0)) * int(c.get("instances", 1))
                 for c in (query.get("host") or {}).get("caches", [])]
                + [int(ocl.get("global_mem_cache_size", 0)),
                   int((query.get("cuda") or {}).get("L2_CACHE_SIZE", 0))])
    floor = (256 if kind == "gpu" else 64) << 20  # a GPU needs more bytes in flight
    size = copy_bytes or min(max(8 * cache, floor), int(ocl.get("global_mem_size", 1 << 30)) // 8)
    size -= size % (16 * 1024)
    program = cl.Program(ctx, COPY_SOURCE).build()
    src = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, size)
    dst = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, size)
    cl.enqueue_fill_buffer(queue, src, np.float32(1), 0, size).wait()
    kernel = cl.Kernel(program, "copy4")
    kernel.set_args(src, dst)
    seconds = best_time(lambda: cl.enqueue_nd_range_kernel(queue, kernel, (size // 16,), None),
                    repeat)
    copy = 2 * size / seconds
    notes["copy"] = f"OpenCL float4 copy of {size >> 20} MiB, read + written, best of {repeat}"

    width = 1 if kind == "gpu" else int(ocl.get("native_vector_width_float") or 1)
    width = width if width in (1, 2, 4, 8, 16) else 1
    if width > 8 and _bundled_pocl(device):
        # The PoCL that comes with mcl (a generic x86-64 build) compiles float16 code to no
        # kernel at all, and the failed program aborts the process when it is released.
        width = 8
        notes["fma_width"] = "float8 vectors: the bundled PoCL builds no float16 kernel"
    vt = "float" if width == 1 else f"float{width}"
    defines = f"#define VT {vt}\n#define SUM(v) {_sum_macro(width)}\n"
    program = cl.Program(ctx, defines + FMA_SOURCE).build()
    units = int(ocl.get("max_compute_units") or 1)
    items = units * (4096 if kind == "gpu" else 8)
    out = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, items * 4)
    kernel = cl.Kernel(program, "fma_chains")
    local = None if kind == "gpu" else (1,)
    iters = 64
    kernel.set_args(out, np.float32(0.999999), np.float32(1e-6), np.int32(iters))
    cl.enqueue_nd_range_kernel(queue, kernel, (items,), local).wait()  # compiles on PoCL
    while True:  # grow the loop until one run takes about fma_seconds / 4
        kernel.set_args(out, np.float32(0.999999), np.float32(1e-6), np.int32(iters))
        start = time.perf_counter()
        cl.enqueue_nd_range_kernel(queue, kernel, (items,), local).wait()
        if time.perf_counter() - start > fma_seconds / 4 or iters > 1 << 26:
            break
        iters *= 4
    seconds = best_time(lambda: cl.enqueue_nd_range_kernel(queue, kernel, (items,), local), repeat)
    fma = items * iters * CHAINS * width * 2 / seconds
    notes["fma"] = (f"{items} work-items x {CHAINS} chains of {iters} {vt} FMAs, best of "
                    f"{repeat}")

    to_device = from_device = None
    if kind == "gpu":
        to_device, from_device = _transfers(ctx, queue, min(size, 256 << 20), repeat)
        notes["transfer"] = (f"{min(size, 256 << 20) >> 20} MiB between a pinned host buffer "
                             f"and device memory, best of {repeat}")
    return Measurements(copy, fma, to_device, from_device, notes)


def _transfers(ctx: Any, queue: Any, size: int, repeat: int) -> tuple[float, float]:
    import importlib

    cl: Any = importlib.import_module("pyopencl")  # its stubs reject map flags as ints

    pinned = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR, size)
    host, _ = cl.enqueue_map_buffer(queue, pinned, cl.map_flags.READ | cl.map_flags.WRITE, 0,
                                    (size,), np.uint8)
    device = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, size)
    to_device = size / best_time(lambda: cl.enqueue_copy(queue, device, host), repeat)
    from_device = size / best_time(lambda: cl.enqueue_copy(queue, host, device), repeat)
    return to_device, from_device


def _bundled_pocl(device: Any) -> bool:
    from mcl.backends.opencl.bundled_pocl import bundled_platform_handles

    try:
        return int(device.platform.int_ptr) in bundled_platform_handles()
    except AttributeError:  # a stand-in device of the tests
        return False
