"""How right is the feedback? Every shipped hopper version, and the portable versions
translated to hopper, measured by Nsight Compute and held against mcl's prediction
(docs/validation.md).

Two steps, so the GPU is held only for the measurement:

    # on the GPU host: one ncu report per case, as CSV, and `mcl profile`'s JSON
    PYTHONPATH=. python benchmarks/validate_feedback.py --collect DIR [--small]
    # anywhere: the feedback of this checkout against the recorded counters
    PYTHONPATH=. python benchmarks/validate_feedback.py --analyse DIR \\
        --json benchmarks/results/DATE-h100-validate-feedback.json

`--analyse` runs `mcl profile --counters` on each recorded CSV, so an improved analysis
is measured again without a GPU. The table gives, per figure kind, the cases compared,
how many are flagged (outside the tolerance docs/profile.md states), and the median,
90th percentile and worst of the relative error |measured - predicted| / predicted.

Cases: each application's hopper_v*.mcpl, and its perfect.mcpl (plus reduction's
gpu_v1, a block-level tree in shared memory, and transpose's gpu_v1, an unpadded tile)
translated to hopper, at the paper's sizes (benchmarks/paper_sizes.py); and the idiom
corpus of benchmarks/validation_corpus/ (cases `idiom-NAME`: block scan, stencil with
halo, batched small GEMM, ELL SpMV, softmax row reduction) at the sizes of CORPUS below.
`--small` uses the references' small sizes; `--cases idiom transpose-gpu_v1` collects
only the cases whose name holds one of the words.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

LEAF = "hopper"
# a shared-memory tree reduction; a transpose through a tile without padding (32-way
# bank conflicts, which transpose's hopper_v1 pads away)
EXTRA = ("reduction/gpu_v1.mcpl", "transpose/gpu_v1.mcpl")
# The idiom corpus (benchmarks/validation_corpus/NAME/hopper.mcpl, a reference.py beside
# each) at paper-like sizes: about 100 to 140 MB of compulsory traffic each, so that one
# launch under ncu is long enough to measure and every replay stays well under 15 s.
CORPUS_FOLDER = REPO / "benchmarks" / "validation_corpus"
CORPUS: dict[str, dict[str, int]] = {
    "scan": {"n": 1 << 24},
    "stencil": {"h": 4096, "w": 4096},
    "batched_gemm": {"nb": 1 << 15, "m": 16},
    "ell_spmv": {"n": 1 << 20, "ncols": 1 << 20, "width": 16},
    "softmax": {"rows": 1 << 14, "m": 1024},
}


@dataclass(frozen=True)
class Case:
    """One kernel file profiled at `sizes` (-D), named `name` in the raw output."""

    name: str
    path: Path
    sizes: dict[str, int]


def paper_sizes() -> dict[str, dict[str, int]]:
    """The first GPU size of each application (benchmarks/paper_sizes.py's cases)."""
    from benchmarks.paper_sizes import cases

    found: dict[str, dict[str, int]] = {}
    for app, sizes, kind in cases("gpu", small=False):
        if kind is None and app not in found:
            found[app] = sizes
    return found


def cases() -> list[Case]:
    """The shipped versions (APP-VERSION, at the paper's sizes), then the idiom corpus
    (idiom-NAME)."""
    kernels = REPO / "kernels"
    files = sorted(kernels.glob(f"*/{LEAF}_v*.mcpl")) + sorted(kernels.glob("*/perfect.mcpl"))
    sizes = paper_sizes()
    found = [Case(f"{path.parent.name}-{path.stem}", path, sizes.get(path.parent.name, {}))
             for path in files + [kernels / extra for extra in EXTRA]]
    return found + [Case(f"idiom-{name}", CORPUS_FOLDER / name / f"{LEAF}.mcpl", dict(at))
                    for name, at in CORPUS.items()]


def collect(folder: Path, small: bool, timeout: float, only: list[str]) -> int:
    """Profile every case into `folder`: NAME.csv (ncu's raw page), NAME.json (mcl
    profile's document), NAME.log (its stderr); a summary line per case on stdout."""
    folder.mkdir(parents=True, exist_ok=True)
    failures = 0
    for case in cases():
        name, path = case.name, case.path
        if only and not any(word in name for word in only):
            continue
        defines = [] if small else [f"{k}={v}" for k, v in case.sizes.items()]
        argv = [sys.executable, "-m", "mcl", "profile", str(path), "--target", LEAF,
                "--format", "json", "--save-counters", str(folder / f"{name}.csv")]
        for d in defines:
            argv += ["-D", d]
        start = time.perf_counter()
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                                  check=False, cwd=REPO)
            status, out, err = done.returncode, done.stdout, done.stderr
        except subprocess.TimeoutExpired:
            status, out, err = 124, "", f"timed out after {timeout:.0f} s"
        (folder / f"{name}.json").write_text(out)
        (folder / f"{name}.log").write_text(err)
        failures += status != 0
        print(f"{name:28} {' '.join(defines):34} exit {status} "
              f"{time.perf_counter() - start:6.1f} s", flush=True)
    return 1 if failures else 0


