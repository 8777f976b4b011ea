"""The unseen corpus on an H100: every kernel of benchmarks/unseen_corpus/ profiled at
hopper by `mcl profile` under Nsight Compute, and the held-out half's table
(docs/validation.md, "The unseen corpus"): per kernel the time estimate's error, the
roofline bound against the measured time, the DRAM bytes read against ncu's and the
bank-conflict degree per line against ncu's wavefronts over the ideal; then the
acceptance figures over the half (median and 90th percentile of the time error, bounds
above the measured time, DRAM reads within 15%, lines within 10%).

One command on the GPU host (collects every kernel, both halves, then analyses):

    PYTHONPATH=. python benchmarks/unseen_profile.py --collect DIR [--clock-control none]

and anywhere, again on the recorded counters with this checkout's feedback:

    PYTHONPATH=. python benchmarks/unseen_profile.py --analyse DIR

DIR receives, per kernel, NAME.csv (ncu's raw page), NAME.json (`mcl profile`'s document)
and NAME.log; the analysis writes DIR/analysis.json (every figure of every kernel) and
DIR/held-out.md (the table). The calibration half is collected too: it is the only
half any constant may be fitted on (`--half calibration` prints its table).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.unseen_corpus.corpus import HELD_OUT, Kernel, load_corpus  # noqa: E402
from benchmarks.validate_feedback import (  # noqa: E402
    Case,
    _pct,
    analyse_case,
    collect_case,
    percentile,
    raw_pages,
)

LEAF = "hopper"
# the acceptance of the held-out half (docs/validation.md)
TIME_MEDIAN, TIME_P90, DRAM_READ, WAVEFRONTS = 0.10, 0.30, 0.15, 0.10


def case_of(kernel: Kernel) -> Case:
    return Case(kernel.name, kernel.path(LEAF), dict(kernel.profile))


def collect(folder: Path, kernels: list[Kernel], timeout: float, clock_control: str) -> int:
    """Profile the kernels into `folder`, the held-out half first (a run cut short still
    has what is reported)."""
    folder.mkdir(parents=True, exist_ok=True)
    ordered = sorted(kernels, key=lambda k: (k.half != HELD_OUT, k.name))
    failures = sum(collect_case(folder, case_of(k), timeout, clock_control) != 0
                   for k in ordered)
    return 1 if failures else 0


def analyse(folder: Path, kernels: list[Kernel]) -> list[dict[str, Any]]:
    """Every recorded kernel, its figures by this checkout's feedback, with its half."""
    known = {k.name: k for k in kernels}
    cases = []
    for csv_path in raw_pages(folder):
        kernel = known.get(csv_path.stem)
        case = analyse_case(folder, csv_path, case_of(kernel) if kernel else None)
        cases.append({**case, "half": kernel.half if kernel else None})
    return cases


