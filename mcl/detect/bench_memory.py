"""Memory benchmarks of `mcl hwd detect --measure`: device-memory read, write and copy
bandwidth swept over work-group counts (as gpu-benches does: a bandwidth is only a roof
at the occupancy that reaches it), cache and local-memory bandwidth from repeated reads
of a slice that fits the level, load latencies by pointer chasing, the cost of launching
an empty kernel, and host<->device copies.

On a CPU every work-item walks a contiguous block (a core streams its own lines); on a
GPU the work-items of a group walk interleaved float4s (coalesced loads), groups
striding over the buffer.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from mcl.detect.timing import Rate, Spread, event_seconds, grow_until, wall_seconds
from mcl.detect.torch_peers import cuda_torch
from mcl.detect.torch_peers import event_seconds as torch_seconds

SOURCE = """
#ifdef CONTIGUOUS  /* a CPU: work-item w walks elements [w * count, (w + 1) * count) */
#define AT(j) (get_global_id(0) * count + (j))
#else              /* a GPU: the whole grid walks the buffer, one float4 per work-item */
#define AT(j) (get_global_id(0) + (size_t)(j) * get_global_size(0))
#endif
#ifdef NONTEMPORAL /* a CPU: stores that bypass the cache, as memcpy's (no read for ownership) */
#define STORE(p, v) __builtin_nontemporal_store((v), (p))
#else
#define STORE(p, v) (*(p) = (v))
#endif

/* Reads sum into 8 independent accumulators: one would wait out an add latency per load. */
#define SUM8(LOAD, j, step) \
    s0 += LOAD((j)); s1 += LOAD((j) + (step)); s2 += LOAD((j) + 2 * (step)); \
    s3 += LOAD((j) + 3 * (step)); s4 += LOAD((j) + 4 * (step)); s5 += LOAD((j) + 5 * (step)); \
    s6 += LOAD((j) + 6 * (step)); s7 += LOAD((j) + 7 * (step));
#define ZERO8 float4 s0 = (float4)(0.0f), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, \
    s7 = s0;
#define TOTAL8 (((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)))

__kernel void bw_read(__global const float4 *src, __global float *out, int count) {
    ZERO8
#define LOAD_SRC(j) src[AT(j)]
    for (int j = 0; j < count; j += 8) { SUM8(LOAD_SRC, j, 1) }
    float4 s = TOTAL8;
    out[get_global_id(0)] = s.x + s.y + s.z + s.w;
}

__kernel void bw_write(__global float4 *dst, int count) {
    float4 v = (float4)((float)get_global_id(0));
    for (int j = 0; j < count; ++j) STORE(&dst[AT(j)], v);
}

__kernel void bw_copy(__global const float4 *src, __global float4 *dst, int count) {
    for (int j = 0; j < count; ++j) STORE(&dst[AT(j)], src[AT(j)]);
}

/* Work-group g reads slice (g + r * rotate) % slices in round r: rotate 0 keeps each
   group on its own slice (a per-core / per-SM cache), 1 moves it on (a shared cache,
   the slices together fitting it). The group's work-items share the slice; a slice is
   a multiple of 8 x the group's size. */
__kernel void cache_read(__global const float4 *src, __global float *out, int slice,
                         int slices, int rounds, int rotate) {
    ZERO8
    int group = get_group_id(0), lid = get_local_id(0), lsize = get_local_size(0);
    for (int r = 0; r < rounds; ++r) {
        __global const float4 *p = src + ((group + r * rotate) % slices) * (size_t)slice;
#define LOAD_P(j) p[j]
        for (int j = lid; j < slice; j += 8 * lsize) { SUM8(LOAD_P, j, lsize) }
    }
    float4 s = TOTAL8;
    out[get_global_id(0)] = s.x + s.y + s.z + s.w;
}

__kernel void local_read(__global const float4 *src, __global float *out, int slice,
                         int rounds, __local float4 *buf) {
    int lid = get_local_id(0), lsize = get_local_size(0);
    for (int j = lid; j < slice; j += lsize) buf[j] = src[j];
    barrier(CLK_LOCAL_MEM_FENCE);
    ZERO8
#define LOAD_BUF(j) buf[j]
    for (int r = 0; r < rounds; ++r)
        for (int j = lid; j < slice; j += 8 * lsize) { SUM8(LOAD_BUF, j, lsize) }
    float4 s = TOTAL8;
    out[get_global_id(0)] = s.x + s.y + s.z + s.w;
}

