"""Measure the roofs a description states: float32 FMA throughput and device-memory copy
bandwidth on one OpenCL device, beside the figures mcl.hdl.peak derives (docs/hardware.md).

    PYTHONPATH=. python benchmarks/roofline_peaks.py --level x86_avx512          # PoCL CPU
    PYTHONPATH=. python benchmarks/roofline_peaks.py --level hopper --device nvidia

The FMA kernel keeps 4 independent float16-vector chains per work-item (64 fused
multiply-adds in flight, enough to hide the FMA latency on a CPU core and a GPU lane); the
copy kernel moves float4s. Times are OpenCL profiling times, best of --rounds. A ratio
near (or a little below) 1 says the description's roof is the machine's; far above 1, the
description understates the machine (a clock that boosts higher).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

SOURCE = """
__kernel void fma_peak(__global float *out, float x, float y, int iters) {
    float16 a0 = (float16)(get_global_id(0) * 1e-9f), a1 = a0 + 1.0f, a2 = a0 + 2.0f,
            a3 = a0 + 3.0f;
    for (int i = 0; i < iters; i++) {
        a0 = fma(a0, x, y); a1 = fma(a1, x, y); a2 = fma(a2, x, y); a3 = fma(a3, x, y);
    }
    float16 s = a0 + a1 + a2 + a3;
    out[get_global_id(0)] = s.s0 + s.s1 + s.s2 + s.s3 + s.s4 + s.s5 + s.s6 + s.s7 + s.s8
        + s.s9 + s.sa + s.sb + s.sc + s.sd + s.se + s.sf;
}
__kernel void copy(__global const float4 *in, __global float4 *out) {
    size_t i = get_global_id(0);
    out[i] = in[i];
}
"""
FMA_PER_ITER = 4 * 16  # chains x lanes


def main(argv: list[str] | None = None) -> int:
    import pyopencl as cl

    from mcl.backends.opencl.runner import describe, select_device
    from mcl.detect.measure import best_time
    from mcl.hdl.library import default_library
    from mcl.hdl.peak import bandwidths, peak_flops

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--level", default="x86_avx512", help="the description to compare with")
    ap.add_argument("--device", default=None, help="OpenCL device (as mcl run --device)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--items", type=int, default=0,
                    help="work-items of the FMA kernel (default: 8 per lane of the level)")
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--mbytes", type=int, default=512, help="size of the copied array")
    ap.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    args = ap.parse_args(argv)

    hwd = default_library().get(args.level)
    device = select_device(args.device)
    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    program = cl.Program(ctx, SOURCE).build()
    peak = peak_flops(hwd)
    lanes = int(peak / 2 / max(device.max_clock_frequency, 1) / 1e6) if peak else 1024
    items = args.items or max(1024, 8 * lanes)
    out = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, 4 * items)
    fma, copy = cl.Kernel(program, "fma_peak"), cl.Kernel(program, "copy")
    seconds = best_time(lambda: fma(queue, (items,), None, out, np.float32(0.999),
                                           np.float32(1e-3), np.int32(args.iters)), args.rounds)
    flops = 2.0 * FMA_PER_ITER * items * args.iters / seconds

    n = args.mbytes * 2**20 // 16
    src = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 16 * n)
    dst = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 16 * n)
    cl.enqueue_fill_buffer(queue, src, np.float32(1), 0, 16 * n).wait()
    copy_s = best_time(lambda: copy(queue, (n,), None, src, dst), args.rounds)
    copy_bw = 2.0 * 16 * n / copy_s

    memory = next((b for b in bandwidths(hwd) if b.instances == 1), None)
    print(f"{describe(device)} against {args.level}")
    rows = [("float32 FMA", flops, peak, "GFLOP/s"),
            ("copy (read + write)", copy_bw, memory.bytes_per_s if memory else None, "GB/s")]
    for name, measured, stated, unit in rows:
        ratio = f"{measured / stated:.2f}" if stated else "-"
        stated_text = f"{stated / 1e9:.1f}" if stated else "-"
        print(f"  {name:20s} measured {measured / 1e9:10.1f} {unit:8s} description "
              f"{stated_text:>10s}  measured/description {ratio}")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "device": describe(device), "level": args.level, "fma_flops": flops,
            "peak_flops": peak, "copy_bytes_per_s": copy_bw,
            "memory_bytes_per_s": memory.bytes_per_s if memory else None}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