def analyse(folder: Path) -> dict[str, Any]:
    """Compare every recorded case again with this checkout's feedback."""
    known = {case.name: case for case in cases()}
    compared: list[dict[str, Any]] = []
    for csv_path in sorted(p for p in folder.glob("*.csv")
                           if not p.name.endswith(".source.csv")):
        case = known.get(csv_path.stem)
        if case is None:
            compared.append({"case": csv_path.stem, "error": "no such case in this checkout"})
            continue
        # the sizes `mcl profile` ran at, where its document was kept; else the case's
        document_path = folder / f"{csv_path.stem}.json"
        recorded = json.loads(document_path.read_text() or "{}") \
            if document_path.is_file() else {}
        defines = recorded.get("sizes") or case.sizes
        argv = [sys.executable, "-m", "mcl", "profile", str(case.path), "--target", LEAF,
                "--format", "json", "--counters", str(csv_path)]
        for k, v in defines.items():
            argv += ["-D", f"{k}={v}"]
        done = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=REPO)
        if done.returncode != 0:
            compared.append({"case": csv_path.stem, "error": done.stderr.strip()})
            continue
        document = json.loads(done.stdout)
        lines = [{**r, "kind": f"line:{r['kind']}", "error": line_error(r)}
                 for r in document["per_line"]]
        compared.append({"case": csv_path.stem, "sizes": defines,
                         "figures": document["figures"] + lines,
                         "suggestions": document["suggestions"]})
    return {"cases": compared, "summary": summarise(compared),
            "steps": series_steps(compared)}


def series_steps(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each step between consecutive versions LEVEL_vK of an application, LEVEL hopper or
    a level above it (transpose gpu_v1 -> hopper_v1, hopper_vK -> hopper_vK+1), in the
    order of the hierarchy and then of K (mcl.profile.series)."""
    from mcl.hdl.library import default_library
    from mcl.profile.series import steps

    levels = [*default_library().ancestors(LEAF), LEAF]
    by_app: dict[str, list[tuple[int, int, str, dict[str, Any]]]] = {}
    for case in cases:
        app, _, version = case["case"].partition("-")
        level, _, k = version.rpartition("_v")
        if level in levels and k.isdigit() and "figures" in case:
            label = f"{app} v{k}" if level == LEAF else f"{app} {version}"
            by_app.setdefault(app, []).append((levels.index(level), int(k), label, case))
    found = []
    for _, versions in sorted(by_app.items()):
        found += steps([(label, case) for _, _, label, case in sorted(
            versions, key=lambda v: v[:2])])
    return found


def line_error(row: dict[str, Any]) -> float | None:
    """The relative error of a per-line figure; none for divergence (a count against a
    lane efficiency)."""
    if row["kind"] == "divergence" or not row["predicted"] or row["measured"] is None:
        return None
    return (row["measured"] - row["predicted"]) / row["predicted"]


def summarise(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per figure kind: compared cases, flagged cases, and the relative error's median,
    90th percentile and worst (by magnitude, sign kept for the worst)."""
    kinds: dict[str, list[dict[str, Any]]] = {}
    for case in cases:
        for f in case.get("figures", []):
            kinds.setdefault(f["kind"], []).append({**f, "case": case["case"]})
    rows = []
    for kind, figures in kinds.items():
        compared = [f for f in figures if f["ok"] is not None]
        errors = sorted((f for f in compared if f["error"] is not None),
                        key=lambda f: abs(f["error"]))
        magnitudes = [abs(f["error"]) for f in errors]
        rows.append({
            "kind": kind, "cases": len({f["case"] for f in figures}), "compared": len(compared),
            "flagged": sum(f["ok"] is False for f in compared),
            "flagged_cases": [f["case"] for f in compared if f["ok"] is False],
            "median": statistics.median(magnitudes) if magnitudes else None,
            "p90": percentile(magnitudes, 0.9) if magnitudes else None,
            "worst": errors[-1]["error"] if errors else None,
            "worst_case": errors[-1]["case"] if errors else None,
        })
    return rows


def percentile(values: list[float], q: float) -> float:
    """The q-th quantile of sorted `values` by the nearest-rank rule."""
    rank = max(1, -(-len(values) * q // 1))
    return values[int(rank) - 1]


def table(summary: list[dict[str, Any]]) -> str:
    def pct(x: float | None) -> str:
        return "-" if x is None else f"{100 * x:+.0f}%" if x < 0 else f"{100 * x:.0f}%"

    lines = ["| figure | compared | flagged | median | p90 | worst (case) |",
             "|---|---:|---:|---:|---:|---|"]
    for r in summary:
        worst = f"{pct(r['worst'])} ({r['worst_case']})" if r["worst_case"] else "-"
        lines.append(f"| {r['kind']} | {r['compared']} | {r['flagged']} | "
                     f"{pct(r['median'])} | {pct(r['p90'])} | {worst} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    step = parser.add_mutually_exclusive_group(required=True)
    step.add_argument("--collect", metavar="DIR", help="profile every case into DIR (GPU)")
    step.add_argument("--analyse", metavar="DIR", help="compare the reports in DIR")
    parser.add_argument("--small", action="store_true", help="--collect at small sizes")
    parser.add_argument("--timeout", type=float, default=240, help="seconds per case")
    parser.add_argument("--cases", nargs="*", default=[], metavar="WORD",
                        help="--collect only the cases whose name holds a WORD")
    parser.add_argument("--json", metavar="PATH", help="--analyse: also write the cases "
                        "and the summary as JSON")
    args = parser.parse_args()
    if args.collect:
        return collect(Path(args.collect), args.small, args.timeout, args.cases)
    result = analyse(Path(args.analyse))
    print(table(result["summary"]))
    print()
    from mcl.profile.series import steps_table

    print(steps_table(result["steps"]))
    for case in result["cases"]:
        if "error" in case:
            print(f"{case['case']}: {case['error']}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
