"""A matmul version through the OpenMP backend, timed right after numpy's matmul and, in
the same rounds, after waiting until numpy's worker threads rest (mcl.quiet_threads):
why `benchmarks/openmp_matmul.py` once timed the first version of its table at half the
speed `mcl refine --measure` had measured for the same file (docs/refinements.md).

    OMP_NUM_THREADS=T OPENBLAS_NUM_THREADS=T python benchmarks/openmp_after_blas.py \\
        FILE.mcpl [--size 1024] [--rounds 9]

Each round runs `a @ b`, times one run of the version, runs `a @ b` again, waits, and
times one run more; the medians of both and the waits are printed. With
OPENBLAS_NUM_THREADS=1 numpy has no workers and the two agree.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script
    sys.path.insert(0, str(REPO))

TARGET = "x86_avx512"
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", type=Path, help="a matmul version at x86_avx512")
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv)

    from mcl import pipeline
    from mcl.backends.openmp import backend
    from mcl.hdl.library import default_library
    from mcl.quiet_threads import wait_until_quiet

    library = default_library()
    checked = pipeline.checked_at(args.file, [], library)
    session = backend.session(pipeline.generate(checked, TARGET, library, language="openmp"))
    n = args.size
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    run_args = {"n": n, "m": n, "p": n, "c": np.zeros((n, n), np.float32), "a": a, "b": b}
    threads = " ".join(f"{k}={os.environ[k]}" for k in _THREAD_VARIABLES if k in os.environ)
    print(f"# {threads} python benchmarks/openmp_after_blas.py {' '.join(sys.argv[1:])}")
    print(f"# {session.device_name()}; numpy {np.__version__}; n=m=p={n}; "
          f"load average (1 min) before: {os.getloadavg()[0]:.1f}")
    result = session.run("matmul", run_args, 2)  # builds, first touches
    error = float(np.max(np.abs(result.outputs["c"] - a @ b)))
    after: list[float] = []
    rested: list[float] = []
    waits: list[float] = []
    for _ in range(args.rounds):
        a @ b
        after.append(session.run("matmul", run_args, 1).kernel_times_s[0])
        a @ b
        waits.append(wait_until_quiet())
        rested.append(session.run("matmul", run_args, 1).kernel_times_s[0])

    def ms(values: list[float]) -> str:
        return " ".join(f"{v * 1e3:.1f}" for v in values)

    print(f"right after a @ b:          median {statistics.median(after) * 1e3:8.2f} ms "
          f"({ms(after)})")
    print(f"after the workers rest:     median {statistics.median(rested) * 1e3:8.2f} ms "
          f"({ms(rested)})")
    print(f"# waited {ms(waits)} ms; largest difference from numpy {error:.2e}; "
          f"load average (1 min) after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
