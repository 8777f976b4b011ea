"""kernels/matmul/x86_avx512_v4.mcpl and x86_avx512_v5.mcpl through the OpenMP backend (C
with OpenMP and vector types, compiled by the system's cc) against the same kernels through
PoCL (the OpenCL backend, default device) and numpy's matmul (OpenBLAS), in one process on
this machine.

    python benchmarks/openmp_matmul.py [--sizes 1024 2048] [--repeat 5] [--versions v4 v5]
    OMP_NUM_THREADS=1 POCL_MAX_PTHREAD_COUNT=1 OPENBLAS_NUM_THREADS=1 python ...  # one core

n = m = p = each size. Each backend runs `repeat` times after one warm-up run (builds,
first touches); the kernel time is the median (OpenMP: wall time of the C call; PoCL:
OpenCL profiling events; numpy: wall time of `a @ b`). Each backend starts once the
process's other threads rest (mcl.quiet_threads): OpenBLAS's workers spin for about a
tenth of a second after numpy's last call, and an OpenMP build timed in that window
shares the cores with them (on the 16-core host it ran at half its speed). PoCL runs
the kernel with the constants of its .tuned.toml for the device where one applies, as
`mcl run` does, and as written; OpenMP as written. Every result is checked against
numpy before it is timed. `--no-pocl` leaves PoCL out; `--fastest` reports the fastest
repetition instead of the median (on a loaded machine the fastest is the one the other
jobs disturbed least).

`--clock thread` (one thread only: OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1) times numpy
and the OpenMP builds by the CPU time of the calling thread, which runs both then, and
reports the fastest repetition: on a machine that other jobs load, this leaves out the
time the system gives them (their effect on the shared caches stays). PoCL, which runs
on threads of its own, is left out.

    python benchmarks/openmp_matmul.py --sweep [--sizes 2048] [--versions v4]

`--sweep` runs, instead of the table, the OpenMP build of every configuration of the
first version's `// tune:` space that its `// require:` rules allow (as `mcl tune`
enumerates it) at the first size, each timed as above, and prints the fastest beside
numpy's time measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script
    sys.path.insert(0, str(REPO))

KERNELS = REPO / "kernels" / "matmul"
TARGET = "x86_avx512"
VERSIONS = ("x86_avx512_v4", "x86_avx512_v5")
# The thread counts of the three runtimes, printed with the command where set.
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "POCL_MAX_PTHREAD_COUNT", "OPENBLAS_NUM_THREADS")


def _check(name: str, c: np.ndarray, expected: np.ndarray) -> None:
    error = float(np.max(np.abs(c - expected)) / np.max(np.abs(expected)))
    if error > 1e-4:
        raise SystemExit(f"{name}: the product differs from numpy's (relative error {error:.2e})")


def _version(name: str) -> str:
    """`v5` or `x86_avx512_v5`: the version's full name; a path to a .mcpl file (a
    version `mcl refine` wrote, say) as given."""
    return name if name.startswith(TARGET) or name.endswith(".mcpl") else f"{TARGET}_{name}"


def _kernel(version: str) -> Path:
    """The file of a version: a shipped one's in kernels/matmul, else the path given."""
    return Path(version) if version.endswith(".mcpl") else KERNELS / f"{version}.mcpl"


def _one_thread() -> bool:
    return all(os.environ.get(k) == "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--versions", nargs="+", default=list(VERSIONS),
                        help="matmul versions at x86_avx512, or paths to .mcpl files "
                        "(default: %(default)s)")
    parser.add_argument("--no-pocl", action="store_true", help="leave PoCL out")
    parser.add_argument("--fastest", action="store_true",
                        help="the fastest repetition instead of the median")
    parser.add_argument("--clock", choices=("wall", "thread"), default="wall",
                        help="thread: CPU time of the calling thread, fastest repetition "
                        "(one thread only; leaves PoCL out)")
    parser.add_argument("--sweep", action="store_true",
                        help="instead: time every configuration of the tune space (OpenMP only)")
    args = parser.parse_args(argv)
    if args.clock == "thread" and not _one_thread():
        parser.error("--clock thread needs OMP_NUM_THREADS=1 and OPENBLAS_NUM_THREADS=1")

    from mcl import pipeline
    from mcl.hdl.library import default_library

    library = default_library()
    versions = [_version(v) for v in args.versions]
    threads = " ".join(f"{k}={os.environ[k]}" for k in _THREAD_VARIABLES if k in os.environ)
    print(f"# {' '.join([threads, 'python', 'benchmarks/openmp_matmul.py', *sys.argv[1:]])}"
          .replace("#  ", "# "))
    if args.sweep:
        print(f"# load average (1 min) before: {os.getloadavg()[0]:.1f}")
        kernel = _kernel(versions[0])
        _sweep(pipeline.checked_at(kernel, [], library), kernel, library, args.sizes[0],
               args.repeat, args.clock, args.fastest or args.clock == "thread")
        print(f"# load average (1 min) after: {os.getloadavg()[0]:.1f}")
        return 0
    _table(versions, library, args.sizes, args.repeat, args.clock,
           pocl=not args.no_pocl and args.clock == "wall",
           fastest=args.fastest or args.clock == "thread")
    return 0