/* LCG_CYCLE: line i points at line (a * i + c) mod n, n a power of two: with c odd and
   a - 1 a multiple of 4 this visits every line once per cycle (Hull-Dobell), in an order
   whose steps change every time, so no prefetcher runs ahead. Built on the device: no
   host array of the footprint's size to fill and copy. */
__kernel void chase_init(__global uint *next, uint n, uint stride) {
    uint i = get_global_id(0);
    next[i * stride] = ((1664525u * i + 1013904223u) & (n - 1)) * stride;
}

/* One work-item follows the cycle from `start`: every load waits for the one before. */
__kernel void chase(__global const uint *next, __global uint *out, int steps, uint start) {
    uint p = start;
    for (int i = 0; i < steps; ++i) p = next[p];
    out[0] = p;
}

__kernel void chase_local(__global const uint *next, __global uint *out, int n, int steps,
                          __local uint *buf) {
    for (int i = 0; i < n; ++i) buf[i] = next[i];
    uint p = 0;
    for (int i = 0; i < steps; ++i) p = buf[p];
    out[0] = p;
}

__kernel void empty(__global float *out) { }
"""


@dataclass(frozen=True)
class Swept:
    """The best of a sweep over work-group counts: `rate` at `groups`, `sweep` each
    count's rate in its one sweep run."""

    rate: Rate
    groups: int
    sweep: str


