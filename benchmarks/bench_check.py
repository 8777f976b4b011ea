"""How long `mcl check` takes on a kernel (issue 3: "well under a second, process start
included").

    python benchmarks/bench_check.py [KERNEL] [--repeat N]

Reports, for KERNEL (default kernels/matmul/perfect.mcpl):
  end to end:     `python -m mcl check --no-feedback KERNEL` as a user runs it: interpreter
                  start-up, imports, loading the HDL library, parsing, checking, printing
                  (without `--no-feedback` when the feedback stage is not installed);
  with feedback:  the same with the performance-feedback stage, when there is one;
  load + check:   load_program + check_program in a warm process (library loaded);
  check only:     check_program on an already loaded program.
It also confirms that checking imports none of sympy, numpy or pyopencl.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HEAVY = ("sympy", "numpy", "pyopencl")

_IMPORTS = (
    "import sys; from mcl.cli import main; main(['check', *{options!r}, {path!r}]); "
    "print(','.join(m for m in {heavy!r} if m in sys.modules), file=sys.stderr)"
)


def feedback_switch() -> list[str]:
    """`--no-feedback` when `mcl check` has a feedback stage, else nothing."""
    out = subprocess.run(
        [sys.executable, "-m", "mcl", "check", "--help"], capture_output=True, text=True
    )
    return ["--no-feedback"] if "--no-feedback" in out.stdout else []


def end_to_end(path: Path, repeat: int, options: list[str]) -> list[float]:
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "mcl", "check", *options, str(path)],
            capture_output=True,
            check=True,
        )
        runs.append(time.perf_counter() - t)
    return runs


def heavy_imports(path: Path, options: list[str]) -> str:
    out = subprocess.run(
        [sys.executable, "-c", _IMPORTS.format(options=options, path=str(path), heavy=HEAVY)],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stderr.strip().splitlines()[-1] if out.stderr.strip() else ""


def in_process(path: Path, repeat: int) -> tuple[list[float], list[float]]:
    from mcl.hdl.library import default_library
    from mcl.mcpl.check import check_program
    from mcl.mcpl.loader import load_program

    library = default_library()
    check_program(load_program(path, (), library), library)  # warm caches (metamodel)
    load_runs, check_runs = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        program = load_program(path, (), library)
        t_loaded = time.perf_counter()
        check_program(program, library)
        t_checked = time.perf_counter()
        load_runs.append(t_checked - t)
        check_runs.append(t_checked - t_loaded)
    return load_runs, check_runs


def _line(label: str, runs: list[float]) -> str:
    return (
        f"{label:14s} median {statistics.median(runs) * 1000:7.1f} ms   "
        f"min {min(runs) * 1000:7.1f} ms   ({len(runs)} runs)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernel", nargs="?", default=str(REPO / "kernels/matmul/perfect.mcpl"))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    path = Path(args.kernel)
    load_runs, check_runs = in_process(path, args.repeat * 4)
    switch = feedback_switch()
    print(f"mcl check {' '.join(switch)} {path}")
    print(_line("end to end", end_to_end(path, args.repeat, switch)))
    if switch:
        print(_line("with feedback", end_to_end(path, args.repeat, [])))
    print(_line("load + check", load_runs))
    print(_line("check only", check_runs))
    heavy = heavy_imports(path, switch)
    print(f"heavy modules imported: {heavy or 'none'} (of {', '.join(HEAVY)})")


if __name__ == "__main__":
    main()
