"""How `mcl check` grows with the shape of its input (reliability: deep `for` nests, long
straight-line bodies, many small functions, megabytes of code).

    python benchmarks/bench_growth.py [--cases depth,nofb-depth,...] [--sizes CASE=N,N,...]
                                      [--checkout DIR]

Each case builds one source per size N and runs `mcl check` on it in a fresh process
(`python -m mcl`, the parse cache off: `MCL_CACHE_DIR=`), as a user would. Printed per
run: the CPU time of the process (user + system, which a loaded machine disturbs far
less than wall time), the wall time, the source's size, its speed in KB of source per
CPU second, and the CPU time per unit of N relative to the smallest N of the case: near
1 for linear growth, doubling with every doubling of N for quadratic growth.

Cases (the sizes of the reliability report that found them):
- `depth`: N nested `for (int kJ = 0; kJ < 2; kJ++)` around one statement, `--feedback`;
- `nofb-depth`: the same nest, plain `mcl check`;
- `statements`: N straight-line statements `a[i] = a[i] + J.0;`, `--feedback`;
- `functions`: N small kernels of one statement each, `--feedback`;
- `megabytes`: N MB of renamed copies of kernels/matmul/perfect.mcpl, plain `mcl check`.

`--checkout DIR` runs the mcl package of another checkout (for instance a worktree of an
older commit) with this interpreter, for a before/after table in one sitting.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
KERNEL = ("perfect void k(int n, main float[n] a) {{\n"
          "  foreach (int i in n threads) {{\n{body}\n  }}\n}}\n")


def for_nest(n: int) -> str:
    body = "a[i] = a[i] + 1.0;"
    for k in reversed(range(n)):
        body = f"for (int k{k} = 0; k{k} < 2; k{k}++) {{ {body} }}"
    return KERNEL.format(body="    " + body)


def statements(n: int) -> str:
    return KERNEL.format(body="\n".join(f"    a[i] = a[i] + {k}.0;" for k in range(n)))


def functions(n: int) -> str:
    one = KERNEL.format(body="    a[i] = a[i] + 1.0;")
    return "".join(one.replace("void k(", f"void k{f}(") for f in range(n))


def megabytes(n: int) -> str:
    kernel = (REPO / "kernels/matmul/perfect.mcpl").read_text(encoding="utf-8")
    parts, size, i = [], 0, 0
    while size < n * 1024 * 1024:
        part = re.sub(r"\bmatmul\b", f"matmul_{i}", kernel)
        parts.append(part)
        size += len(part) + 1
        i += 1
    return "\n".join(parts)


CASES: dict[str, tuple[Callable[[int], str], list[str], list[int]]] = {
    "depth": (for_nest, ["--feedback"], [80, 160, 300, 600]),
    "nofb-depth": (for_nest, [], [400, 800, 1600]),
    "statements": (statements, ["--feedback"], [1000, 4000, 16000]),
    "functions": (functions, ["--feedback"], [250, 1000]),
    "megabytes": (megabytes, [], [1, 5]),
}


def run_check(path: Path, flags: list[str], checkout: Path | None) -> tuple[float, float, str]:
    """CPU seconds, wall seconds and the last line of `mcl check FLAGS PATH`."""
    env = dict(os.environ, MCL_CACHE_DIR="")
    if checkout is not None:
        env["PYTHONPATH"] = str(checkout)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    # run in the source's folder: `python -m` puts the working folder first on the path,
    # before PYTHONPATH, so the repository's own package would shadow `--checkout`
    done = subprocess.run([sys.executable, "-m", "mcl", "check", *flags, str(path)],
                          capture_output=True, text=True, env=env, check=False,
                          cwd=path.parent)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = done.stdout.strip().splitlines() or [f"exit {done.returncode}"]
    return cpu, wall, lines[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--sizes", action="append", default=[],
                        help="CASE=N,N,... (repeatable): other sizes for one case")
    parser.add_argument("--checkout", type=Path, help="run the mcl package of this checkout")
    args = parser.parse_args()
    sizes = {case: list(default) for case, (_, _, default) in CASES.items()}
    for spec in args.sizes:
        case, _, values = spec.partition("=")
        sizes[case] = [int(v) for v in values.split(",")]
    print(f"{'case':>11} {'N':>6} {'KB':>7} {'CPU s':>8} {'wall s':>8} {'KB/CPU s':>9} "
          f"{'CPU/N vs first':>15}  last line")
    with tempfile.TemporaryDirectory() as tmp:
        for case in [c for c in args.cases.split(",") if c]:
            make, flags, _ = CASES[case]
            first: float | None = None
            for n in sizes[case]:
                path = Path(tmp) / f"{case}{n}.mcpl"
                path.write_text(make(n), encoding="utf-8")
                kb = path.stat().st_size / 1024
                cpu, wall, last = run_check(path, flags, args.checkout)
                per = cpu / n
                first = per if first is None else first
                print(f"{case:>11} {n:>6} {kb:7.0f} {cpu:8.2f} {wall:8.2f} {kb / cpu:9.0f} "
                      f"{per / first:15.2f}  {last[:60]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