def _figure(case: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((f for f in case.get("figures", []) if f["kind"] == kind), None)


def kernel_row(case: dict[str, Any]) -> dict[str, Any]:
    """The held-out figures of one analysed kernel."""
    estimate, bound = _figure(case, "time-estimate"), _figure(case, "time-bound")
    dram = _figure(case, "dram-read")
    lines = [f for f in case.get("figures", []) if f["kind"] == "line:bank-conflicts"
             and f.get("error") is not None]
    worst = max(lines, key=lambda f: abs(f["error"]), default=None)
    measured = estimate["measured"] if estimate else bound["measured"] if bound else None
    return {
        "kernel": case["case"],
        "measured_s": measured,
        "estimate_s": estimate["predicted"] if estimate else None,
        "time_error": estimate["error"] if estimate else None,
        "bound_s": bound["predicted"] if bound else None,
        "bound_holds": (bound["predicted"] <= bound["measured"]
                        if bound and bound["predicted"] is not None
                        and bound["measured"] is not None else None),
        "dram_read_error": dram["error"] if dram else None,
        "lines": len(lines),
        "lines_within": sum(abs(f["error"]) <= WAVEFRONTS for f in lines),
        "worst_line": (worst["line"], worst["error"]) if worst else None,
        "error": case.get("error"),
    }


def half_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The acceptance figures over one half."""
    errors = sorted(abs(r["time_error"]) for r in rows if r["time_error"] is not None)
    drams = [r["dram_read_error"] for r in rows if r["dram_read_error"] is not None]
    return {
        "kernels": len(rows),
        "time_compared": len(errors),
        "time_median": statistics.median(errors) if errors else None,
        "time_p90": percentile(errors, 0.9) if errors else None,
        "bounds_broken": sum(r["bound_holds"] is False for r in rows),
        "dram_compared": len(drams),
        "dram_within": sum(abs(e) <= DRAM_READ for e in drams),
        "lines": sum(r["lines"] for r in rows),
        "lines_within": sum(r["lines_within"] for r in rows),
    }


def _seconds(x: float | None) -> str:
    from mcl.feedback.emit import seconds_text

    return "-" if x is None else seconds_text(x)


def table(cases: list[dict[str, Any]], half: str = HELD_OUT) -> str:
    """The markdown table of one half: a row per kernel, then the acceptance figures."""
    rows = [kernel_row(c) for c in sorted(cases, key=lambda c: c["case"])
            if c.get("half") == half]
    out = [f"Unseen corpus, {half} half, at {LEAF}", "",
           "| kernel | measured | estimate | error | bound | bound <= measured | "
           "DRAM read error | lines within 10% | worst line |",
           "|---|---:|---:|---:|---:|---|---:|---:|---|"]
    for r in rows:
        if r["error"]:
            out.append(f"| {r['kernel']} | not analysed: {r['error'][:80]} |||||||")
            continue
        worst = "-" if r["worst_line"] is None else \
            f"line {r['worst_line'][0]}: {_pct(r['worst_line'][1])}"
        holds = "-" if r["bound_holds"] is None else "yes" if r["bound_holds"] else "NO"
        out.append(f"| {r['kernel']} | {_seconds(r['measured_s'])} | "
                   f"{_seconds(r['estimate_s'])} | {_pct(r['time_error'])} | "
                   f"{_seconds(r['bound_s'])} | {holds} | {_pct(r['dram_read_error'])} | "
                   f"{r['lines_within']} of {r['lines']} | {worst} |")
    s = half_summary(rows)
    out += ["", "| acceptance | goal | result |", "|---|---|---|",
            f"| time estimate, median error | <= {TIME_MEDIAN:.0%} | "
            f"{_pct(s['time_median'])} over {s['time_compared']} "
            f"kernel{'' if s['time_compared'] == 1 else 's'} |",
            f"| time estimate, 90th percentile | <= {TIME_P90:.0%} | {_pct(s['time_p90'])} |",
            f"| roofline bound above the measured time | never | {s['bounds_broken']} |",
            f"| DRAM bytes read within {DRAM_READ:.0%} | every kernel | "
            f"{s['dram_within']} of {s['dram_compared']} |",
            f"| bank-conflict degree per line within {WAVEFRONTS:.0%} of ncu | every line | "
            f"{s['lines_within']} of {s['lines']} |"]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--collect", type=Path, metavar="DIR",
                      help="profile every kernel into DIR (on the GPU host), then analyse")
    what.add_argument("--analyse", type=Path, metavar="DIR",
                      help="analyse the kernels recorded in DIR again")
    parser.add_argument("--kernels", nargs="*", default=[], help="only these kernels")
    parser.add_argument("--half", choices=(HELD_OUT, "calibration"), default=HELD_OUT,
                        help="the half whose table is printed (default: held-out)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds per kernel's profile (default 600)")
    parser.add_argument("--clock-control", default="base", choices=("base", "none"),
                        help="ncu's clock control (`none`: the boost clock)")
    options = parser.parse_args(argv)
    kernels = [k for k in load_corpus() if not options.kernels or k.name in options.kernels]
    status = 0
    folder = options.collect or options.analyse
    if options.collect is not None:
        status = collect(folder, kernels, options.timeout, options.clock_control)
    cases = analyse(folder, kernels)
    (folder / "analysis.json").write_text(json.dumps({"cases": cases}, indent=1))
    text = table(cases, options.half)
    (folder / f"{options.half}.md").write_text(text + "\n")
    print(text)
    return status


if __name__ == "__main__":
    sys.exit(main())
