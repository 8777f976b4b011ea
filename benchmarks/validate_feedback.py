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
is measured again without a GPU. It also prints the time model's error over all cases,
its calibration half and its held-out half, the series steps (measured and estimated gain
side by side) and docs/feedback.md's "feedback pays" table; `--calibrate DIR` prints the
achieved device-memory bandwidth on the calibration half (the time model's one fitted
constant). The table gives, per figure kind, the cases compared,
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
import os
import re
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


def collect(folder: Path, small: bool, timeout: float, only: list[str],
            clock_control: str = "base") -> int:
    """Profile every case into `folder`: NAME.csv (ncu's raw page), NAME.json (mcl
    profile's document), NAME.log (its stderr); a summary line per case on stdout.
    `clock_control` is ncu's (`mcl profile --clock-control`)."""
    folder.mkdir(parents=True, exist_ok=True)
    failures = 0
    for case in cases():
        if only and not any(word in case.name for word in only):
            continue
        sized = case if not small else Case(case.name, case.path, {})
        failures += collect_case(folder, sized, timeout, clock_control) != 0
    return 1 if failures else 0


def collect_case(folder: Path, case: Case, timeout: float, clock_control: str) -> int:
    """`mcl profile` one case at its sizes into `folder` (NAME.csv, NAME.json, NAME.log);
    prints a summary line; returns the exit status."""
    from mcl.profile.ncu import run_group

    defines = [f"{k}={v}" for k, v in case.sizes.items()]
    argv = [sys.executable, "-m", "mcl", "profile", str(case.path), "--target", LEAF,
            "--format", "json", "--save-counters", str(folder / f"{case.name}.csv"),
            "--clock-control", clock_control]
    for d in defines:
        argv += ["-D", d]
    start = time.perf_counter()
    try:
        done = run_group(argv, timeout, cwd=REPO)  # ncu's profiled run killed with it
        status, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired:
        status, out, err = 124, "", f"timed out after {timeout:.0f} s"
    (folder / f"{case.name}.json").write_text(out)
    (folder / f"{case.name}.log").write_text(err)
    print(f"{case.name:28} {' '.join(defines):34} exit {status} "
          f"{time.perf_counter() - start:6.1f} s", flush=True)
    return status


def analyse(folder: Path, target: str = LEAF, hwd_path: tuple[str, ...] = ()) -> dict[str, Any]:
    """Compare every recorded case again with this checkout's feedback, predicted at
    `target` (a description of `hwd_path` or the bundled library's; the kernels are
    written for hopper, so it must be hopper or a specialization of it)."""
    known = {case.name: case for case in cases()}
    compared = [analyse_case(folder, csv_path, known.get(csv_path.stem), target, hwd_path)
                for csv_path in raw_pages(folder)]
    steps = series_steps(compared)
    return {"cases": compared, "summary": summarise(compared), "steps": steps,
            "time_estimate": estimate_halves(compared),
            "pays": feedback_pays(steps, compared, folder.name)}


def analyse_case(folder: Path, csv_path: Path, case: Case | None, target: str = LEAF,
                 hwd_path: tuple[str, ...] = ()) -> dict[str, Any]:
    """`mcl profile --counters` on one recorded raw page, at `target` (the folders of
    `hwd_path` before MCL_HWD_PATH's): the case's figures and lines (each line with its
    relative error) and suggestions, or its error."""
    if case is None:
        return {"case": csv_path.stem, "error": "no such case in this checkout"}
    # the sizes `mcl profile` ran at, where its document was kept; else the case's
    document_path = folder / f"{csv_path.stem}.json"
    recorded = json.loads(document_path.read_text() or "{}") \
        if document_path.is_file() else {}
    defines = recorded.get("sizes") or case.sizes
    argv = [sys.executable, "-m", "mcl", "profile", str(case.path), "--target", target,
            "--format", "json", "--counters", str(csv_path)]
    for k, v in defines.items():
        argv += ["-D", f"{k}={v}"]
    # The folders go in as MCL_HWD_PATH, not --hwd-path: the compiler's register count
    # and instruction listing (mcl.backends.bundled_leaf) come only for a description of
    # the default library, which holds MCL_HWD_PATH's but not --hwd-path's.
    env = None if not hwd_path else {**os.environ, "MCL_HWD_PATH": os.pathsep.join(
        [*hwd_path, *filter(None, [os.environ.get("MCL_HWD_PATH")])])}
    done = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=REPO,
                          env=env)
    if done.returncode != 0:
        return {"case": csv_path.stem, "error": done.stderr.strip()}
    document = json.loads(done.stdout)
    lines = [{**r, "kind": f"line:{r['kind']}", "error": line_error(r)}
             for r in document["per_line"]]
    return {"case": csv_path.stem, "sizes": defines, "figures": document["figures"] + lines,
            "suggestions": document["suggestions"]}


