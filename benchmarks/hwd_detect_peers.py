"""The peaks `mcl hwd detect --measure` writes, against their peers measured in the same
run on the same machine: device-memory copy bandwidth against numpy's copies of arrays of
the same size (mcl.detect.host_copy: one thread; one thread per compute unit of the
device over slices, as the OpenCL copy runs a work-group on every core; and those threads
with non-temporal stores, as the OpenCL copy stores on a CPU -- numpy's copy below glibc's
non-temporal threshold reads every line before writing it, 1.5x the bytes it counts), and
the float32 FMA peak against OpenBLAS SGEMM (numpy float32 matmul).
The acceptance of `hwd detect` on a CPU: the copy within 10% of numpy's, the compute roof
at least SGEMM and within 25% of it (docs/hdl.md).

    PYTHONPATH=. python benchmarks/hwd_detect_peers.py [--device SPEC] [--rounds N]

Each line is one round (measure, then the peers). On a shared machine one round's figures
swing with the load, so the last lines compare the best of each over all rounds (each a
peak estimate) and the median of the per-round ratios, against every peer.
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


def ratios(kernel: float, peers: dict[str, float]) -> dict[str, float]:
    """The kernel's rate over each peer's (1.0: as fast)."""
    return {name: kernel / rate for name, rate in peers.items()}


def main(argv: list[str] | None = None) -> int:
    from mcl.backends.opencl.runner import describe, select_device
    from mcl.detect.host_copy import numpy_copies
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
    workers = int((q.get("opencl") or {}).get("max_compute_units") or os.cpu_count() or 1)
    print(f"numpy's threaded copies: {workers} threads (the device's compute units)")
    copy_ratios: dict[str, list[float]] = {}
    fma_ratios: list[float] = []
    best: dict[str, float] = {"copy": 0.0, "fma": 0.0, "sgemm": 0.0}
    peers_best: dict[str, float] = {}
    for r in range(args.rounds):
        m = measure(device, q)
        assert m.copy_bytes_per_s and m.fma_flops
        size = int(m.notes["copy"].split(" MiB")[0].rsplit(" ", 1)[1]) << 20
        peers = {k: v.value for k, v in numpy_copies(size, 5, workers).items()}
        sgemm = 2 * args.n ** 3 / best_seconds(lambda: a @ a, 3)
        for key, value in (("copy", m.copy_bytes_per_s), ("fma", m.fma_flops),
                           ("sgemm", sgemm)):
            best[key] = max(best[key], value)
        for name, value in peers.items():
            peers_best[name] = max(peers_best.get(name, 0.0), value)
        for name, ratio in ratios(m.copy_bytes_per_s, peers).items():
            copy_ratios.setdefault(name, []).append(ratio)
        fma_ratios.append(m.fma_flops / sgemm)
        print(f"round {r}: copy {m.copy_bytes_per_s / 1e9:.1f} GB/s vs numpy "
              + ", ".join(f"{name} {rate / 1e9:.1f} GB/s (ratio {copy_ratios[name][-1]:.2f})"
                          for name, rate in peers.items())
              + f"; FMA {m.fma_flops / 1e9:.1f} GFLOP/s vs SGEMM {sgemm / 1e9:.1f} GFLOP/s "
              f"(ratio {fma_ratios[-1]:.2f}) [{m.notes['copy']}; {m.notes['fma']}]")
    print(f"best of {args.rounds} rounds: copy {best['copy'] / 1e9:.1f} GB/s vs numpy "
          + ", ".join(f"{name} {rate / 1e9:.1f} GB/s (ratio {ratio:.2f})" for (name, rate), ratio
                      in zip(peers_best.items(), ratios(best["copy"], peers_best).values(),
                             strict=True))
          + f"; FMA {best['fma'] / 1e9:.1f} GFLOP/s vs SGEMM {best['sgemm'] / 1e9:.1f} "
          f"GFLOP/s (ratio {best['fma'] / best['sgemm']:.2f})")
    print("median of the per-round ratios: copy "
          + ", ".join(f"/ numpy {name} {statistics.median(values):.2f}"
                      for name, values in copy_ratios.items())
          + f"; FMA/SGEMM {statistics.median(fma_ratios):.2f}")
    return 0


def _blas_info() -> list[dict]:
    try:
        from threadpoolctl import threadpool_info

        return [i for i in threadpool_info() if i.get("user_api") == "blas"]
    except ImportError:
        return []


if __name__ == "__main__":
    sys.exit(main())