def _table(versions: list[str], library: Any, sizes: list[int], repeat: int, clock: str,
           pocl: bool, fastest: bool) -> None:
    from mcl import pipeline
    from mcl.backends.opencl.runner import OpenCLSession, describe, select_device
    from mcl.backends.openmp import backend
    from mcl.quiet_threads import wait_until_quiet
    from mcl.tune.tuned_file import best_tuned

    checked = {v: pipeline.checked_at(_kernel(v), [], library) for v in versions}
    openmp = {}
    for v in versions:
        openmp[v] = backend.session(pipeline.generate(checked[v], TARGET, library,
                                                      language="openmp"))
    device = select_device() if pocl else None
    written = {v: OpenCLSession(pipeline.generate(checked[v], TARGET, library), device)
               for v in versions} if pocl else {}
    timer, pick = _timing(clock, fastest)
    for session in openmp.values():
        session.clock = timer
    name = next(iter(openmp.values())).device_name()
    pocl_name = f"; PoCL: {describe(device)}" if pocl else ""
    print(f"# OpenMP: {name}{pocl_name}; numpy {np.__version__}; clock: "
          f"{'CPU time of the calling thread' if clock == 'thread' else 'wall time'}, "
          f"{'fastest' if fastest else 'median'} of {repeat} repetitions")
    print(f"# load average (1 min) before: {os.getloadavg()[0]:.1f}")
    print(f"{'n=m=p':>6} {'backend':<48} {'ms':>9} {'GFLOP/s':>8} {'/ numpy':>8}"
          + (f" {'/ PoCL':>7}" if pocl else ""))
    for n in sizes:
        rng = np.random.default_rng(0)
        a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        run_args = {"n": n, "m": n, "p": n, "c": np.zeros((n, n), np.float32), "a": a, "b": b}
        expected = a @ b
        flops = 2.0 * n * n * n
        times: dict[str, float] = {}

        numpy_times = []
        wait_until_quiet()
        for _ in range(repeat + 1):
            start = timer()
            a @ b
            numpy_times.append(timer() - start)
        times["numpy a @ b (OpenBLAS)"] = pick(numpy_times[1:])

        sessions: list[tuple[str, Any]] = []
        for v in versions:
            if pocl:
                sessions.append((f"{Path(v).stem} PoCL (as written)", written[v]))
                tuned = best_tuned(_kernel(v), TARGET, describe(device),
                                   {"n": n, "m": n, "p": n})
                if tuned is not None:
                    generated = pipeline.generate(checked[v], TARGET, library,
                                                  overrides=tuned.constants)
                    constants = ", ".join(f"{k}={x}" for k, x in tuned.constants.items())
                    sessions.append((f"{Path(v).stem} PoCL (.tuned.toml: {constants})",
                                     OpenCLSession(generated, device)))
            sessions.append((f"{Path(v).stem} OpenMP (as written)", openmp[v]))
        for label, session in sessions:
            wait_until_quiet()  # the runtime timed before it may still spin its workers
            result = session.run("matmul", run_args, repeat + 1)
            _check(label, result.outputs["c"], expected)
            times[label] = pick(result.kernel_times_s[1:])

        numpy_s = times["numpy a @ b (OpenBLAS)"]
        pocl_times = [s for label, s in times.items() if " PoCL " in label]
        for label, seconds in times.items():
            row = (f"{n:>6} {label:<48} {seconds * 1e3:>9.2f} {flops / seconds / 1e9:>8.1f} "
                   f"{numpy_s / seconds:>8.2f}")
            if pocl:
                row += f" {min(pocl_times) / seconds:>7.2f}"
            print(row)
    print(f"# load average (1 min) after: {os.getloadavg()[0]:.1f}")
    print("# / numpy" + (", / PoCL" if pocl else "") + ": speed relative to numpy's"
          + (" and to the fastest PoCL run" if pocl else "") + " (time ratio; > 1 is faster)")


def _timing(clock: str, fastest: bool) -> tuple[Callable[[], float],
                                                 Callable[[list[float]], float]]:
    """The clock that times numpy and the OpenMP calls, and how one time is picked from
    the repetitions: the median, or the fastest (a slice the system gave to another job
    can only lengthen a repetition)."""
    timer = time.thread_time if clock == "thread" else time.perf_counter
    return timer, (min if fastest else statistics.median)


def _sweep(checked: Any, kernel: Path, library: Any, n: int, repeat: int, clock: str,
           fastest: bool) -> None:
    """Every allowed configuration of the tune space through OpenMP at n = m = p, and the
    fastest against numpy's matmul timed before and after the sweep."""
    from mcl import pipeline
    from mcl.backends.openmp import backend
    from mcl.quiet_threads import wait_until_quiet
    from mcl.tune.space import constant_values, rule_problems, space_from_source

    space = space_from_source(checked.program.main, kernel, {})
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    expected = a @ b
    run_args = {"n": n, "m": n, "p": n, "c": np.zeros((n, n), np.float32), "a": a, "b": b}
    flops = 2.0 * n * n * n
    timer, pick = _timing(clock, fastest)

    def numpy_seconds() -> float:
        runs = []
        wait_until_quiet()
        for _ in range(repeat + 1):
            start = timer()
            a @ b
            runs.append(timer() - start)
        return pick(runs[1:])

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
        session.clock = timer
        wait_until_quiet()
        result = session.run("matmul", run_args, repeat + 1)
        _check(name, result.outputs["c"], expected)
        seconds = pick(result.kernel_times_s[1:])
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