def halves(names: list[str]) -> tuple[list[str], list[str]]:
    """The recorded cases, in name order, split in two: the odd-numbered positions (1, 3,
    ...) are the calibration half the time model's one fitted constant
    (mcl.feedback.analyses.timemodel.ACHIEVED_BANDWIDTH) was set on, the even-numbered
    ones (0, 2, ...) the held-out half."""
    ordered = sorted(names)
    return ordered[1::2], ordered[0::2]


def estimate_halves(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The time estimate's error over all cases, the calibration half and the held-out
    half (`halves`)."""
    errors = {c["case"]: f["error"] for c in cases for f in c.get("figures", [])
              if f["kind"] == "time-estimate" and f["error"] is not None}
    calibration, held_out = ([c for c in half if c in errors]
                             for half in halves([c["case"] for c in cases]))
    rows = []
    for name, chosen in (("all", list(errors)), ("calibration half", calibration),
                         ("held-out half", held_out)):
        magnitudes = sorted(abs(errors[c]) for c in chosen)
        worst = max(chosen, key=lambda c: abs(errors[c]), default=None)
        rows.append({"cases": name, "compared": len(chosen), "names": sorted(chosen),
                     "median": statistics.median(magnitudes) if magnitudes else None,
                     "p90": percentile(magnitudes, 0.9) if magnitudes else None,
                     "within_25": sum(m <= 0.25 for m in magnitudes),
                     "worst": errors[worst] if worst else None, "worst_case": worst})
    return rows


def _pct(x: float | None) -> str:
    """A relative error as a percentage, the sign kept where it is negative."""
    return "-" if x is None else f"{100 * x:+.0f}%" if x < 0 else f"{100 * x:.0f}%"


def estimate_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| time estimate, cases | compared | within 25% | median | p90 | worst (case) |",
             "|---|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['cases']} | {r['compared']} | {r['within_25']} | "
                     f"{_pct(r['median'])} | {_pct(r['p90'])} | {_pct(r['worst'])} "
                     f"({r['worst_case']}) |")
    return "\n".join(lines)


def estimate_cases_table(cases: list[dict[str, Any]]) -> str:
    """Per case: its half (`halves`), the roofline bound, the time model's estimate, the
    measured time and the error (measured - estimated) / estimated."""
    from mcl.feedback.emit import seconds_text

    calibration, _ = halves([c["case"] for c in cases])
    lines = ["| case | half | bound | estimate | measured | error |",
             "|---|---|---:|---:|---:|---:|"]
    for case in sorted(cases, key=lambda c: c["case"]):
        figures = {f["kind"]: f for f in case.get("figures", [])}
        estimate, bound = figures.get("time-estimate"), figures.get("time-bound")
        if estimate is None:
            continue
        half = "calibration" if case["case"] in calibration else "held out"
        cells = [seconds_text(x) if x is not None else "-"
                 for x in (bound["predicted"] if bound else None, estimate["predicted"],
                           estimate["measured"])]
        lines.append(f"| {case['case']} | {half} | {' | '.join(cells)} | "
                     f"{_pct(estimate['error'])} |")
    return "\n".join(lines)


def calibrate(folder: Path) -> dict[str, Any]:
    """The achieved share of the stated device-memory bandwidth on the calibration half
    (`halves`): for each of its cases the time model calls bound by device memory (the
    phases it limits take most of the estimate), the compulsory traffic's time at the
    stated bandwidth over the measured time less the time of the other phases, the model
    evaluated at the SM clock the case ran at (as `mcl profile` evaluates it); their
    median is what ACHIEVED_BANDWIDTH states. The same for the cache's
    `partial_write_bandwidth` (`partial_writes`), on the cases the model calls bound by
    the sectors their stores write in part."""
    from mcl.feedback.analyses.timemodel import ACHIEVED_BANDWIDTH
    from mcl.hdl.library import default_library
    from mcl.profile.counters import parse_raw_csv, sm_clock_hz, totals
    from mcl.profile.leaf import at_leaf, feedback_messages

    known = {case.name: case for case in cases()}
    measured, clocks = {}, {}
    for csv_path in raw_pages(folder):
        launches = parse_raw_csv(csv_path.read_text())
        counters = totals(launches)
        if counters.get("gpu__time_duration.sum"):
            measured[csv_path.stem] = counters["gpu__time_duration.sum"] * 1e-9
            clocks[csv_path.stem] = sm_clock_hz(launches)
    calibration, _ = halves(list(measured))
    library = default_library()
    shares: dict[str, float] = {}
    partial: dict[str, float] = {}
    for name in calibration:
        case = known.get(name)
        if case is None:
            continue
        program = at_leaf(case.path, [], library, _function_of(case), LEAF)
        facts = [m for m in feedback_messages(program, library, case.sizes, clocks[name])
                 if m["code"] == "time-estimate"]
        if not facts:
            continue
        values = {k: v["numeric"] for k, v in facts[0]["values"].items()}
        # the time of the phases (between barriers) device memory does not limit: what
        # the model adds to the device-memory term, left out of the measured time
        other = values["estimated_seconds"] - values["seconds_device_memory"]
        if other < values["seconds_device_memory"] and measured[name] > other:
            stated = values["seconds_device_memory"] * ACHIEVED_BANDWIDTH
            shares[name] = stated / (measured[name] - other)
        partial_rate = partial_writes(values, measured[name], library.get(LEAF))
        if partial_rate is not None:
            partial[name] = partial_rate
    return {"calibration_cases": calibration, "device_memory_bound": shares,
            "partial_write_bound_GB_per_s": {k: round(v / 1e9, 1) for k, v in partial.items()},
            "partial_write_median_GB_per_s": round(statistics.median(partial.values()) / 1e9, 1)
            if partial else None,
            "sm_clock_hz": {n: clocks[n] for n in calibration},
            "median": statistics.median(shares.values()) if shares else None,
            "stated_constant": ACHIEVED_BANDWIDTH}


def partial_writes(values: dict[str, Any], measured: float, hwd: Any) -> float | None:
    """The rate (bytes/s) at which the cache took the sectors a case's stores write in
    part, where the model calls the case bound by them: the estimate is the launch and
    the phases, no less than this term (`Figures.phase_seconds`), so the term binds only
    where it is the estimate less the launch; their bytes (the term at the description's
    rate) over the measured time less the launch. (A kernel whose phases add up to more,
    convolution hopper_v2 at 144 µs against its 79.5 µs of partial writes, is bound by
    them nowhere, though its term exceeds the difference.)"""
    from mcl.feedback.analyses.timemodel import partial_write_rate

    term, rate = values.get("seconds_partial_sector_writes"), partial_write_rate(hwd, "global")
    if not term or not rate:
        return None
    launch = values.get("seconds_launch") or 0.0
    if values["estimated_seconds"] - launch > term * (1 + 1e-9) or measured <= launch:
        return None
    return term * rate / (measured - launch)


def _function_of(case: Case) -> str:
    """The function a case profiles: its reference's (the kernels/ contract)."""
    from mcl.verify import load_reference, reference_for

    return load_reference(reference_for(case.path)).function


def raw_pages(folder: Path) -> list[Path]:
    """The recorded raw pages of a validation folder (not the per-line source pages)."""
    return sorted(p for p in folder.glob("*.csv") if not p.name.endswith(".source.csv"))


# What each step of a hopper series acted on, from the `// change:` header of the version
# after it: the text the header quotes after `feedback "` or, for a step from a level
# above, `feedback on LEVEL (vK) "`.
QUOTED = re.compile(r'feedback(?: on [^"]*)? "([^"]+)"')


def acted_on(app: str, version: int) -> str:
    from mcl.report.series import change_of

    return change_of(REPO / "kernels" / app / f"{LEAF}_v{version}.mcpl") or ""


def feedback_pays(steps: list[dict[str, Any]], cases: list[dict[str, Any]],
                  source: str = "2026-11-26-h100-validate-feedback") -> list[dict[str, Any]]:
    """For every step of a hopper series: what it acted on (the `// change:` header), the
    suggestion of the version before it that the header quotes, with the gain that
    suggestion's message estimated, the model's estimate before and after, and the gain
    measured (ncu's kernel times of the validation)."""
    rows = []
    for step in steps:
        before, after = step["step"].split(" -> ")
        app, version = after.rsplit(" v", 1)
        change = acted_on(app, int(version))
        quoted = QUOTED.search(change)
        head = quoted.group(1).split(":")[0].strip() if quoted else None
        # "mm v1" is the case mm-hopper_v1; "transpose gpu_v1" (above hopper) transpose-gpu_v1
        app0, _, version0 = before.partition(" ")
        name0 = f"{app0}-{LEAF}_{version0}" if version0[1:].isdigit() else f"{app0}-{version0}"
        suggestions = next((c.get("suggestions", []) for c in cases
                            if c["case"] == name0), [])
        followed = [s for s in suggestions
                    if head and s["message"].split(":")[0].strip() == head]
        rows.append({"step": step["step"], "acted_on": quoted.group(1) if quoted else change,
                     "suggestion": followed[0]["code"] if followed else None,
                     "suggestion_gain": followed[0]["estimated_gain"] if followed else None,
                     "estimates": step.get("estimates"),
                     "estimated_gain": step.get("estimated_gain"),
                     "seconds": step["seconds"], "measured_gain": step["measured_gain"],
                     "measurement": f"ncu gpu__time_duration, {source} (H100, base clocks)"})
    return rows


def pays_table(rows: list[dict[str, Any]]) -> str:
    from mcl.profile.series import gain_text as gain
    from mcl.profile.series import seconds_pair_text as us

    lines = ["| step | acted on | suggestion followed (its estimated gain) | model estimate "
             "before -> after | estimated gain | measured before -> after (ncu) | "
             "measured gain |", "|---|---|---|---|---:|---|---:|"]
    for r in rows:
        followed = (f"{r['suggestion']} ({gain(r['suggestion_gain'])})" if r["suggestion"]
                    else "none: the header quotes a fact, or none")
        acted = r["acted_on"] if len(r["acted_on"]) <= 70 else r["acted_on"][:67] + "..."
        lines.append(f"| {r['step']} | {acted} | {followed} | {us(r['estimates'])} | "
                     f"{gain(r['estimated_gain'])} | {us(r['seconds'])} | "
                     f"{gain(r['measured_gain'])} |")
    return "\n".join(lines)


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
    lines = ["| figure | compared | flagged | median | p90 | worst (case) |",
             "|---|---:|---:|---:|---:|---|"]
    for r in summary:
        worst = f"{_pct(r['worst'])} ({r['worst_case']})" if r["worst_case"] else "-"
        lines.append(f"| {r['kind']} | {r['compared']} | {r['flagged']} | "
                     f"{_pct(r['median'])} | {_pct(r['p90'])} | {worst} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    step = parser.add_mutually_exclusive_group(required=True)
    step.add_argument("--collect", metavar="DIR", help="profile every case into DIR (GPU)")
    step.add_argument("--analyse", metavar="DIR", help="compare the reports in DIR")
    step.add_argument("--calibrate", metavar="DIR", help="the achieved device-memory "
                      "bandwidth on the calibration half of the cases in DIR")
    parser.add_argument("--small", action="store_true", help="--collect at small sizes")
    parser.add_argument("--timeout", type=float, default=240, help="seconds per case")
    parser.add_argument("--cases", nargs="*", default=[], metavar="WORD",
                        help="--collect only the cases whose name holds a WORD")
    parser.add_argument("--json", metavar="PATH", help="--analyse: also write the cases "
                        "and the summary as JSON")
    parser.add_argument("--target", default=LEAF, help="--analyse: predict at this "
                        "description (hopper or one that specializes it, e.g. the one "
                        "`mcl hwd detect --measure` wrote; default: hopper)")
    parser.add_argument("--hwd-path", action="append", default=[], metavar="DIR",
                        help="--analyse: also read descriptions from DIR (repeatable; "
                        "handed to mcl profile as MCL_HWD_PATH)")
    parser.add_argument("--clock-control", choices=("base", "none"), default="base",
                        help="--collect with ncu's clock control (base: the SM clock locked "
                        "to base, ncu's default; none: free to boost)")
    args = parser.parse_args()
    if args.collect:
        return collect(Path(args.collect), args.small, args.timeout, args.cases,
                       args.clock_control)
    if args.calibrate:
        found = calibrate(Path(args.calibrate))
        print(json.dumps(found, indent=2))
        return 0
    result = analyse(Path(args.analyse), args.target, tuple(args.hwd_path))
    print(table(result["summary"]))
    print()
    print(estimate_table(result["time_estimate"]))
    print()
    print(estimate_cases_table(result["cases"]))
    print()
    from mcl.profile.series import steps_table

    print(steps_table(result["steps"]))
    print()
    print(pays_table(result["pays"]))
    for case in result["cases"]:
        if "error" in case:
            print(f"{case['case']}: {case['error']}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
