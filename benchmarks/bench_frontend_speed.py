"""Speed of the MCPL front end: whole parse to the typed AST, in KB/s (goal: 100 KB/s).

    python benchmarks/bench_frontend_speed.py [--repeat N]

Times `parse_source` (the parse compiled from textX's Arpeggio parser by mcl/mcpl/peg.py,
the model built from its parse tree by mcl/mcpl/tree.py, the AST by mcl/mcpl/build.py) on
kernels/matmul/hopper_v2.mcpl, the largest shipped kernel, and on 1 MB sources made of
copies of it and of kernels/matmul/perfect.mcpl (functions renamed apart): a third of
hopper_v2 is comments, which parse fast; perfect.mcpl is nearly all code. Two peers,
measured in the same run on the same text: the same front end with Arpeggio's own parse
in place of the compiled one (`TreeModelBuilder.compiled` off: what peg.py saves), and
with textX's own parse and model construction (`metamodel().model_from_str`: what peg.py
and tree.py save together). CPU time of the process (`time.process_time`), which a
loaded machine disturbs far less than wall time; the median of N runs (the 1 MB sources:
of max(N // 10, 1)).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_frontend_scaling import source_of_size  # noqa: E402

KERNEL = REPO / "kernels" / "matmul" / "hopper_v2.mcpl"
DENSE = REPO / "kernels" / "matmul" / "perfect.mcpl"


def _median_seconds(work: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return statistics.median(times)


Row = tuple[str, int, float, float, float]  # source, bytes, ours, Arpeggio's, textX's (s)


def measure(repeat: int) -> list[Row]:
    from mcl.gc_pause import gc_paused
    from mcl.mcpl.build import build_module, declared_hwd_names
    from mcl.mcpl.parse import library_hwd_names, metamodel, parse_source, tree_builder

    def with_arpeggio_parse(text: str) -> Any:  # the peer: the front end before peg.py
        builder = tree_builder()
        compiled, builder.compiled = builder.compiled, None
        try:
            return parse_source(text, "peer.mcpl")
        finally:
            builder.compiled = compiled

    def with_textx_model(text: str) -> Any:  # the peer: the front end before tree.py
        with gc_paused():
            model = metamodel().model_from_str(text)
            names = set(library_hwd_names()) | declared_hwd_names(model)
            return build_module(model, text, "peer.mcpl", names)

    kernel = KERNEL.read_text(encoding="utf-8")
    dense = DENSE.read_text(encoding="utf-8")
    sources = [("hopper_v2.mcpl", kernel, repeat),
               ("1 MB of hopper_v2", source_of_size(kernel, 1024), max(repeat // 10, 1)),
               ("1 MB of perfect", source_of_size(dense, 1024), max(repeat // 10, 1))]
    parse_source(kernel)  # metamodel and tables built outside the timing
    with_arpeggio_parse(kernel)
    with_textx_model(kernel)
    rows = []
    for name, text, n in sources:
        ours = _median_seconds(lambda text=text: parse_source(text, "x.mcpl"), n)
        arpeggio = _median_seconds(lambda text=text: with_arpeggio_parse(text), n)
        textx = _median_seconds(lambda text=text: with_textx_model(text), n)
        rows.append((name, len(text.encode("utf-8")), ours, arpeggio, textx))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    result: list[Row] = []
    sys.setrecursionlimit(200_000)
    threading.stack_size(512 * 1024 * 1024)  # as `mcl` runs (mcl/deep_stack.py)
    worker = threading.Thread(target=lambda: result.extend(measure(args.repeat)))
    worker.start()
    worker.join()
    print(f"{'source':<18} {'bytes':>8} {'ms':>8} {'KB/s':>6} {'arpeggio ms':>11} "
          f"{'ratio':>5} {'textX ms':>8} {'ratio':>5}")
    for name, size, ours, arpeggio, textx in result:
        print(f"{name:<18} {size:>8} {ours * 1000:8.1f} {size / 1000 / ours:6.1f} "
              f"{arpeggio * 1000:11.1f} {ours / arpeggio:5.2f} {textx * 1000:8.1f} "
              f"{ours / textx:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
