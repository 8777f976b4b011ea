"""The figures of several `bench_lsp_typing.py` runs pooled per kernel and label: base and
branch measured in turn on a machine whose load moves (other work beside), each kernel
run base, branch, branch, base, so that both see the same load on average.

    python benchmarks/lsp_typing_pooled.py LABEL=RUN.json [LABEL=RUN.json ...] [--out FILE]

Per kernel and label: the edits of every run pooled (diagnostics median and 95th
percentile, feedback median, the server's CPU per edit to its diagnostics), the longest
interval between publications while typing over the runs, and the tasks running or
waiting for a CPU during each run (`runnable`, from the runs' JSON). Then the same over
every kernel, and per label the kernels that meet each goal (docs/editor.md,
"Latency").
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script
    sys.path.insert(0, str(REPO))
from benchmarks.bench_lsp import p95, print_report  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", metavar="LABEL=RUN.json")
    parser.add_argument("--out", type=Path, help="also write the report to FILE")
    args = parser.parse_args()
    pooled: dict[str, dict[str, dict[str, list[float]]]] = {}  # label -> kernel -> figure
    for run in args.runs:
        label, _, name = run.partition("=")
        raw = json.loads(Path(name).read_text())
        for kernel in raw["kernels"]:
            figures = pooled.setdefault(label, {}).setdefault(kernel["kernel"], {})
            for key in ("diagnostics_s", "feedback_s", "cpu_s"):
                figures.setdefault(key, []).extend(kernel[key])
            figures.setdefault("gap_s", []).append(max(kernel["typing_intervals_s"] or [9.0]))
            figures.setdefault("runnable", []).append(raw.get("runnable", float("nan")))
    ms = 1000
    lines = [f"{'kernel':<34} {'label':<8} {'diag med':>8} {'p95':>6} {'fb med':>7} "
             f"{'diag cpu':>8} {'max gap':>8}  runnable (per run)"]
    for kernel in sorted({k for by in pooled.values() for k in by}):
        for label, by in pooled.items():
            f = by.get(kernel)
            if f is None:
                continue
            diagnostics, feedback = f["diagnostics_s"], f["feedback_s"]
            lines.append(
                f"{kernel:<34} {label:<8} {statistics.median(diagnostics) * ms:8.0f} "
                f"{p95(diagnostics) * ms:6.0f} {statistics.median(feedback) * ms:7.0f} "
                f"{statistics.median(f['cpu_s']) * ms:8.0f} {max(f['gap_s']) * ms:8.0f}  "
                + " ".join(f"{r:.1f}" for r in f["runnable"]))
    for label, by in pooled.items():
        every = [d for f in by.values() for d in f["diagnostics_s"]]
        feedback = [d for f in by.values() for d in f["feedback_s"]]
        runnable = [r for f in by.values() for r in f["runnable"]]
        lines.append(
            f"{label}: all kernels: diagnostics median {statistics.median(every) * ms:.0f} ms, "
            f"p95 {p95(every) * ms:.0f} ms; feedback median "
            f"{statistics.median(feedback) * ms:.0f} ms; runnable {min(runnable):.1f} to "
            f"{max(runnable):.1f}, mean {statistics.mean(runnable):.1f}")
        lines.append(
            f"{label}: kernels meeting each goal: diagnostics median "
            f"{sum(statistics.median(f['diagnostics_s']) <= 0.1 for f in by.values())}/{len(by)}"
            f", p95 {sum(p95(f['diagnostics_s']) <= 0.25 for f in by.values())}/{len(by)}, "
            f"feedback median {sum(statistics.median(f['feedback_s']) <= 0.5 for f in by.values())}"
            f"/{len(by)}, publications every 500 ms "
            f"{sum(max(f['gap_s']) <= 0.5 for f in by.values())}/{len(by)}")
    return print_report(lines, args.out)


if __name__ == "__main__":
    sys.exit(main())
