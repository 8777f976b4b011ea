"""The feedback's registers per thread against the count NVIDIA's compiler gives, without a
GPU: every kernel written at hopper is generated as CUDA, compiled by NVRTC for sm_90
(mcl.backends.cuda.nvrtc) and its cubin read (mcl.backends.cuda.cubin); the estimate is the one the
occupancy analysis uses without a compiler (`Context.estimated_registers_per_thread`:
every register declaration and loop variable of the function, docs/feedback.md
"Occupancy"); the feedback's figure is the one `mcl check --feedback` uses, with the CUDA
backend's counter installed as the command line installs it (mcl.backends.register_count).

    python benchmarks/registers_nvrtc.py [--out FILE.json] [KERNEL.mcpl ...]

Prints, for each kernel file, the largest count of its CUDA kernels (a function with
several foreach nests becomes several kernels, each with its own count), the feedback's
figure, the estimate and its ratio; then how many feedback figures equal the compiler's
count, the geometric mean of the estimate's ratios and how many are within 50%.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcl.hdl.library import HwdLibrary

REPO = Path(__file__).resolve().parent.parent


def measure(path: str, library: HwdLibrary
            ) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    """The compiler's count of each CUDA kernel of `path`, and the estimate and the
    feedback's figure (the compiler's count where the counter gives one) of each of its
    functions."""
    from mcl import pipeline
    from mcl.backends import register_count
    from mcl.backends.cuda.cubin import register_counts
    from mcl.backends.cuda.nvrtc import compile_cuda
    from mcl.feedback.analysis import AnalysisContext
    from mcl.feedback.compiler_registers import use_counter
    from mcl.feedback.kernel_api import Kernel
    from mcl.feedback.registry import kernels_of

    program = pipeline.check_source(path, [], library).checked()
    if program is None or program.errors:
        raise SystemExit(f"{path}: does not check clean")
    generated = pipeline.generate(program, "hopper", library, language="cuda")
    counts = register_counts(compile_cuda(generated.source, path, "sm_90").cubin)
    estimates, figures = {}, {}
    for function in kernels_of(program.program.main):
        context = AnalysisContext(function, program, library.get(function.hwd), {})
        kernel = Kernel(context.facts, {}).context
        estimates[function.name] = kernel.estimated_registers_per_thread().value
        use_counter(register_count)
        try:
            figures[function.name] = kernel.registers_per_thread().value
        finally:
            use_counter(None)
    return counts, estimates, figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, help="write the figures as JSON")
    parser.add_argument("kernels", nargs="*")
    args = parser.parse_args(argv)
    sys.setrecursionlimit(100_000)
    from mcl.hdl.library import default_library

    library = default_library()  # once: every kernel is compiled at hopper
    paths = args.kernels or sorted(glob.glob(str(REPO / "kernels/*/hopper_*.mcpl")))
    rows: list[dict[str, object]] = []
    ratios: list[float] = []
    exact = 0
    print(f"{'kernel':45s} {'compiler':>8} {'feedback':>8} {'estimate':>8} {'ratio':>6}")
    for path in paths:
        counts, estimates, figures = measure(path, library)
        compiler, estimate = max(counts.values()), max(estimates.values())
        figure = max(figures.values())
        exact += figure == compiler
        ratios.append(estimate / compiler)
        rows.append({"kernel": path, "compiler": counts, "estimate": estimates,
                     "feedback": figures})
        resolved = Path(path).resolve()
        shown = str(resolved.relative_to(REPO)) if resolved.is_relative_to(REPO) else path
        print(f"{shown:45s} {compiler:8d} {figure:8d} {estimate:8d} "
              f"{estimate / compiler:6.2f}", flush=True)
    mean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    close = sum(abs(r - 1) <= 0.5 for r in ratios)
    print(f"feedback figure = compiler's count for {exact} of {len(ratios)}")
    print(f"estimate / compiler: geometric mean {mean:.2f}, within 50% for {close} of "
          f"{len(ratios)}, from {min(ratios):.2f} to {max(ratios):.2f}")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
