"""`mcl hwd detect --measure`: short OpenCL benchmarks for what no query gives, each
repeated with its spread kept (mcl.detect.timing), within a time budget.

In order of what the description needs most (a step that would start past the budget is
left out and said so):

1. the float32 FMA peak (mcl.detect.bench_compute), interleaved with the vendor library's
   SGEMM (numpy's BLAS on a CPU, cuBLAS through PyTorch on an NVIDIA GPU): the compute
   roof is the larger of the two, with a warning where the kernel stays below the library;
2. device-memory read, write and copy bandwidth, each swept over work-group counts, and
   the library's copy of the same size (numpy's, PyTorch's) in the same run;
3. the cost of launching an empty kernel (on the device, and enqueue to finish);
4. load latencies by pointer chasing: L1, L2, (L3,) device memory and local memory;
5. read bandwidth of L1, L2 and local memory;
6. host<->device bandwidth (GPUs only: a CPU device shares the host's memory).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcl.detect.bench_compute import interleaved, numpy_gemm, peak_kernel, torch_gemm
from mcl.detect.bench_memory import MemoryBench, numpy_copy, torch_copy
from mcl.detect.measurements import Measurements
from mcl.detect.timing import Rate
from mcl.progress import Timings

BUDGET_S = 40.0  # no step starts later: the last may take a while on a loaded machine
LARGEST_L3 = 64 << 20  # a larger "L3" is a VM's report of the host's, not a cache to chase


@dataclass(frozen=True)
class Sizes:
    """What the benchmarks run over: `memory` bytes per device-memory buffer, `seconds`
    per sized kernel run, `repeat` timed runs of each."""

    memory: int
    seconds: float
    repeat: int
    chase: int  # bytes of the device-memory pointer chase


def default_sizes(query: dict[str, Any], repeat: int) -> Sizes:
    ocl = query.get("opencl") or {}
    gpu = ocl.get("type") == "gpu"
    cache = max([int(c.get("size", 0)) * int(c.get("instances", 1))
                 for c in (query.get("host") or {}).get("caches", []) if c["level"] <= 2]
                + [int((query.get("cuda") or {}).get("L2_CACHE_SIZE", 0))])
    limit = int(ocl.get("global_mem_size", 1 << 32)) // 8
    memory = min(max(8 * cache, 256 << 20), 1 << 30 if gpu else 256 << 20, limit)
    return Sizes(memory - memory % (1 << 20), 0.01 if gpu else 0.02, repeat,
                 min(256 << 20, limit))


def measure(device: Any, query: dict[str, Any], repeat: int = 5, sizes: Sizes | None = None,
            budget_s: float = BUDGET_S, timings: Timings | None = None,
            cuda_ordinal: int = 0) -> Measurements:
    """Run the benchmarks on `device` (a pyopencl device); `query` is its query,
    `cuda_ordinal` the device's CUDA index (for PyTorch's peers on an NVIDIA GPU)."""
    import pyopencl as cl

    sizes = sizes or default_sizes(query, repeat)
    timings = timings if timings is not None else Timings()
    start = time.perf_counter()
    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    ocl = query.get("opencl") or {}
    kind = "gpu" if ocl.get("type") == "gpu" else "cpu"
    units = int(ocl.get("max_compute_units") or 1)
    ordinal = cuda_ordinal
    rates: dict[str, Rate] = {}
    notes: dict[str, str] = {}
    warnings: list[str] = []
    done = [0]
    steps = 6 if kind == "gpu" else 5  # a CPU device has no transfers to measure

    def step(name: str, label: str, body: Callable[[], None]) -> None:
        done[0] += 1
        if time.perf_counter() - start > budget_s:
            notes[name] = f"not measured: the {budget_s:.0f} s budget was spent"
            return
        with timings.step(name, f"measuring {label} ({done[0]}/{steps})"):
            body()

    def compute() -> None:
        width = int(ocl.get("native_vector_width_float") or 1)
        peak = peak_kernel(cl, ctx, queue, kind, units, width, _max_width(device),
                           sizes.seconds)
        library = (numpy_gemm(sizes.seconds * 2) if kind == "cpu" else torch_gemm(ordinal))
        rates["fma"], gemm = interleaved(peak, library, sizes.repeat)
        notes["fma_candidates"] = peak.tried
        if gemm is not None:
            rates["gemm"] = gemm
            if gemm.value > rates["fma"].value:
                warnings.append(
                    f"the FMA peak kernel reached {rates['fma'].value / 1e9:,.1f} GFLOP/s, "
                    f"below the {gemm.value / 1e9:,.1f} GFLOP/s of {gemm.how}: the "
                    "description states the library's rate as the compute roof")

    bench: list[MemoryBench] = []

    def memory() -> None:
        bench.append(MemoryBench(cl, ctx, queue, kind, units, sizes.repeat))
        for name, swept in bench[0].device_memory(sizes.memory).items():
            rates[name] = swept.rate
        library = (numpy_copy(sizes.memory, sizes.repeat, units) if kind == "cpu"
                   else torch_copy(sizes.memory, ordinal, sizes.repeat))
        if library is not None:
            rates["library_copy"] = library

    def launch() -> None:
        rates["launch"], rates["launch_wall"] = bench[0].launch_overhead(4 * sizes.repeat + 1)

    def latencies() -> None:
        line = 128 if kind == "gpu" else int(ocl.get("global_mem_cacheline_size") or 64)
        for level, footprint in _levels(query, kind).items():
            rates[f"latency_{level}"] = bench[0].latency(footprint // 2, line, sizes.seconds)
        rates["latency_memory"] = bench[0].latency(sizes.chase, line, sizes.seconds)
        local = _local_size(ocl)
        if local:
            rates["latency_local"] = bench[0].latency(local, 4, sizes.seconds, local=True)

    def caches() -> None:
        levels = _levels(query, kind)
        for level in ("l1", "l2"):
            if level in levels:
                shared = kind == "gpu" and level == "l2"
                rates[level] = bench[0].cache(levels[level] // 2, not shared, sizes.seconds,
                                              "one slice per work-group" if not shared
                                              else "the slices rotating over the groups")
        local = _local_size(ocl)
        if local:
            rates["local"] = bench[0].local_memory(local, sizes.seconds)

    def transfers() -> None:
        up, down = bench[0].transfers(min(sizes.memory, 256 << 20))
        rates["to_device"], rates["from_device"] = up, down

    step("compute", "the FMA peak and the library's SGEMM", compute)
    step("memory", "device-memory read, write and copy bandwidth", memory)
    if bench:
        step("launch", "kernel-launch overhead", launch)
        step("latency", "load latencies (pointer chasing)", latencies)
        step("caches", "cache and local-memory bandwidth", caches)
        if kind == "gpu":
            step("transfers", "host<->device bandwidth", transfers)
    return _measurements(rates, notes, warnings)


def _measurements(rates: dict[str, Rate], notes: dict[str, str],
                  warnings: list[str]) -> Measurements:
    fma = max((rates[k].value for k in ("fma", "gemm") if k in rates), default=None)
    for key, rate in rates.items():
        notes.setdefault(key, rate.how)
    return Measurements(rates["copy"].value if "copy" in rates else None, fma,
                        rates["to_device"].value if "to_device" in rates else None,
                        rates["from_device"].value if "from_device" in rates else None,
                        notes, rates, tuple(warnings))


def _levels(query: dict[str, Any], kind: str) -> dict[str, int]:
    """Bytes of L1 and L2 (and L3) one unit sees: a CPU's per-core data caches from the
    host query; a GPU's L1 (32 kB: an SM keeps at least that of its L1 beside shared
    memory) and its L2."""
    if kind == "gpu":
        l2 = int((query.get("cuda") or {}).get("L2_CACHE_SIZE", 0)
                 or (query.get("opencl") or {}).get("global_mem_cache_size", 0))
        return {"l1": 32 << 10, **({"l2": l2} if l2 else {})}
    found = {}
    for cache in (query.get("host") or {}).get("caches", []):
        size = int(cache["size"])
        if cache["level"] == 3 and size > LARGEST_L3:
            continue
        found[f"l{cache['level']}"] = size
    return found


def _local_size(ocl: dict[str, Any]) -> int:
    """Bytes of local memory the local benchmarks use: half of it, at most 16 kB."""
    return min(int(ocl.get("local_mem_size") or 0) // 2, 16 << 10)


def _max_width(device: Any) -> int:
    """The widest float vector to build: the PoCL that comes with mcl (a generic x86-64
    build) compiles float16 code to no kernel at all, and the failed program aborts the
    process when it is released."""
    from mcl.backends.opencl.bundled_pocl import bundled_platform_handles

    try:
        return 8 if int(device.platform.int_ptr) in bundled_platform_handles() else 16
    except AttributeError:  # a stand-in device of the tests
        return 16