class MemoryBench:
    """The memory kernels of one device, built once."""

    def __init__(self, cl: Any, ctx: Any, queue: Any, kind: str, units: int,
                 repeat: int) -> None:
        self.cl, self.ctx, self.queue, self.kind = cl, ctx, queue, kind
        self.units, self.repeat = units, repeat
        self.local = 256 if kind == "gpu" else 1
        options = [] if kind == "gpu" else ["-DCONTIGUOUS", "-DNONTEMPORAL"]
        self.program = cl.Program(ctx, SOURCE).build(options=options)
        self.kernels = {k.function_name: k for k in self.program.all_kernels()}
        self.out = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4 * units * 64 * self.local)

    def _groups(self) -> list[int]:
        factors = (1, 2, 4, 8, 16, 32) if self.kind == "gpu" else (1, 2, 4)
        return [self.units * f for f in factors]

    def device_memory(self, size: int) -> dict[str, Swept]:
        """read, write and copy of `size` bytes (copy: `size` read and `size` written)."""
        cl = self.cl
        src = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, size)
        dst = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, size)
        cl.enqueue_fill_buffer(self.queue, src, np.float32(1), 0, size).wait()
        cl.enqueue_fill_buffer(self.queue, dst, np.float32(0), 0, size).wait()
        found = {}
        for name, args, passes in (("read", (src, self.out), 1), ("write", (dst,), 1),
                                   ("copy", (src, dst), 2)):
            found[name] = self._sweep(self.kernels[f"bw_{name}"], args, size // 16, passes,
                                      f"OpenCL float4 {name} of {size >> 20} MiB")
        return found

    def _sweep(self, kernel: Any, args: tuple[Any, ...], n4: int, passes: int,
               how: str) -> Swept:
        """`kernel` over the first float4s of `n4` that every work-item's share of 8 a
        step covers, at each work-group count; `passes` bytes moved per byte (copy: 2)."""
        cl = self.cl
        runs: dict[int, tuple[Callable[[], Any], int]] = {}
        rates = []
        for groups in self._groups():
            items = groups * self.local
            count = n4 // items // 8 * 8  # bw_read takes 8 float4 a step
            if count == 0:
                continue

            def run(kernel: Any = kernel, items: int = items, count: int = count) -> Any:
                kernel.set_args(*args, np.int32(count))
                return cl.enqueue_nd_range_kernel(self.queue, kernel, (items,), (self.local,))

            if not runs:
                run().wait()  # one warm-up: every count shares the compiled kernel
            moved = passes * count * items * 16
            runs[groups] = (run, moved)
            rates.append((moved / max(_event_time(run()), 1e-9), groups))
        best_groups = max(rates)[1]
        best_run, moved = runs[best_groups]
        spread = event_seconds(best_run, self.repeat, warm_up=False)
        sweep = ", ".join(f"{g}: {r / 1e9:,.1f}" for r, g in sorted(rates, key=lambda x: x[1]))
        return Swept(Rate.of_work(moved, spread, f"{how}, {best_groups} work-groups of "
                                  f"{self.local}; swept over work-groups (GB/s) {sweep}"),
                     best_groups, sweep)

    def cache(self, footprint: int, per_unit: bool, seconds: float, label: str) -> Rate:
        """Read bandwidth of a cache: `footprint` bytes, each unit's own slice of it
        (`per_unit`: an L1 or a CPU's L2) or all slices rotating over the groups."""
        cl = self.cl
        groups = self.units * (4 if self.kind == "gpu" else 1)
        sharing = groups // self.units if per_unit else groups  # groups on one copy of it
        step = 8 * self.local  # cache_read takes 8 float4 per work-item a step
        slice4 = max(footprint // 16 // sharing // step, 1) * step
        slices = groups
        src = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, slices * slice4 * 16)
        cl.enqueue_fill_buffer(self.queue, src, np.float32(1), 0, slices * slice4 * 16).wait()
        kernel = self.kernels["cache_read"]
        items = groups * self.local
        rotate = 0 if per_unit else 1

        def launch(rounds: int) -> Any:
            kernel.set_args(src, self.out, np.int32(slice4), np.int32(slices),
                            np.int32(rounds), np.int32(rotate))
            return cl.enqueue_nd_range_kernel(self.queue, kernel, (items,), (self.local,))

        rounds = grow_until(lambda r: _event_time(launch(r)), 4, seconds, 1 << 24)
        spread = event_seconds(lambda: launch(rounds), self.repeat)
        return Rate.of_work(float(groups * slice4 * 16 * rounds), spread,
                            f"OpenCL float4 reads, {rounds} rounds over {groups} slices of "
                            f"{slice4 * 16 >> 10} kB ({label})")

    def local_memory(self, size: int, seconds: float) -> Rate:
        """Read bandwidth of local memory: every group reads its `size`-byte buffer."""
        cl = self.cl
        groups = self.units * (4 if self.kind == "gpu" else 1)
        slice4 = size // 16
        local = max(1, min(self.local, slice4 // 8))  # 8 float4 per work-item a step
        src = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, size)
        cl.enqueue_fill_buffer(self.queue, src, np.float32(1), 0, size).wait()
        kernel = self.kernels["local_read"]
        items = groups * local

        def launch(rounds: int) -> Any:
            kernel.set_args(src, self.out, np.int32(slice4), np.int32(rounds),
                            cl.LocalMemory(size))
            return cl.enqueue_nd_range_kernel(self.queue, kernel, (items,), (local,))

        rounds = grow_until(lambda r: _event_time(launch(r)), 4, seconds, 1 << 24)
        spread = event_seconds(lambda: launch(rounds), self.repeat)
        return Rate.of_work(float(groups * size * rounds), spread,
                            f"OpenCL float4 reads of a {size >> 10} kB local buffer, "
                            f"{rounds} rounds in each of {groups} work-groups")

    def latency(self, footprint: int, line: int, seconds: float, local: bool = False) -> Rate:
        """Load-to-use latency (s) of a random cycle through `footprint` bytes, one load
        per `line` bytes (in local memory if `local`)."""
        cl = self.cl
        n = 1 << max(1, (footprint // line).bit_length() - 1)  # a power of two (LCG_CYCLE)
        stride = line // 4
        buf = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, 4 * n * stride)
        init = self.kernels["chase_init"]
        init.set_args(buf, np.uint32(n), np.uint32(stride))
        cl.enqueue_nd_range_kernel(self.queue, init, (n,), None).wait()
        kernel = self.kernels["chase_local" if local else "chase"]

        end = np.zeros(1, np.uint32)

        def launch(steps: int) -> Any:
            if local:
                kernel.set_args(buf, self.out, np.int32(n), np.int32(steps),
                                cl.LocalMemory(4 * n))  # line 4 B: stride 1
            else:
                # Each run goes on where the last one ended, so a footprint larger than
                # the caches is walked through lines no run loaded before (starting every
                # run at line 0 measured the cache holding the first run's lines: an H100
                # gave the L2's latency for device memory).
                cl.enqueue_copy(self.queue, end, self.out).wait()
                start = int(end[0]) // stride % n * stride  # a line's start, whatever `out` held
                kernel.set_args(buf, self.out, np.int32(steps), np.uint32(start))
            return cl.enqueue_nd_range_kernel(self.queue, kernel, (1,), (1,))

        steps = grow_until(lambda s: _event_time(launch(s)), 1024, seconds, 1 << 28)
        spread = event_seconds(lambda: launch(steps), self.repeat)
        where = "local memory" if local else "global memory"
        return Rate.of_time(float(steps), spread,
                            f"pointer chase: one work-item, {steps} dependent loads over a "
                            f"pseudo-random cycle of {n} {line} B lines ({_kib(n * line)}, "
                            f"{where})")

    def launch_overhead(self, repeat: int) -> tuple[Rate, Rate]:
        """An empty kernel of one work-group: its duration on the device (start to end,
        the profiling events: what a launch in a stream of launches adds) and its wall
        time from enqueueing to finish (what one launch the host waits for costs)."""
        kernel = self.kernels["empty"]
        kernel.set_args(self.out)

        def launch() -> Any:
            return self.cl.enqueue_nd_range_kernel(self.queue, kernel, (self.local,),
                                                   (self.local,))

        device = Rate.of_time(1.0, event_seconds(launch, repeat),
                              f"an empty kernel of one work-group, start to end on the "
                              f"device (profiling events), {repeat} launches")
        wall = Rate.of_time(1.0, wall_seconds(lambda: launch().wait(), repeat),
                            f"an empty kernel of one work-group, enqueue to finish "
                            f"(wall clock), {repeat} launches")
        return device, wall

    def transfers(self, size: int) -> tuple[Rate, Rate]:
        """Host to device and device to host through a pinned (mapped) host buffer."""
        import importlib

        cl: Any = importlib.import_module("pyopencl")  # its stubs reject map flags as ints
        pinned = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR,
                           size)
        host, _ = cl.enqueue_map_buffer(self.queue, pinned,
                                        cl.map_flags.READ | cl.map_flags.WRITE, 0, (size,),
                                        np.uint8)
        device = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, size)
        how = f"{size >> 20} MiB between a pinned host buffer and device memory"
        up = Rate.of_work(size, event_seconds(
            lambda: cl.enqueue_copy(self.queue, device, host), self.repeat), how)
        down = Rate.of_work(size, event_seconds(
            lambda: cl.enqueue_copy(self.queue, host, device), self.repeat), how)
        return up, down


