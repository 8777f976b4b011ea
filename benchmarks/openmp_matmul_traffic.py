"""Where matmul x86_avx512_v4 loses to OpenBLAS on the CPU: its OpenMP build timed beside
copies of its generated C with part of the memory traffic taken away, and numpy's matmul,
in one process on one thread.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/openmp_matmul_traffic.py \\
        [--sizes 2048 2000] [--repeat 7] [--version x86_avx512_v4] [--strides 2048 2064]

The copies (their products are wrong, only their times count):
- `a from L1`: every register tile reads the same 6 rows of a, so a's loads hit L1;
- `b packed once`: the block of b is packed in the first block of k only;
- `neither`: both; what the micro-kernel does when memory costs nothing;
- `a packed`: (a right product) each block of a (ROWS x BLOCK_K) copied into a contiguous
  private array before the register tiles read it, as OpenBLAS packs a.
`--strides`: the version with a declared `float[n, lda]` instead, at n = m = p = the first
size, a padded to each row stride `lda` given (the same product): whether rows of a 8 KiB
apart (p = 2048), which share the L1 cache's sets, cost time.
Each is timed by the CPU time of the calling thread (which runs numpy and the C call on
one thread), the fastest of `repeat` runs: on a machine other jobs load this leaves out
the time the system gives them. docs/performance-log.md ("CPU SGEMM") reads the figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script
    sys.path.insert(0, str(REPO))

TARGET = "x86_avx512"
# The register tile's load of a in the generated C, and what each copy reads instead.
A_LOAD = "float aik = a[min(ti * ROWS + ib * ELEMS_I + ei, n - 1) * p + (k0 + kk)];"
A_FROM_L1 = "float aik = a[ei * p + (k0 + kk)];"
A_FROM_PACK = "float aik = aPack[(ib * ELEMS_I + ei) * BLOCK_K + kk];"
A_PACK = """float aPack[ROWS * BLOCK_K];
for (int r = 0; r < ROWS; r++) {
    const int i = min(ti * ROWS + r, n - 1);
    for (int kk = 0; kk < kLength; kk++) aPack[r * BLOCK_K + kk] = a[i * p + k0 + kk];
}
"""
TILES = "for (int ib = 0; ib < BLOCKS_I; ib++) {"


def variants(source: str) -> dict[str, str]:
    """The generated C and its copies with part of the traffic taken away."""
    if A_LOAD not in source or source.count(TILES) != 1:
        raise SystemExit("the generated C is not v4's shape: this script knows v4's")
    pack = re.search(r"for \(int kk = 0; kk < kLength; kk\+\+\) \{  // [\w.]+:\d+", source)
    if pack is None:
        raise SystemExit("no packing loop of b found in the generated C")
    once = pack.group(0)
    return {
        "as generated": source,
        "a from L1": source.replace(A_LOAD, A_FROM_L1),
        "b packed once": source.replace(once, "if (kb == 0) " + once),
        "neither": source.replace(A_LOAD, A_FROM_L1).replace(once, "if (kb == 0) " + once),
        "a packed": source.replace(TILES, A_PACK + TILES).replace(A_LOAD, A_FROM_PACK),
    }


def strided(kernel: Path, folder: Path) -> Path:
    """A copy of the kernel in `folder` whose a has a row stride of its own, `lda`."""
    text = kernel.read_text(encoding="utf-8")
    header = "void matmul(int n, int m, int p,"
    for old, new in ((header, header + " int lda,"),
                     ("main float[n, p] a", "main float[n, lda] a")):
        if old not in text:
            raise SystemExit(f"{kernel.name}: no '{old}' to give a a stride of its own")
        text = text.replace(old, new)
    path = folder / kernel.name
    path.write_text(text, encoding="utf-8")
    return path


def time_strides(kernel: Path, library: Any, n: int, strides: list[int], repeat: int) -> None:
    """The product at n = m = p with a's rows `lda` floats apart, for each lda."""
    from mcl import pipeline
    from mcl.backends.openmp import backend

    with tempfile.TemporaryDirectory() as folder:
        checked = pipeline.checked_at(strided(kernel, Path(folder)), [], library)
    session = backend.session(pipeline.generate(checked, TARGET, library, language="openmp"))
    session.clock = time.thread_time
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    expected = a @ b
    padded = {}
    for lda in strides:
        padded[lda] = np.zeros((n, lda), np.float32)
        padded[lda][:, :n] = a
    times: dict[int, list[float]] = {lda: [] for lda in strides}
    for _ in range(repeat):
        for lda in strides:
            result = session.run("matmul", {"n": n, "m": n, "p": n, "lda": lda,
                                            "c": np.zeros((n, n), np.float32),
                                            "a": padded[lda], "b": b}, 1)
            if np.max(np.abs(result.outputs["c"] - expected)) / np.max(np.abs(expected)) > 1e-4:
                raise SystemExit(f"lda={lda}: the product differs from numpy's")
            times[lda].append(result.kernel_times_s[-1])
    print(f"{'n=m=p':>6} {'row stride of a':<24} {'ms':>9} {'GFLOP/s':>8}")
    for lda in strides:
        seconds = min(times[lda])
        print(f"{n:>6} {f'{lda} floats ({lda * 4} B)':<24} {seconds * 1e3:>9.2f} "
              f"{2.0 * n ** 3 / seconds / 1e9:>8.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2048, 2000])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--version", default="x86_avx512_v4")
    parser.add_argument("--strides", type=int, nargs="+", default=[],
                        help="instead: a's row strides (floats, >= the first size) to time")
    args = parser.parse_args(argv)
    if not all(os.environ.get(k) == "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")):
        parser.error("run with OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1")

    from mcl import pipeline
    from mcl.backends.openmp import backend
    from mcl.hdl.library import default_library

    library = default_library()
    kernel = REPO / "kernels" / "matmul" / f"{args.version}.mcpl"
    if args.strides:
        print(f"# OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python "
              f"benchmarks/openmp_matmul_traffic.py {' '.join(sys.argv[1:])}")
        print(f"# {args.version} with a declared float[n, lda]; CPU time of the calling "
              f"thread, fastest of {args.repeat}")
        print(f"# load average (1 min) before: {os.getloadavg()[0]:.1f}")
        time_strides(kernel, library, args.sizes[0], args.strides, args.repeat)
        print(f"# load average (1 min) after: {os.getloadavg()[0]:.1f}")
        return 0
    generated = pipeline.generate(pipeline.checked_at(kernel, [], library), TARGET, library,
                                  language="openmp")
    sessions: dict[str, Any] = {}
    for name, source in variants(generated.source).items():
        sessions[name] = backend.session(dataclasses.replace(generated, source=source))
        sessions[name].clock = time.thread_time
    print(f"# OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python "
          f"benchmarks/openmp_matmul_traffic.py {' '.join(sys.argv[1:])}")
    print(f"# {args.version}; CPU time of the calling thread, fastest of {args.repeat}")
    print(f"# load average (1 min) before: {os.getloadavg()[0]:.1f}")
    print(f"{'n=m=p':>6} {'build':<16} {'ms':>9} {'GFLOP/s':>8} {'/ numpy':>8}")
    for n in args.sizes:
        rng = np.random.default_rng(0)
        a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        expected = a @ b
        run_args = {"n": n, "m": n, "p": n, "c": np.zeros((n, n), np.float32), "a": a, "b": b}
        times: dict[str, list[float]] = {"numpy": []}
        for _ in range(args.repeat):  # interleaved, so that a busy minute hits them all
            start = time.thread_time()
            a @ b
            times["numpy"].append(time.thread_time() - start)
            for name, session in sessions.items():
                result = session.run("matmul", run_args, 1)
                if name in ("as generated", "a packed"):
                    error = np.max(np.abs(result.outputs["c"] - expected)) / np.max(
                        np.abs(expected))
                    if error > 1e-4:
                        raise SystemExit(f"{name}: the product differs from numpy's")
                times.setdefault(name, []).append(result.kernel_times_s[-1])
        numpy_s = min(times["numpy"])
        for name, runs in times.items():
            seconds = min(runs)
            print(f"{n:>6} {name:<16} {seconds * 1e3:>9.2f} {2.0 * n ** 3 / seconds / 1e9:>8.1f} "
                  f"{numpy_s / seconds:>8.2f}")
    print(f"# load average (1 min) after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
