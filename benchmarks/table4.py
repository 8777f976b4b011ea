"""The GPU Table IV rows of docs/performance.md, made from the JSON files that
benchmarks/applications.py writes (`--json`), never typed by hand.

    python benchmarks/table4.py benchmarks/results/A.json [B.json ...]   # print it
    python benchmarks/table4.py --write docs/performance.md              # refresh it
    python benchmarks/table4.py --write docs/performance-log.md          # and the log's

With --write, the block between `<!-- table4: FILE ... -->` and `<!-- end table4 -->` in
the document is replaced by the table of the files its first line names. Each row is one
application, size and input kind of one run: the naive version, the best version, every
peer of the same run and the ratios, and for GB/s applications the share of the copy
bandwidth measured in the same run (applications.py's own figures: its Case decides what
is best and what counts). A run through both backends names the backend of its best version
and compares it with perfect through the same backend.
"""

from __future__ import annotations

import json
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script
    sys.path.insert(0, str(REPO))
from benchmarks import doc_blocks  # noqa: E402
from benchmarks.applications import Case, Row, _fmt, _ratio  # noqa: E402

ROW_FIELDS = {f.name for f in fields(Row)}
BACKEND_NAMES = {"opencl": "OpenCL", "cuda": "CUDA"}


def cases(run: dict[str, Any]) -> list[Case]:
    """The cases of one applications.py JSON file, as the script measured them."""
    out = []
    for c in run["cases"]:
        rows = [Row(**{k: v for k, v in r.items() if k in ROW_FIELDS}) for r in c["rows"]]
        out.append(Case(c["app"], c["unit"], c["defines"], c["work"], rows, c["inputs"]))
    return out


def _sizes(defines: dict[str, int]) -> str:
    return ", ".join(f"{k} = {v:,}" for k, v in defines.items())


def _best_and_perfect(case: Case) -> tuple[Row | None, Row | None, str]:
    """The best version, the naive one to compare it with and the best's label suffix.
    A run through both backends (`--backend both`) compares the best with perfect built
    the same way, and names the backend: the same kernel is not as fast through each."""
    best = case.best_version()
    if best is None or len({r.backend for r in case.measured("version")}) < 2:
        return best, case.perfect(), ""
    return best, case.on_backend(best.backend).perfect(), f", {BACKEND_NAMES[best.backend]}"


def row(case: Case, copy_gbs: float | None) -> str:
    best, perfect, backend = _best_and_perfect(case)
    peers = case.measured("peer")
    peer_text = "; ".join(f"{p.name}: {_fmt(case.rate(p))}" for p in peers) or "-"
    ratios = " / ".join(_ratio(p, best) for p in peers) or "-"
    share = "-"
    if case.unit == "GB/s" and best and copy_gbs:
        share = f"{(case.gbs(best) or 0.0) / copy_gbs * 100:.0f}%"
    best_text = f"{_fmt(case.rate(best))} ({best.name}{backend})" if best else "-"
    return (f"| {case.label} | {_sizes(case.defines)} | {case.unit} | "
            f"{_fmt(case.rate(perfect) if perfect else None)} | {best_text} | {peer_text} | "
            f"{_ratio(perfect, best)} | {ratios} | {share} |")


def table(files: list[str]) -> str:
    """The markdown table of the applications.py results in `files` (paths from REPO)."""
    lines = ["| application | size | unit | perfect | best mcl (version) | peers (same run) | "
             "best/perfect | best/peer | % of copy |",
             "|---|---|---|---:|---:|---|---:|---:|---:|"]
    devices = []
    for f in files:
        run = json.loads((REPO / f).read_text(encoding="utf-8"))
        copy_gbs = run.get("copy_gbs", {}).get("best")
        devices.append(f"{run.get('device', '?')}, copy {_fmt(copy_gbs)} GB/s")
        lines += [row(c, copy_gbs) for c in cases(run)]
    sources = ", ".join(f"`{f}` ({d})" for f, d in zip(files, devices, strict=True))
    return "\n".join(lines) + ("\n\nBest of the rounds; every ratio is within one run. Made "
                               f"by benchmarks/table4.py from {sources}.")


def refresh(document: str) -> str:
    """`document` with each table4 block made again from the files it names."""
    return doc_blocks.refresh(document, "table4", table)


def main(argv: list[str] | None = None) -> int:
    return doc_blocks.main(argv, __doc__.split("\n\n")[0], "table4", "applications.py",
                           table)


if __name__ == "__main__":
    sys.exit(main())
