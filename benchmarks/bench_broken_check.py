"""CPU of the language server's check (`mcl.lsp.analysis.check_document`, in this process,
definitions reused as in the server) of each text typed key by key into the last function
of `bench_lsp_typing.py --module LINES`'s module: most of those texts do not parse.

    python benchmarks/bench_broken_check.py [--module LINES] [--out FILE]

Each line: the typed text, the CPU time of its check (`time.process_time`), whether its
program parsed, its number of diagnostics and the first. Then the median over the texts
that do not parse, and over those that parse (a check of the whole program). As in the
server after its first check, textX's metamodel is made and what is loaded is moved out
of the collector's way (`mcl.lsp.heap.settle`) before the texts are typed. Where
`check_document` takes the last good check (the server passes it while nothing else
changed), it is given the text's last good check, as the server does.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script
    sys.path.insert(0, str(REPO))
from benchmarks.bench_lsp_typing import DEFAULT, TYPED, body_start, module_of  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--module", type=int, default=2000, metavar="LINES")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    from mcl.lsp.analysis import Libraries, check_document
    try:  # as the server checks, where it keeps the last good check's diagnostics
        from mcl.lsp.broken_check import check_with_kept
    except ImportError:
        check_with_kept = None
    from mcl.lsp.config import ClientSettings, effective
    from mcl.mcpl.parse import reuse_definitions
    from mcl.source_files import set_overlay

    reuse_definitions(True)
    paths = [REPO / "kernels" / (n + ".mcpl") for n in DEFAULT]
    text = module_of(paths, args.module)
    path = paths[0].parent / f"bench_module_{text.count(chr(10))}_lines.mcpl"
    settings = effective(ClientSettings(), path)
    libraries = Libraries()
    takes_good = check_with_kept is not None
    good: tuple[str, object] | None = None

    def check(typed: str) -> tuple[float, object]:
        nonlocal good
        set_overlay(path, typed)
        start = time.process_time()
        if check_with_kept is not None:
            last = (typed, *good) if good is not None else None
            result = check_with_kept(path, settings, libraries, last)
        else:
            result = check_document(path, settings, libraries)
        seconds = time.process_time() - start
        if result.program is not None:
            good = (typed, result)
        return seconds, result

    check(text)
    check(text)  # warm
    try:  # as the server does after its first check
        from mcl.lsp.heap import settle
        from mcl.mcpl.parse import tree_builder
        tree_builder().metamodel  # noqa: B018 - made on first use
        settle()
    except ImportError:
        pass
    at = body_start(text) - 1
    keys = " " + TYPED
    lines = [f"check_document CPU per typed text, module of {text.count(chr(10))} lines; "
             f"{os.cpu_count()} CPUs; load average (1 min) {os.getloadavg()[0]:.1f} at the "
             f"start; last good check given: {takes_good}"]
    broken, parsing = [], []
    for n in range(1, len(keys) + 1):
        seconds, result = check(text[:at] + keys[:n] + text[at:])
        parsed = result.program is not None  # type: ignore[attr-defined]
        diagnostics = result.diagnostics  # type: ignore[attr-defined]
        (parsing if parsed else broken).append(seconds)
        first = diagnostics[0].message if diagnostics else ""
        lines.append(f"{keys[:n]!r:<28} {seconds * 1000:7.1f} ms  parsed={parsed!s:<5} "
                     f"{len(diagnostics):3d}  {first}")
    lines.append(f"texts that do not parse: {len(broken)}, median CPU "
                 f"{statistics.median(broken) * 1000:.1f} ms, max {max(broken) * 1000:.1f} ms; "
                 f"texts that parse: {len(parsing)}, median CPU "
                 f"{statistics.median(parsing) * 1000:.1f} ms, max {max(parsing) * 1000:.1f} ms; "
                 f"load average (1 min) {os.getloadavg()[0]:.1f} at the end")
    report = "\n".join(lines)
    print(report)
    if args.out:
        args.out.write_text(report + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
