"""The peaks `mcl hwd detect --measure` writes, against their peers measured in the same
run on the same machine: device-memory copy bandwidth against numpy's copy of arrays of
the same size (one thread, and one thread per CPU over slices of the arrays: a single
thread does not saturate a many-core server's memory, while the OpenCL copy runs on every
core), and the float32 FMA peak against OpenBLAS SGEMM (numpy float32 matmul).
The acceptance of `hwd detect` on a CPU is each ratio within 20% (docs/hdl.md).

    PYTHONPATH=. python benchmarks/hwd_detect_peers.py [--device SPEC] [--rounds N]

Each line is one round (measure, then the peers). On a shared machine one round's figures
swing with the load, so the last line compares the best of each over all rounds (each a
peak estimate) and the median of the per-round ratios.
Raw output: benchmarks/results/*-hwd-detect-peers-*.log.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.harness import time_cpu  # noqa: E402


def best_seconds(run, repeat: int = 5) -> float:
    return min(time_cpu(run, repeat))


def threaded_copy(dst: np.ndarray, src: np.ndarray, pool, workers: int) -> None:
    """np.copyto over one slice per worker (numpy releases the GIL while it copies)."""
    bounds = np.linspace(0, src.size, workers + 1).astype(int)
    list(pool.map(lambda i: np.copyto(dst[bounds[i]:bounds[i + 1]], src[bounds[i]:bounds[i + 1]]),
                  range(len(bounds) - 1)))


def main(argv: list[str] | None = None) -> int:
    from mcl.backends.opencl.runner import describe, select_device
    from mcl.detect.measure import measure
    from mcl.detect.query import query

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default=None, help="OpenCL CPU device (as mcl run --device)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--n", type=int, default=4096, help="SGEMM size")
    args = ap.parse_args(argv)
    device = select_device(args.device)
    q = query(device)
    print(f"device: {describe(device)}")
    print(f"numpy {np.__version__}; BLAS: "
          + ", ".join(str(i.get("internal_api", "")) + " " + str(i.get("version", ""))
                      for i in _blas_info()))
    a = np.random.default_rng(0).random((args.n, args.n), dtype=np.float32)
    copy_ratios, fma_ratios = [], []
    best = {"copy": 0.0, "numpy": 0.0, "fma": 0.0, "sgemm": 0.0}
    from concurrent.futures import ThreadPoolExecutor

    workers = os.cpu_count() or 1
    pool = ThreadPoolExecutor(workers)
    for r in range(args.rounds):
        m = measure(device, q)
        assert m.copy_bytes_per_s and m.fma_flops
        size = int(m.notes["copy"].split(" MiB")[0].rsplit(" ", 1)[1]) << 20
        src = np.ones(size // 4, np.float32)
        dst = np.empty_like(src)
        single = 2 * size / best_seconds(lambda d=dst, s=src: np.copyto(d, s))
        numpy_copy = max(single, 2 * size / best_seconds(
            lambda d=dst, s=src: threaded_copy(d, s, pool, workers)))
        sgemm = 2 * args.n ** 3 / best_seconds(lambda: a @ a, 3)
        for key, value in (("copy", m.copy_bytes_per_s), ("numpy", numpy_copy),
                           ("fma", m.fma_flops), ("sgemm", sgemm)):
            best[key] = max(best[key], value)
        copy_ratios.append(m.copy_bytes_per_s / numpy_copy)
        fma_ratios.append(m.fma_flops / sgemm)
        print(f"round {r}: copy {m.copy_bytes_per_s / 1e9:.1f} GB/s vs numpy "
              f"{numpy_copy / 1e9:.1f} GB/s (one thread {single / 1e9:.1f}; ratio "
              f"{copy_ratios[-1]:.2f}); FMA "
              f"{m.fma_flops / 1e9:.1f} GFLOP/s vs SGEMM {sgemm / 1e9:.1f} GFLOP/s "
              f"(ratio {fma_ratios[-1]:.2f}) [{m.notes['copy']}; {m.notes['fma']}]")
    print(f"best of {args.rounds} rounds: copy {best['copy'] / 1e9:.1f} GB/s vs numpy "
          f"{best['numpy'] / 1e9:.1f} GB/s (ratio {best['copy'] / best['numpy']:.2f}); FMA "
          f"{best['fma'] / 1e9:.1f} GFLOP/s vs SGEMM {best['sgemm'] / 1e9:.1f} GFLOP/s "
          f"(ratio {best['fma'] / best['sgemm']:.2f})")
    print(f"median of the per-round ratios: copy {statistics.median(copy_ratios):.2f}, "
          f"FMA/SGEMM {statistics.median(fma_ratios):.2f}")
    return 0


def _blas_info() -> list[dict]:
    try:
        from threadpoolctl import threadpool_info

        return [i for i in threadpool_info() if i.get("user_api") == "blas"]
    except ImportError:
        return []


if __name__ == "__main__":
    sys.exit(main())
