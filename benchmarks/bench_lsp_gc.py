"""The check behind the editor's diagnostics after code edits, and the cyclic garbage
collector's share of it, in one process as the language server has it (mcl.lsp.heap).

    python benchmarks/bench_lsp_gc.py [KERNEL] [--module LINES] [--repeat N]

For KERNEL (default spmv/hopper_v17), or the module of `--module` lines that
benchmarks/bench_lsp_typing.py types into, the text is checked with a number inside the
last function changed and back, N times each, three ways: the collector as Python
starts it, after `mcl.lsp.heap.settle` (where this checkout has it), and off. Figures:
the median and mean CPU ms of a check (`time.process_time`) and the collector's own ms per
check (gc.callbacks, wall time of each collection), by generation.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script; PYTHONPATH's mcl first (another checkout)
    sys.path.append(str(REPO))
from benchmarks.bench_lsp_typing import DEFAULT, constant_edit, module_of  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kernel", nargs="?", default="spmv/hopper_v17")
    parser.add_argument("--module", type=int, metavar="LINES")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--collector", choices=("on", "settled", "off"), default=None,
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.collector is None:  # each way in a process of its own
        import subprocess

        for way in ("on", "settled", "off"):
            subprocess.run([sys.executable, __file__, *sys.argv[1:], "--collector", way],
                           check=True)
        return 0
    sys.setrecursionlimit(100_000)
    from mcl.lsp.analysis import Libraries, check_document
    from mcl.lsp.config import Effective
    from mcl.mcpl import parse
    from mcl.source_files import set_overlay

    parse.reuse_definitions()
    if args.module:
        paths = [REPO / "kernels" / f"{k}.mcpl" for k in DEFAULT]
        text = module_of(paths, args.module)
        path = (paths[0].parent / f"bench_module_{text.count(chr(10))}_lines.mcpl").resolve()
        name = f"module of {text.count(chr(10))} lines"
    else:
        path = (REPO / "kernels" / f"{args.kernel}.mcpl").resolve()
        text, name = path.read_text(), args.kernel
    start, end, number = constant_edit(text)
    edited = text[:start] + number + text[end:]
    libraries = Libraries()

    def check(buffer: str) -> None:
        set_overlay(path, buffer)
        check_document(path, Effective(), libraries)

    for buffer in (text, edited, text):
        check(buffer)
    if args.collector == "off":
        gc.disable()
    elif args.collector == "settled":
        try:
            from mcl.lsp.heap import settle
        except ImportError:
            print(f"{name}: collector settled: this checkout has no mcl.lsp.heap")
            return 0
        settle()
    spent = [0.0, 0.0, 0.0]
    began = [0.0]

    def collecting(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            began[0] = time.perf_counter()
        else:
            spent[info["generation"]] += time.perf_counter() - began[0]

    gc.callbacks.append(collecting)
    seconds = []
    for _ in range(args.repeat):
        for buffer in (edited, text):
            t = time.process_time()
            check(buffer)
            seconds.append(time.process_time() - t)
    count = len(seconds)
    print(f"{name}: collector {args.collector}: check CPU median "
          f"{statistics.median(seconds) * 1000:.1f} ms, mean {statistics.mean(seconds) * 1000:.1f}"
          f" ms, max {max(seconds) * 1000:.1f} ms over {count} checks; collections per check "
          + ", ".join(f"generation {g} {spent[g] / count * 1000:.1f} ms" for g in range(3)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
