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
*privatise*).
"""

from __future__ import annotations

import argparse
import re
import sys

KINDS = ("LDG", "ATOMS", "ATOMG", "REDG", "BRA", "BAR")


def schedule(path: str, level: str) -> tuple[dict[str, int], list[str]]:
    """The registers of each CUDA kernel of `path` at `level` and the kinds of its
    instructions of KINDS, in program order."""
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
    for row in _disassemble(tool, cubin).splitlines():
        match = re.search(r"\*/\s+(?:@!?U?P\w+\s+)?([A-Z]+)[.\s]", row)
        if match and match.group(1) in KINDS:
            kinds.append(match.group(1))
    return register_counts(cubin), kinds


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
    args = parser.parse_args(argv)
    sys.setrecursionlimit(100_000)
    for path in args.kernels:
        registers, kinds = schedule(path, args.level)
        print(f"== {path} at {args.level}: registers {registers}; "
              f"at most {longest_run(kinds)} global loads in a row")
        print("   " + " ".join(kinds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
