"""How NVRTC schedules a kernel's global loads against their uses, without a GPU: each
kernel file is checked at hopper (translated there where it is written higher), generated
as CUDA, compiled by NVRTC for sm_90 and disassembled by nvdisasm (as the time model's
machine-code counts are, mcl.backends.cuda.line_instructions).

    python benchmarks/load_schedule.py KERNEL.mcpl [-D NAME=VALUE ...] [...]

Prints, for each file, its registers per thread, the sequence of its global loads
(LDG), shared-memory atomics (ATOMS), global atomics (REDG/ATOMG), branches (BRA) and
barriers (BAR) in program order, and the most loads issued one after another before an
instruction of another of those kinds: how many loads a thread has in flight where each
loaded value feeds an atomic update (a histogram's bins, docs/refinements.md,
*privatise*). `--also FFMA,LDS,STS,LDL,STL` adds those kinds, runs of one kind counted
(`FFMA*64`): where a prefetch's loads stand among the multiply-adds, and local-memory
spills (docs/refinements.md, *tile-2d-prefetch*); with LDS among them, the shared-memory
reads by width too (`LDS.128`: one 128-bit read, *tile-2d-prefetch*'s `vector_reads`).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter

KINDS = ("LDG", "ATOMS", "ATOMG", "REDG", "BRA", "BAR")


def schedule(path: str, level: str, kinds_shown: tuple[str, ...] = KINDS
             ) -> tuple[dict[str, int], list[str], Counter[str]]:
    """The registers of each CUDA kernel of `path` at `level`, the kinds of its
    instructions of KINDS, in program order, and the count of each of its shared-memory
    reads by width (`LDS`, `LDS.64`, `LDS.128`)."""
    from mcl import pipeline
    from mcl.backends.cuda.cubin import register_counts
    from mcl.backends.cuda.line_instructions import _disassemble, _nvdisasm
    from mcl.backends.cuda.nvrtc import compile_cuda
    from mcl.hdl.library import default_library

    library = default_library()
    checked = pipeline.check_source(path, [], library).checked()
    if checked is None or checked.errors:
        raise SystemExit(f"{path}: does not check clean")
    generated = pipeline.generate(checked, level, library, language="cuda")
    cubin = compile_cuda(generated.source, path, "sm_90").cubin
    tool = _nvdisasm()
    if tool is None:
        raise SystemExit("nvdisasm is not installed (pip install nvidia-cuda-nvdisasm)")
    kinds = []
    shared: Counter[str] = Counter()
    for row in _disassemble(tool, cubin).splitlines():
        match = re.search(r"\*/\s+(?:@!?U?P\w+\s+)?([A-Z]+)((?:\.\w+)*)[\s;]", row)
        if match and match.group(1) in kinds_shown:
            kinds.append(match.group(1))
        if match and match.group(1) == "LDS":
            width = re.search(r"\.(64|128)\b", match.group(2))
            shared["LDS" + (f".{width.group(1)}" if width else "")] += 1
    return register_counts(cubin), kinds, shared


def longest_run(kinds: list[str], kind: str = "LDG") -> int:
    """The most instructions of `kind` one after another."""
    best = run = 0
    for k in kinds:
        run = run + 1 if k == kind else 0
        best = max(best, run)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("kernels", nargs="+")
    parser.add_argument("--level", default="hopper")
    parser.add_argument("--also", default="", help="more opcodes, comma-separated")
    args = parser.parse_args(argv)
    sys.setrecursionlimit(100_000)
    shown = KINDS + tuple(k for k in args.also.split(",") if k)
    for path in args.kernels:
        registers, kinds, shared = schedule(path, args.level, shown)
        print(f"== {path} at {args.level}: registers {registers}; "
              f"at most {longest_run(kinds)} global loads in a row")
        print("   " + " ".join(runs(kinds) if args.also else kinds))
        if "FFMA" in kinds:
            before, among, after = cover(kinds)
            print(f"   FFMA {kinds.count('FFMA')}: {among} global loads among them, "
                  f"{before} FFMA before the first, {after} after the last; "
                  f"local-memory accesses (spills) {kinds.count('LDL') + kinds.count('STL')}")
        if "LDS" in shown:
            print("   shared-memory reads by width: "
                  + ", ".join(f"{k} {v}" for k, v in sorted(shared.items())))
    return 0


def cover(kinds: list[str]) -> tuple[int, int, int]:
    """The global loads issued among the multiply-adds (after the first FFMA: a
    prefetch's), the FFMAs before the first of them and after the last (what hides
    their latency in the thread)."""
    first = kinds.index("FFMA")
    loads = [n for n, k in enumerate(kinds) if k == "LDG" and n > first]
    if not loads:
        return kinds.count("FFMA"), 0, 0
    ffma = [n for n, k in enumerate(kinds) if k == "FFMA"]
    return (sum(1 for n in ffma if n < loads[0]), len(loads),
            sum(1 for n in ffma if n > loads[-1]))


def runs(kinds: list[str]) -> list[str]:
    """`kinds` with each run of one kind as KIND*COUNT (a run of one as KIND)."""
    out: list[str] = []
    for kind in kinds:
        if out and out[-1].split("*")[0] == kind:
            count = int(out[-1].split("*")[1]) if "*" in out[-1] else 1
            out[-1] = f"{kind}*{count + 1}"
        else:
            out.append(kind)
    return out


if __name__ == "__main__":
    raise SystemExit(main())
