"""The CPU table of docs/performance.md, made from the JSON files that
benchmarks/pocl_scaling.py writes (`--json`), never typed by hand.

    python benchmarks/cpu_table.py benchmarks/results/A.json [B.json ...]   # print it
    python benchmarks/cpu_table.py --write docs/performance.md              # refresh it
    python benchmarks/cpu_table.py --write docs/performance-log.md          # and the log's

With --write, the block between `<!-- cpu-table: FILE ... -->` and `<!-- end cpu-table -->`
in the document is replaced by the table of the files its first line names. Each row is
one thread count of one run: every version's GFLOP/s with its share of numpy's
(OpenBLAS) rate measured in the same process, and the machine's load average (1 min)
before and after, since the test machine is shared.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script
    sys.path.insert(0, str(REPO))
from benchmarks import doc_blocks  # noqa: E402

VENDOR = "numpy (OpenBLAS)"


def table(files: list[str]) -> str:
    """The markdown table of the pocl_scaling.py results in `files` (paths from REPO)."""
    runs = [(f, json.loads((REPO / f).read_text(encoding="utf-8"))) for f in files]
    versions: list[str] = []
    for _, run in runs:
        for row in run["gflops"].values():
            versions += [v for v in row if v != VENDOR and v not in versions]
    lines = ["| device | size | threads | " + " | ".join(versions) + f" | {VENDOR} | "
             "load average before, after |",
             "|---|---|---|" + "---|" * len(versions) + "---|---|"]
    for _, run in runs:
        for threads, row in run["gflops"].items():
            vendor = row.get(VENDOR)
            cells = []
            for v in versions:
                rate = row.get(v)
                share = f" ({rate / vendor * 100:.0f}%)" if rate and vendor else ""
                cells.append(f"{rate:.1f}{share}" if rate else "-")
            load = run.get("load_average", {}).get(threads)
            load_text = f"{load[0]:.1f}, {load[1]:.1f}" if load else "-"
            lines.append(f"| {run['device']} | {run['size']}³ | {threads} | "
                         + " | ".join(cells) + f" | {vendor:.1f} | {load_text} |")
    sources = ", ".join(f"`{f}`" for f in files)
    return "\n".join(lines) + f"\n\nGFLOP/s, best of the rounds (share of numpy's in the " \
        f"same run). Made by benchmarks/cpu_table.py from {sources}."


def refresh(document: str) -> str:
    """`document` with each cpu-table block made again from the files it names."""
    return doc_blocks.refresh(document, "cpu-table", table)


def main(argv: list[str] | None = None) -> int:
    return doc_blocks.main(argv, __doc__.split("\n\n")[0], "cpu-table", "pocl_scaling.py",
                           table)


if __name__ == "__main__":
    sys.exit(main())
