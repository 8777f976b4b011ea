"""`mcl profile FILE --target LEAF [-D name=value ...] [--function NAME] [--ncu PATH]
[--counters CSV] [--report PATH] [--clock-control base|none] [--format text|json]`: run
the kernel's generated CUDA under Nsight Compute and print each figure of mcl's feedback
beside the counter that measures it, flagged where the two differ by more than the
figure's tolerance (docs/profile.md), the time model at the SM clock the kernel ran at.
`--counters` reads a recorded CSV report instead of running ncu.
Exit status 0 when the comparison was made (flags are findings, not failures), 1 on
errors.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from mcl.commands.options import (
    add_define_argument,
    add_format_argument,
    add_hwd_path_argument,
    add_include_argument,
    library_from_args,
)
from mcl.diagnostics import MclError, error
from mcl.profile.counters import Pages
from mcl.profile.ncu import CLOCK_CONTROLS
from mcl.styled import text_console


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "profile",
        help="measure a kernel with Nsight Compute and compare with the feedback",
        description=(
            "Run the CUDA generated from leaf LEAF under Nsight Compute (ncu) and print "
            "each figure of the performance feedback (time bound, DRAM traffic, "
            "coalescing, bank conflicts, occupancy, registers, spills, divergence) beside "
            "the hardware counter that measures it, with a flag where they differ by more "
            "than the stated tolerance and the likely reason (docs/profile.md). Needs the "
            "CUDA backend (mcl[cuda]) and a CUDA toolkit's ncu."
        ),
    )
    p.add_argument("file", metavar="FILE", help="MCPL kernel (.mcpl or .mcl), or a series "
                   "folder: its LEAF_v1.mcpl, LEAF_v2.mcpl, ... and each step's measured "
                   "gain beside the suggestions it followed")
    p.add_argument("--target", metavar="LEAF", required=True,
                   help="leaf to generate CUDA from (e.g. hopper)")
    add_define_argument(p, "set a size of the reference, e.g. -D n=4096")
    p.add_argument("--function", metavar="NAME",
                   help="function to profile (default: the reference's)")
    p.add_argument("--reference", metavar="PATH",
                   help="numpy reference (default: reference.py beside FILE)")
    p.add_argument("--ncu", metavar="PATH", help="Nsight Compute's ncu (default: ncu on "
                   "PATH, then /usr/local/cuda/bin/ncu)")
    p.add_argument("--counters", metavar="CSV", help="compare with a recorded report "
                   "(`ncu --import R --csv --page raw --print-units base`; its source page "
                   "beside it as CSV's name .source.csv) instead of running ncu; for a "
                   "series, a folder of FOLDER-VERSION.csv")
    p.add_argument("--report", metavar="PATH", help="keep ncu's report (.ncu-rep) at PATH "
                   "for Nsight Compute's own views")
    p.add_argument("--clock-control", choices=CLOCK_CONTROLS, default="base",
                   help="ncu's clock control: base (default) locks the SM clock to base "
                   "for every replay, none lets it boost; the time model is evaluated at "
                   "the clock measured either way")
    p.add_argument("--save-counters", metavar="CSV", help="also write the counters read "
                   "(the CSV --counters takes) to CSV")
    add_format_argument(p, "profile")
    add_include_argument(p)
    add_hwd_path_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mcl.backends import load_mapping
    from mcl.profile.ncu import profiled_backend

    library = library_from_args(args)
    # before anything runs: an unknown leaf, one without CUDA, an output that cannot be
    # written
    load_mapping(library.get(args.target), language=profiled_backend())
    for option, value in (("--save-counters", args.save_counters), ("--report", args.report)):
        if value and not Path(value).resolve().parent.is_dir():
            raise MclError(error("profile-output", f"{option} {value}: its folder does not "
                                 "exist", None, hint="create the folder first"))
    path = Path(args.file)
    if path.is_dir():
        return _series(args, path, library)
    document = profile_file(args, path, library,
                            Path(args.counters) if args.counters else None)
    if args.format == "json":
        import json

        print(json.dumps(document, indent=2))
    else:
        from mcl.profile.render import render

        render(document)
    return 0


def profile_file(args: argparse.Namespace, path: Path, library: Any,
                 counters: Path | None) -> dict[str, Any]:
    """The `mcl profile` document of one kernel file: measured (or read from `counters`)
    and compared."""
    from mcl.profile.compare import compare
    from mcl.profile.counters import parse_raw_csv, sm_clock_hz, totals
    from mcl.profile.leaf import at_leaf, predict_at_leaf
    from mcl.profile.line_compare import compare_lines
    from mcl.profile.source_lines import for_file, parse_source_csv
    from mcl.verify import load_reference, parse_defines, reference_for

    reference = load_reference(args.reference or reference_for(path))
    function = args.function or reference.function
    sizes = {**reference.sizes, **parse_defines(args.defines, reference.sizes)}
    program = at_leaf(path, args.include_dirs, library, function, args.target)
    if program.main.function(function) is None:
        raise MclError(error("run-unknown-function", f"{path} defines no function "
                             f"'{function}'", None, hint="choose one with --function NAME"))
    pages = _counters(args, path, function, sizes, counters)
    if args.save_counters:
        _write(Path(args.save_counters), pages.raw)
        _write(source_page_path(Path(args.save_counters)), pages.source)
    launches = parse_raw_csv(pages.raw)
    if not launches:
        raise MclError(error("profile-no-kernel", "ncu measured no kernel launch", None,
                             hint="does the function launch a kernel at these sizes?"))
    # the time model at the clock the kernel ran at (ncu locks it to base), so that its
    # estimate and the measured time are of the same clock (docs/profile.md)
    clock = sm_clock_hz(launches)
    prediction = predict_at_leaf(program, library, function, args.target, sizes, clock)
    if counters is not None:
        from mcl.profile.recorded_sizes import other_sizes
        from mcl.render import render_diagnostics

        mismatch = other_sizes(str(counters), launches, prediction, sizes)
        if mismatch is not None:
            render_diagnostics([mismatch])
    figures = compare(prediction, totals(launches))
    lines = compare_lines(prediction, for_file(parse_source_csv(pages.source), path.name))
    return _document(str(path), args.target, function, sizes, launches, prediction,
                     figures, lines, clock)


def series_versions(folder: Path, leaf: str) -> list[Path]:
    """The versions of a series folder written at `leaf`: LEAF_v1.mcpl, LEAF_v2.mcpl, ...
    in the order of their numbers."""
    found = []
    for path in folder.glob(f"{leaf}_v*.mcpl"):
        number = path.stem.removeprefix(f"{leaf}_v")
        if number.isdigit():
            found.append((int(number), path))
    return [path for _, path in sorted(found)]


def _series(args: argparse.Namespace, folder: Path, library: Any) -> int:
    """FILE is a folder: each of its LEAF_vN versions profiled, and each step from one to
    the next with its measured gain beside the suggestions it followed (mcl.profile.series).
    With --counters FOLDER, version V's counters are FOLDER/<folder name>-V.csv (as
    --save-counters and benchmarks/validate_feedback.py name them)."""
    from mcl.profile.series import steps

    versions = series_versions(folder, args.target)
    if len(versions) < 2:
        raise MclError(error("profile-series", f"{folder}: a series needs two or more "
                             f"versions named {args.target}_v1.mcpl, {args.target}_v2.mcpl, "
                             "...", None))
    if args.save_counters or args.report:
        raise MclError(error("profile-series", "--save-counters and --report take one "
                             "kernel file, not a series folder", None))
    recorded = Path(args.counters) if args.counters else None
    documents = [(path.stem, profile_file(
        args, path, library,
        recorded / f"{folder.name}-{path.stem}.csv" if recorded is not None else None))
        for path in versions]
    found = steps(documents)
    if args.format == "json":
        import json

        from mcl.schemas import SCHEMA_VERSION

        print(json.dumps({"schema_version": SCHEMA_VERSION, "series": str(folder),
                          "versions": [d for _, d in documents], "steps": found}, indent=2))
        return 0

    from mcl.profile.render import render
    from mcl.profile.render import steps_table as render_steps

    console = text_console()
    for _, document in documents:
        render(document, console)
        console.print()
    console.print(render_steps(found))
    return 0


def source_page_path(raw: Path) -> Path:
    """Where the source page of a recorded raw page lies: X.csv beside X.source.csv."""
    return raw.with_name(raw.stem + ".source.csv")


def _counters(args: argparse.Namespace, path: Path, function: str, sizes: dict[str, int],
              raw: Path | None) -> Pages:
    if raw is not None:
        source = source_page_path(raw)
        return Pages(_read(raw), _read(source) if source.is_file() else "")
    from mcl.profile.ncu import find_ncu, profile, run_command

    ncu = find_ncu(args.ncu)
    argv = run_command(str(path), args.target, function,
                       [f"{k}={v}" for k, v in sizes.items()], args.include_dirs,
                       args.hwd_path)
    if args.report:
        return profile(ncu, argv, Path(args.report), clock_control=args.clock_control)
    with tempfile.TemporaryDirectory(prefix="mcl-profile-") as folder:
        return profile(ncu, argv, Path(folder) / "profile.ncu-rep",
                       clock_control=args.clock_control)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise MclError(error("profile-counters", f"--counters {path}: {exc.strerror}",
                             None)) from None


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise MclError(error("profile-counters", f"--save-counters {path}: "
                             f"{exc.strerror}", None)) from None


def _document(file: str, target: str, function: str, sizes: dict[str, int],
              launches: list[Any], prediction: Any, figures: list[Any], lines: list[Any],
              clock_hz: float | None = None) -> dict[str, Any]:
    from mcl.schemas import SCHEMA_VERSION

    return {
        "schema_version": SCHEMA_VERSION,
        "file": file,
        "function": function,
        "target": target,
        "sizes": sizes,
        "sm_clock_hz": clock_hz,
        "kernels": [{"name": k.kernel, "metrics": k.metrics} for k in launches],
        "figures": [{
            "kind": f.kind, "title": f.title, "unit": f.unit, "predicted": f.predicted,
            "measured": f.measured, "error": f.error, "tolerance": f.tolerance, "ok": f.ok,
            "reason": f.reason, "note": f.note} for f in figures],
        "per_line": [{"line": r.line, "kind": r.kind, "predicted": r.predicted,
                      "measured": r.measured, "ok": r.ok, "reason": r.reason,
                      "message": r.message} for r in lines],
        "suggestions": [{"line": s.line, "code": s.code, "message": s.message,
                         "estimated_gain": s.estimated_gain,
                         "estimated_seconds_after": s.estimated_seconds_after}
                        for s in prediction.suggestions],
        "flags": sum(f.ok is False for f in figures) + sum(not r.ok for r in lines),
    }
