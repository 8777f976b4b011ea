"""Speed of the MCPL front end: whole parse to the typed AST, in KB/s (goal: 100 KB/s).

    python benchmarks/bench_frontend_speed.py [--repeat N]

Times `parse_source` (textX's parser, the model built from its parse tree by
mcl/mcpl/tree.py, the AST by mcl/mcpl/build.py) on kernels/matmul/hopper_v2.mcpl, the
largest shipped kernel, and on 1 MB sources made of copies of it and of
kernels/matmul/perfect.mcpl (functions renamed apart): a third of hopper_v2 is comments,
which parse fast; perfect.mcpl is nearly all code. The peer, measured in the same run on
the same text, is the same front end with textX's own model construction
(`metamodel().model_from_str`) in place of tree.py: the ratio is what building the model
from the parse tree saves. CPU time of the process
(`time.process_time`), which a loaded machine disturbs far less than wall time; the
median of N runs (the 1 MB source: of max(N // 10, 1)).
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


def measure(repeat: int) -> list[tuple[str, int, float, float]]:
    from mcl.gc_pause import gc_paused
    from mcl.mcpl.build import build_module, declared_hwd_names
    from mcl.mcpl.parse import library_hwd_names, metamodel, parse_source

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
    with_textx_model(kernel)
    rows = []
    for name, text, n in sources:
        ours = _median_seconds(lambda text=text: parse_source(text, "x.mcpl"), n)
        peer = _median_seconds(lambda text=text: with_textx_model(text), n)
        rows.append((name, len(text.encode("utf-8")), ours, peer))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    result: list[tuple[str, int, float, float]] = []
    sys.setrecursionlimit(200_000)
    threading.stack_size(512 * 1024 * 1024)  # as `mcl` runs (mcl/deep_stack.py)
    worker = threading.Thread(target=lambda: result.extend(measure(args.repeat)))
    worker.start()
    worker.join()
    print(f"{'source':<20} {'bytes':>9} {'ms':>9} {'KB/s':>7} {'peer ms':>9} "
          f"{'peer KB/s':>9} {'ratio':>6}")
    for name, size, ours, peer in result:
        print(f"{name:<20} {size:>9} {ours * 1000:9.1f} {size / 1000 / ours:7.1f} "
              f"{peer * 1000:9.1f} {size / 1000 / peer:9.1f} {ours / peer:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
