"""Fit the time model's loaded latency (hopper.hdl's `latency_knee`) together with the
device-memory share (`ACHIEVED_BANDWIDTH`, mcl.feedback.analyses.timemodel) on the
calibration halves only: the unseen corpus's (benchmarks/unseen_corpus/corpus.toml) and
the validation cases' (the odd positions in name order, validate_feedback.halves), each
replayed from its recorded H100 counters (docs/validation.md, "The loaded latency").

    PYTHONPATH=. python benchmarks/fit_loaded_latency.py --unseen DIR --validate DIR ...

`--unseen` is the unpacked 2026-12-06-h100-unseen-calibration.tar.gz (its `run` folder),
`--validate` the unpacked 2026-11-27-h100-validate-boost-round3-raw.tar.gz (its `none`
folder). No held-out case is read. Each case is profiled once (`mcl profile --counters`,
in this process, the time model's figures kept); the grid then re-evaluates those
figures at every pair, and the pair with the least mean |error| over the calibration
cases is the fit (the median, the usual summary, moves by one case at a time on 18).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.unseen_corpus.corpus import load_corpus  # noqa: E402
from benchmarks.validate_feedback import cases as validation_cases  # noqa: E402
from benchmarks.validate_feedback import halves, percentile, raw_pages  # noqa: E402

SHARES = [round(0.78 + 0.01 * i, 2) for i in range(16)]
KNEES = [0.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0, 4.0, 6.0]  # 0: no such term


def replay(path: Path, sizes: dict[str, int], csv: Path) -> tuple[Any, float] | None:
    """The time model's figures of one recorded case and its measured time, from `mcl
    profile --counters` run in this process; None where either is missing."""
    from mcl.cli import main
    from mcl.feedback.analyses import timemodel

    kept: list[Any] = []
    original = timemodel.figures_of

    def keep(ctx: Any, findings: Any, least: bool = False) -> Any:
        figures = original(ctx, findings, least)
        if not least and figures is not None:
            kept.append(figures)
        return figures

    argv = ["profile", str(path), "--target", "hopper", "--format", "json",
            "--counters", str(csv)] + [a for k, v in sizes.items() for a in ("-D", f"{k}={v}")]
    out = io.StringIO()
    timemodel.figures_of = keep  # type: ignore[assignment]
    try:
        with contextlib.redirect_stdout(out):
            main(argv)
    finally:
        timemodel.figures_of = original  # type: ignore[assignment]
    document = json.loads(out.getvalue() or "{}")
    measured = next((f.get("measured") for f in document.get("figures", [])
                     if f["kind"] == "time-estimate"), None)
    return (kept[0], float(measured)) if kept and measured else None


def calibration_cases(unseen: Path, validate: list[Path]
                      ) -> dict[str, tuple[Path, dict, Path]]:
    """Name -> (kernel file, sizes, raw page) of every calibration case recorded; a
    validation case of the second folder on is named after its folder too."""
    out = {}
    for kernel in load_corpus():
        csv = unseen / f"{kernel.name}.csv"
        if kernel.half == "calibration" and csv.is_file():
            out[kernel.name] = (kernel.path("hopper"), dict(kernel.profile), csv)
    known = {c.name: c for c in validation_cases()}
    for index, folder in enumerate(validate):
        pages = [p for p in raw_pages(folder) if p.stem in known]
        calibration, _held_out = halves([p.stem for p in pages])
        for page in pages:
            if page.stem in calibration:
                document = folder / f"{page.stem}.json"
                recorded = json.loads(document.read_text() or "{}") \
                    if document.is_file() else {}
                case = known[page.stem]
                name = page.stem if not index else f"{page.stem} ({folder.name})"
                out[name] = (case.path, recorded.get("sizes") or case.sizes, page)
    return out


def errors(figures: dict[str, tuple[Any, float]], share: float, knee: float
           ) -> dict[str, float]:
    """(measured - estimated) / estimated of every case at the pair (share, knee)."""
    from mcl.feedback.analyses import timemodel

    stated = timemodel.ACHIEVED_BANDWIDTH
    timemodel.ACHIEVED_BANDWIDTH = share
    try:
        return {name: measured / replace(f, latency_knee=knee).seconds - 1
                for name, (f, measured) in figures.items()}
    finally:
        timemodel.ACHIEVED_BANDWIDTH = stated


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--unseen", type=Path, required=True)
    parser.add_argument("--validate", type=Path, action="append", required=True,
                        help="a folder of the validation cases' counters (repeatable)")
    args = parser.parse_args(argv)
    figures = {}
    for name, (path, sizes, csv) in sorted(calibration_cases(args.unseen, args.validate).items()):
        got = replay(path, sizes, csv)
        if got is not None:
            figures[name] = got
    print(f"# {len(figures)} calibration cases with an estimate: {', '.join(figures)}")
    rows = []
    for share in SHARES:
        for knee in KNEES:
            sizes = sorted(abs(e) for e in errors(figures, share, knee).values())
            rows.append((statistics.mean(sizes), statistics.median(sizes),
                         percentile(sizes, 0.9), share, knee))
    rows.sort()
    print("| share | knee | mean |error| | median | p90 |\n|---:|---:|---:|---:|---:|")
    for mean, median, p90, share, knee in rows[:10]:
        print(f"| {share:.2f} | {knee:g} | {mean:.2%} | {median:.2%} | {p90:.2%} |")
    best_without = min(r for r in rows if r[4] == 0.0)
    print(f"\nwithout the term (knee 0) the best share is {best_without[3]:.2f}: mean "
          f"{best_without[0]:.2%}, median {best_without[1]:.2%}, p90 {best_without[2]:.2%}")
    mean, median, p90, share, knee = rows[0]
    print(f"fit: ACHIEVED_BANDWIDTH = {share:.2f}, latency_knee = {knee:g}")
    print("\n| case | error at the fit | error before (0.79, no knee) |\n|---|---:|---:|")
    fitted, before = errors(figures, share, knee), errors(figures, 0.79, 0.0)
    for name in figures:
        print(f"| {name} | {fitted[name]:+.1%} | {before[name]:+.1%} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
