"""`mcl roofline K.mcpl|DIR ... [--level LEAF] [-D name=value ...] [--run [--device SPEC]
[--repeat N]] [--plot OUT.png|OUT.svg] [--format text|json]`: the roofline of each kernel
version (docs/feedback.md `roofline`).

Each file (or each hand-written version of a folder's series.toml) is analysed at
`--level` (translated there first) or at its own level: its arithmetic intensity against
every memory level, the bound and the attainable performance at the `-D` sizes. With
`--run` the OpenCL generated from that level runs on a device (inputs from the folder's
numpy reference) and the point is the measured performance. `--plot` draws the chart,
each version a point (mcl.report.plots).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcl.commands.options import (
    add_define_argument,
    add_device_argument,
    add_hwd_path_argument,
    add_include_argument,
    add_repeat_argument,
    library_from_args,
)
from mcl.diagnostics import MclError, Span, error
from mcl.output_files import say_written
from mcl.output_width import say

if TYPE_CHECKING:
    from mcl.mcpl.ast import Function
    from mcl.mcpl.loader import Program


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "roofline",
        help="the roofline of kernel versions: bound, attainable performance, chart",
        description=(
            "For each kernel (a .mcpl file, or every hand-written version of a folder's "
            "series.toml), the arithmetic intensity against each memory level, the roof that "
            "bounds it and the performance it can attain at the -D sizes, at --level (or the "
            "kernel's own level). With --run, also the measured performance; with --plot, "
            "the roofline chart with each version as a point."
        ),
    )
    p.add_argument("kernels", nargs="+", metavar="K.mcpl|DIR",
                   help="kernel files or series folders")
    p.add_argument("--level", metavar="LEAF",
                   help="translate every kernel to LEAF first (default: each at its own level)")
    add_define_argument(p, "a kernel size; the bound and attainable figures need them")
    p.add_argument("--run", action="store_true",
                   help="run each version's OpenCL from its level and plot the measurement")
    add_device_argument(p, when="with --run: ")
    add_repeat_argument(p, default=3, when="with --run: ")
    p.add_argument("--plot", metavar="OUT", help="draw the chart to OUT (.png or .svg)")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text (default) or one JSON document (mcl/schemas/roofline.schema.json)")
    add_include_argument(p)
    add_hwd_path_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mcl.feedback.values import collect_values

    if args.repeat < 1:
        raise MclError(error("roofline-repeat", "--repeat needs a positive count"))
    if args.device and not args.run:
        raise MclError(error("roofline-needs-run", "--device only applies with --run",
                             hint="add --run to measure the versions"))
    if args.plot:
        from mcl.report.plots import check_plot_path

        check_plot_path(args.plot)
    library = library_from_args(args)
    if args.level:
        from mcl.translate.levels import require_level

        require_level(library, args.level)
    values = collect_values(args.defines)
    points, skipped = [], []
    for name, path in _versions(args.kernels, library):
        point, why = _point(name, path, library, values, args)
        if point is None:
            skipped.append({"name": name, "why": why})
        else:
            points.append(point)
    document = {"schema_version": _schema_version(), "title": _title(args, values),
                "values": dict(values), "points": points, "skipped": skipped}
    if args.format == "json":
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        _print_text(document)
    if args.plot:
        from mcl.report.plots import roofline_figure, save

        out = save(roofline_figure(document), args.plot)
        say_written(out, stdout_is_data=args.format == "json")
    return 0 if points else 1


def _schema_version() -> int:
    from mcl.schemas import SCHEMA_VERSION

    return SCHEMA_VERSION


def _title(args: argparse.Namespace, values: dict[str, Any]) -> str:
    sizes = ", ".join(f"{k} = {v}" for k, v in values.items())
    where = f" at {args.level}" if args.level else ""
    return f"roofline{where}" + (f" — {sizes}" if sizes else "")


def _versions(items: list[str], library: Any) -> list[tuple[str, Path]]:
    """(name, file) of every kernel: files as given, folders by their series.toml."""
    out = []
    for item in items:
        path = Path(item)
        if path.is_dir():
            from mcl.report import load_series

            series = load_series(path, library)
            out += [(v.name, v.path) for v in series.versions if v.path is not None]
        else:
            out.append((path.stem, path))
    return out


def _point(name: str, path: Path, library: Any, values: dict[str, Any],
           args: argparse.Namespace) -> tuple[dict[str, Any] | None, str]:
    from mcl import pipeline
    from mcl.feedback.analyses.roofline import roofline_of
    from mcl.report.measure import can_reach

    try:
        # checked, as for mcl check and codegen: no roofline of a kernel with errors
        checked = pipeline.checked_at(path, args.include_dirs, library)
        reference = _reference(path)
        function = _function(checked.program, reference)
        level = args.level or function.hwd
        if level != function.hwd:
            if not can_reach(library, function.hwd, level):
                return None, f"{function.hwd} is not above {level}"
            checked = pipeline.lower(checked, level, library, function.name)
            translated = checked.main.function(function.name)
            assert translated is not None  # translation keeps every function's name
            function = translated
        roof = roofline_of(function, checked, library.get(level), values=values)
        # A kernel without arithmetic has no intensity to plot, but its level may well
        # state a peak: `mcl check --level` gives its data-movement roofs.
        moves_only = roof is None and roofline_of(
            function, checked, library.get(level), memory_only=True, values=values) is not None
    except MclError as exc:
        # the first diagnostic with its file:line:col, as mcl check prints it
        return None, str(exc.diagnostics[0]).splitlines()[0]
    if moves_only:
        return None, (f"no arithmetic, data movement only (`mcl check --level {level}` "
                      "gives its memory roofs)")
    if roof is None:
        return None, f"{level} states no peak (docs/hardware.md)"
    point = point_document(name, str(path), roof, values)
    if args.run:
        point["measured"] = _measure(checked.program, function.name, level, library, reference,
                                     args, roof)
    return point, ""


def point_document(name: str, file: str, roof: Any, values: dict[str, Any]) -> dict[str, Any]:
    """One version's roofline as JSON (mcl/schemas/roofline.schema.json)."""
    from mcl.feedback.values import evaluate

    def number(expr: Any) -> float | None:
        n = evaluate(expr, values).numeric
        return float(n) if n is not None else None

    return {
        "name": name, "file": file, "level": roof.level, "dtype": roof.dtype,
        "flops": number(roof.flops), "flops_symbolic": str(roof.flops), "peak": roof.peak,
        "levels": [{"space": lv.space, "bytes": number(lv.bytes),
                    "intensity": number(roof.intensity(lv)),
                    "intensity_symbolic": str(roof.intensity(lv)),
                    "bandwidth": lv.bandwidth} for lv in roof.levels],
        "bound": roof.bound(values), "attainable": roof.attainable(values),
        "least_seconds": roof.min_seconds(values), "approximate": roof.approximate,
        "measured": None,
    }


