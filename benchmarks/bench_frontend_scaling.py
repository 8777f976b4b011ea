"""Does the MCPL front end take time linear in the size of the source? (issue 20; goal:
at least 100 KB/s)

    python benchmarks/bench_frontend_scaling.py [--sizes 10,100,1000,5000] [--kernel FILE]

Builds sources of the given sizes in KB from copies of a kernel (default
kernels/matmul/perfect.mcpl, functions renamed apart), and times in one warm process
(HDL library loaded) `load_program` (parse + build the AST) and `check_program`, in CPU
time of the process (`time.process_time`), which a loaded machine disturbs far less
than wall time. Prints KB/s per size and the time per KB relative to the smallest size:
a ratio that stays near 1 is linear; one that grows with size is superlinear.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def source_of_size(kernel: str, kb: int) -> str:
    parts, size, i = [], 0, 0
    name = re.search(r"\bvoid\s+(\w+)\s*\(", kernel)
    assert name, "the kernel has no function"
    while size < kb * 1024:
        part = re.sub(rf"\b{name.group(1)}\b", f"{name.group(1)}_{i}", kernel)
        parts.append(part)
        size += len(part) + 1
        i += 1
    return "\n".join(parts)


def measure(sizes: list[int], kernel_path: Path) -> list[tuple[int, float, float]]:
    from mcl.hdl.library import default_library
    from mcl.mcpl.check import check_program
    from mcl.mcpl.loader import load_program

    library = default_library()
    kernel = kernel_path.read_text(encoding="utf-8")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kb in sizes:
            path = Path(tmp) / f"size{kb}.mcpl"
            path.write_text(source_of_size(kernel, kb), encoding="utf-8")
            start = time.process_time()
            program = load_program(path, [], library)
            loaded = time.process_time()
            check_program(program, library)
            done = time.process_time()
            rows.append((kb, loaded - start, done - loaded))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10,100,1000", help="sizes in KB (default 10,100,1000)")
    parser.add_argument("--kernel", type=Path, default=REPO / "kernels/matmul/perfect.mcpl")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    result: list[tuple[int, float, float]] = []
    # Deep trees need a deep stack, as `mcl` itself runs (mcl/deep_stack.py).
    sys.setrecursionlimit(200_000)
    threading.stack_size(512 * 1024 * 1024)
    worker = threading.Thread(target=lambda: result.extend(measure(sizes, args.kernel)))
    worker.start()
    worker.join()
    base = (result[0][1] + result[0][2]) / result[0][0]
    print(f"{'KB':>6} {'load s':>8} {'check s':>8} {'KB/s':>8} {'s/KB vs smallest':>17}")
    for kb, load, check in result:
        total = load + check
        print(f"{kb:>6} {load:8.2f} {check:8.2f} {kb / total:8.1f} {total / kb / base:17.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
