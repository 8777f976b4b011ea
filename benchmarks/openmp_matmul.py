"""kernels/matmul/x86_avx512_v4.mcpl through the OpenMP backend (C with OpenMP and vector
types, compiled by the system's cc) against the same kernel through PoCL (the OpenCL
backend, default device) and numpy's matmul (OpenBLAS), in one process on this machine.

    python benchmarks/openmp_matmul.py [--sizes 1024 2048] [--repeat 5]
    OMP_NUM_THREADS=1 POCL_MAX_PTHREAD_COUNT=1 OPENBLAS_NUM_THREADS=1 python ...  # one core

n = m = p = each size. Each backend runs `repeat` times after one warm-up run (builds,
first touches); the kernel time is the median (OpenMP: wall time of the C call; PoCL:
OpenCL profiling events; numpy: wall time of `a @ b`). PoCL runs the kernel with the
constants of its .tuned.toml for the device where one applies, as `mcl run` does, and as
written; OpenMP as written. Every result is checked against numpy before it is timed.

    python benchmarks/openmp_matmul.py --sweep [--sizes 2048]

`--sweep` runs, instead of the table, the OpenMP build of every configuration of the
kernel's `// tune:` space that its `// require:` rules allow (as `mcl tune` enumerates it)
at the first size, each timed as above, and prints the fastest beside numpy's time
measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script
    sys.path.insert(0, str(REPO))

KERNEL = REPO / "kernels" / "matmul" / "x86_avx512_v4.mcpl"
TARGET = "x86_avx512"
# The thread counts of the three runtimes, printed with the command where set.
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "POCL_MAX_PTHREAD_COUNT", "OPENBLAS_NUM_THREADS")


def _check(name: str, c: np.ndarray, expected: np.ndarray) -> None:
    error = float(np.max(np.abs(c - expected)) / np.max(np.abs(expected)))
    if error > 1e-4:
        raise SystemExit(f"{name}: the product differs from numpy's (relative error {error:.2e})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sweep", action="store_true",
                        help="instead: time every configuration of the tune space (OpenMP only)")
    args = parser.parse_args(argv)

    from mcl import pipeline
    from mcl.backends.opencl.runner import OpenCLSession, describe, select_device
    from mcl.backends.openmp import backend
    from mcl.hdl.library import default_library
    from mcl.tune.tuned_file import best_tuned

    library = default_library()
    checked = pipeline.checked_at(KERNEL, [], library)
    if args.sweep:
        threads = " ".join(f"{k}={os.environ[k]}" for k in _THREAD_VARIABLES if k in os.environ)
        print(f"# {threads} python benchmarks/openmp_matmul.py {' '.join(sys.argv[1:])}")
        print(f"# load average (1 min) before: {os.getloadavg()[0]:.1f}")
        _sweep(checked, library, args.sizes[0], args.repeat)
        print(f"# load average (1 min) after: {os.getloadavg()[0]:.1f}")
        return 0
    openmp = backend.session(pipeline.generate(checked, TARGET, library, language="openmp"))
    device = select_device()
    written = OpenCLSession(pipeline.generate(checked, TARGET, library), device)
    threads = " ".join(f"{k}={os.environ[k]}" for k in _THREAD_VARIABLES if k in os.environ)
    print(f"# {' '.join([threads, 'python', 'benchmarks/openmp_matmul.py', *sys.argv[1:]])}"
          .replace("#  ", "# "))
    print(f"# OpenMP: {openmp.device_name()}; PoCL: {describe(device)}; "
          f"numpy {np.__version__}")
    print(f"# load average (1 min) before: {os.getloadavg()[0]:.1f}")
    print(f"{'n=m=p':>6} {'backend':<34} {'ms':>9} {'GFLOP/s':>8} {'/ numpy':>8} "
          f"{'/ PoCL':>7}")
    for n in args.sizes:
        sizes = {"n": n, "m": n, "p": n}
        rng = np.random.default_rng(0)
        a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        run_args = {"n": n, "m": n, "p": n, "c": np.zeros((n, n), np.float32), "a": a, "b": b}
        expected = a @ b
        flops = 2.0 * n * n * n
        times: dict[str, float] = {}

        numpy_times = []
        for _ in range(args.repeat + 1):
            start = time.perf_counter()
            a @ b
            numpy_times.append(time.perf_counter() - start)
        times["numpy a @ b (OpenBLAS)"] = statistics.median(numpy_times[1:])

        tuned = best_tuned(KERNEL, TARGET, describe(device), sizes)
        sessions = [("PoCL (as written)", written)]
        if tuned is not None:
            tuned_generated = pipeline.generate(checked, TARGET, library,
                                                overrides=tuned.constants)
            constants = ", ".join(f"{k}={v}" for k, v in tuned.constants.items())
            sessions.append((f"PoCL (.tuned.toml: {constants})",
                             OpenCLSession(tuned_generated, device)))
        sessions.append(("OpenMP (as written)", openmp))
        for name, session in sessions:
            result = session.run("matmul", run_args, args.repeat + 1)
            _check(name, result.outputs["c"], expected)
            times[name] = statistics.median(result.kernel_times_s[1:])

        numpy_s = times["numpy a @ b (OpenBLAS)"]
        pocl_s = min(s for name, s in times.items() if name.startswith("PoCL"))
        for name, seconds in times.items():
            print(f"{n:>6} {name:<34} {seconds * 1e3:>9.2f} {flops / seconds / 1e9:>8.1f} "
                  f"{numpy_s / seconds:>8.2f} {pocl_s / seconds:>7.2f}")
    print(f"# load average (1 min) after: {os.getloadavg()[0]:.1f}")
    print("# / numpy, / PoCL: speed relative to numpy's and to the faster PoCL run "
          "(time ratio; > 1 is faster)")
    return 0


def _sweep(checked: Any, library: Any, n: int, repeat: int) -> None:
    """Every allowed configuration of the tune space through OpenMP at n = m = p, and the
    fastest against numpy's matmul timed before and after the sweep."""
    from mcl import pipeline
    from mcl.backends.openmp import backend
    from mcl.tune.space import constant_values, rule_problems, space_from_source

    space = space_from_source(checked.program.main, KERNEL, {})
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    expected = a @ b
    run_args = {"n": n, "m": n, "p": n, "c": np.zeros((n, n), np.float32), "a": a, "b": b}
    flops = 2.0 * n * n * n

    def numpy_seconds() -> float:
        runs = []
        for _ in range(repeat + 1):
            start = time.perf_counter()
            a @ b
            runs.append(time.perf_counter() - start)
        return statistics.median(runs[1:])

    before = numpy_seconds()
    results: list[tuple[float, str]] = []
    print(f"# sweep at n=m=p={n}: {len(space.configurations())} configurations")
    for config in space.configurations():
        values = constant_values(checked.program.main.constants, config)
        if rule_problems(space, values):
            continue
        name = ", ".join(f"{k}={v}" for k, v in config.items())
        session = backend.session(pipeline.generate(checked, TARGET, library,
                                                    language="openmp", overrides=config))
        result = session.run("matmul", run_args, repeat + 1)
        _check(name, result.outputs["c"], expected)
        seconds = statistics.median(result.kernel_times_s[1:])
        results.append((seconds, name))
        print(f"  {name:<48} {seconds * 1e3:>9.2f} ms {flops / seconds / 1e9:>8.1f} GFLOP/s")
    after = numpy_seconds()
    numpy_s = min(before, after)
    best_s, best = min(results)
    print(f"# numpy a @ b (OpenBLAS): {numpy_s * 1e3:.2f} ms ({flops / numpy_s / 1e9:.1f} "
          f"GFLOP/s; before {before * 1e3:.2f}, after {after * 1e3:.2f})")
    print(f"# fastest OpenMP configuration: {best}: {best_s * 1e3:.2f} ms "
          f"({flops / best_s / 1e9:.1f} GFLOP/s) = {numpy_s / best_s:.2f} x numpy")


if __name__ == "__main__":
    sys.exit(main())