def _event_time(event: Any) -> float:
    event.wait()
    return float((event.profile.end - event.profile.start) * 1e-9)


def _kib(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} kB"


def numpy_copy(size: int, repeat: int, workers: int | None = None) -> Rate:
    """numpy's copy of `size` bytes (mcl.detect.host_copy): the fastest of one thread,
    `workers` threads (default: one per CPU) over slices, and those threads with
    non-temporal stores; the others' rates are in its `how`."""
    from mcl.detect.host_copy import numpy_copies

    rates = numpy_copies(size, repeat, workers or os.cpu_count() or 1)
    best = max(rates, key=lambda k: rates[k].value)
    others = "; ".join(f"{k}: {r.value / 1e9:,.1f} GB/s" for k, r in rates.items() if k != best)
    how = rates[best].how + (f" (the fastest of numpy's copies; {others})" if others else "")
    return replace(rates[best], how=how)


def torch_copy(size: int, ordinal: int, repeat: int) -> Rate | None:
    """PyTorch's device-to-device copy (CUDA events); None without PyTorch's CUDA."""
    torch = cuda_torch()
    if torch is None:
        return None
    src = torch.ones(size // 4, device=torch.device("cuda", ordinal))
    dst = torch.empty_like(src)
    torch_seconds(torch, lambda: dst.copy_(src))
    seconds = tuple(torch_seconds(torch, lambda: dst.copy_(src)) for _ in range(repeat))
    return Rate.of_work(2.0 * size, Spread(seconds),
                        f"torch copy_ of {size >> 20} MiB on the device, read + written")