def _reference(path: Path) -> Any:
    from mcl.verify import load_reference, reference_for

    try:
        return load_reference(reference_for(path))
    except MclError:
        return None


def _function(program: Program, reference: Any) -> Function:
    """The function of the reference's FUNCTION, else the file's last one; an error for a
    file that defines none (an empty file has no roofline)."""
    found = program.main.function(reference.function) if reference is not None else None
    if found is not None:
        return found
    if not program.main.functions:
        raise MclError(error(
            "roofline-no-function", f"{program.main.file} defines no function, so it has no "
            "roofline", Span.point(program.main.file, 1, 1),
            hint="a roofline is of a function written for a level, e.g. "
            "`perfect void f(...) { ... }`"))
    return program.main.functions[-1]


def _measure(program: Program, function: str, level: str, library: Any, reference: Any,
             args: argparse.Namespace, roof: Any) -> dict[str, Any] | None:
    if reference is None:
        return None
    from mcl.backends import default_backend
    from mcl.report.attained import attained
    from mcl.report.measure import measure_program
    from mcl.verify import make_inputs, parse_defines

    sizes, inputs = make_inputs(reference, parse_defines(args.defines, reference.sizes), seed=0)
    m = measure_program(program, function, level, library, inputs,
                        default_backend().select_device(args.device),
                        repeat=args.repeat)
    reached = attained(roof, sizes, m.seconds) if not m.problem else None
    if reached is None:
        return None
    flops = reached.least_seconds * reached.attainable
    return {"device": m.device, "seconds": m.seconds, "rate": flops / m.seconds,
            "fraction": reached.fraction}


def _print_text(document: dict[str, Any]) -> None:
    from mcl.feedback.analyses.roofline import describe_bound, percent, rate_text

    say(document["title"])
    for p in document["points"]:
        levels = ", ".join(f"{lv['intensity_symbolic']}"
                           + (f" (= {lv['intensity']:.3g})" if lv["intensity"] is not None else "")
                           + f" flop/B against {lv['space']}" for lv in p["levels"])
        line = f"  {p['name']} at {p['level']}: {levels or 'no memory level'}"
        if p["bound"] is not None:
            line += f"; bound by {describe_bound(p['bound'])}"
        if p["attainable"] is not None:
            line += (f", attainable {rate_text(p['attainable'], 'FLOP/s')} "
                     f"({percent(p['attainable'] / p['peak'])} of peak)")
        measured = p.get("measured")
        if measured:
            line += (f"; measured {rate_text(measured['rate'], 'FLOP/s')}, "
                     f"{percent(measured['fraction'])} of the attainable")
        say(line)
    for s in document["skipped"]:
        say(f"  {s['name']}: no roofline ({s['why']})")
