"""How the stages scale with chains of `^` and nests of `if` (reliability round 3: codegen
was exponential in a `^` chain, the parser quadratic in it, feedback quadratic or worse in
`if` nesting).

    python benchmarks/bench_chain_scaling.py [--sizes 100,200,400,800] [--stages ...]

For each size N it builds a kernel whose body is a chain `b[i] ^ b[i] ^ ...` of N terms
(stages `parse`, `check`, `codegen`) or N nested `if (i > k) { ... }` (stage
`feedback` at the perfect level, `fermi` with the description's feedback functions), and
times the stage in one warm process in CPU time (`time.process_time`, which a loaded
machine disturbs far less than wall time). Printed:
seconds, and the time per unit of size relative to the smallest size, a ratio that stays
near 1 for linear work and doubles with every doubling of N for quadratic work.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STAGES = ("parse", "check", "codegen", "feedback", "fermi")


def power_chain(n: int) -> str:
    return ("perfect void k(int n, main float[n] a, main float[n] b) {\n"
            "  foreach (int i in n threads) {\n    a[i] = " + " ^ ".join(["b[i]"] * n)
            + ";\n  }\n}\n")


def if_nest(n: int) -> str:
    body = "a[i] = a[i] + 1.0;"
    for k in range(n):
        body = f"if (i > {k}) {{ {body} }}"
    return ("perfect void k(int n, main float[n] a) {\n  foreach (int i in n threads) {\n    "
            + body + "\n  }\n}\n")


def stage(name: str, path: Path, out: Path) -> Callable[[], object]:
    from mcl.cli import main
    from mcl.hdl.library import default_library
    from mcl.mcpl.check import check_program
    from mcl.mcpl.loader import load_program
    from mcl.mcpl.parse import parse_file

    library = default_library()
    if name == "parse":
        return lambda: parse_file(path)
    if name == "check":
        return lambda: check_program(load_program(path, [], library), library)
    if name == "codegen":
        return lambda: main(["codegen", "--target", "fermi", "-o", str(out), str(path)])
    if name == "fermi":  # with the description's feedback functions (divergence, ...)
        return lambda: main(["check", "--level", "fermi", "-D", "n=1000", str(path)])
    return lambda: main(["check", "--feedback", "-D", "n=1000", str(path)])


def measure(stages: list[str], sizes: list[int]) -> list[tuple[str, int, float]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in stages:
            for n in sizes:
                path = Path(tmp) / f"{name}{n}.mcpl"
                path.write_text(if_nest(n) if name in ("feedback", "fermi") else power_chain(n),
                                encoding="utf-8")
                run = stage(name, path, Path(tmp) / f"out{name}{n}")
                with contextlib.redirect_stdout(io.StringIO()), \
                        contextlib.redirect_stderr(io.StringIO()):  # the stages' own output
                    start = time.process_time()
                    run()
                    rows.append((name, n, time.process_time() - start))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,200,400,800")
    parser.add_argument("--stages", default=",".join(STAGES))
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    stages = [s for s in args.stages.split(",") if s]
    rows: list[tuple[str, int, float]] = []
    sys.setrecursionlimit(200_000)  # as `mcl` runs (mcl/deep_stack.py)
    threading.stack_size(512 * 1024 * 1024)
    worker = threading.Thread(target=lambda: rows.extend(measure(stages, sizes)))
    worker.start()
    worker.join()
    print(f"{'stage':>9} {'N':>6} {'CPU s':>8} {'s/N vs smallest N':>18}")
    base: dict[str, float] = {}
    for name, n, seconds in rows:
        per = seconds / n
        base.setdefault(name, per)
        print(f"{name:>9} {n:>6} {seconds:8.2f} {per / base[name]:18.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
