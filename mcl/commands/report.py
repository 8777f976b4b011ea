"""`mcl report DIR [-D name=value ...] [--run] [--target LEAF] [--device SPEC]
[--format rich|markdown]`: the paper's Table II for a folder of kernel versions.

One row per version in refinement order (DIR/series.toml, see mcl.report.series): its
level, what changed (the `// change:` header comment), the performance feedback at its
level (symbolic, and numeric with -D), and with --run the performance of its OpenCL on a
device (GFLOP/s from the reference's work), verified against the numpy reference.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from mcl.commands.options import (
    add_define_argument,
    add_device_argument,
    add_hwd_path_argument,
    add_quiet_argument,
    add_repeat_argument,
    library_from_args,
)
from mcl.diagnostics import MclError, error
from mcl.output_files import check_output_file, say_written, write_text
from mcl.output_width import say
from mcl.styled import text_console

if TYPE_CHECKING:
    from mcl.hdl.library import HwdLibrary


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="the refinement table (paper Table II) of a folder of kernel versions",
        description=(
            "Print the stepwise-refinement table of the kernel versions in DIR (the paper's "
            "Table II): version, level, what changed (the `// change:` header comment of "
            "each file), the performance feedback at its level and, with --run, the "
            "measured performance of the OpenCL generated from a leaf. The order of the "
            "versions comes from DIR/series.toml."
        ),
    )
    p.add_argument("folder", metavar="DIR", help="folder of versions, e.g. kernels/matmul")
    add_define_argument(p, "a kernel size, for numeric feedback and for --run")
    p.add_argument("--run", action="store_true",
                   help="run every version that names a leaf in series.toml and show its "
                   "performance")
    p.add_argument("--target", metavar="LEAF",
                   help="with --run: run every hand-written version that can be translated "
                   "to LEAF, on LEAF")
    add_device_argument(p, when="with --run: ")
    add_repeat_argument(p, default=3, when="with --run: ")
    p.add_argument("--no-verify", action="store_true",
                   help="with --run: do not compare the outputs with the numpy reference")
    p.add_argument("--versions", metavar="A,B,...",
                   help="only these versions (translated rows need the row they translate)")
    p.add_argument("--all", dest="everything", action="store_true",
                   help="show every feedback message, not only the headline ones")
    p.add_argument("--format", choices=("rich", "markdown", "json"), default="rich",
                   help="terminal table (default), Markdown, or one JSON document (schema "
                   "mcl/schemas/report.schema.json)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the table to FILE")
    p.add_argument("--plot", metavar="OUT",
                   help="with --run: draw the series (measured rate per version, its roof and "
                   "the peer) to OUT, a .png or .svg file (needs matplotlib: mcl[plot])")
    add_hwd_path_argument(p)
    add_quiet_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mcl.feedback.values import collect_values
    from mcl.report import build_rows, load_series

    if args.repeat < 1:
        raise MclError(error("report-repeat", "--repeat needs a positive count"))
    if (args.target or args.device) and not args.run:
        raise MclError(error("report-needs-run", "--target and --device only apply with --run",
                             hint="add --run to measure the versions"))
    if args.output:
        check_output_file(args.output, "-o")
    if args.plot:
        if not args.run:
            raise MclError(error("report-needs-run", "--plot draws measured versions",
                                 hint="add --run to measure the versions"))
        from mcl.report.plots import check_plot_path

        check_plot_path(args.plot)
    library = library_from_args(args)
    if args.target:
        from mcl.translate.levels import require_level

        require_level(library, args.target)
    series = load_series(args.folder, library)
    if args.versions:
        series = _only(series, args.versions)
    values = collect_values(args.defines)
    count = len(series.versions)
    with _status(f"analysing {count} version{'s' if count != 1 else ''}", args.quiet):
        rows = build_rows(series, library, values, everything=args.everything)
    measurements, peers = _measure(series, rows, library, args, values) if args.run \
        else ({}, {})
    title = series.title + (_sizes_text(values) if values else "")
    if args.plot:
        import json

        from mcl.report.plots import save, series_figure
        from mcl.report.render import render_json

        document = json.loads(render_json(series.title, values, rows, measurements, peers))
        out = save(series_figure(document, title), args.plot)
        say_written(out, stdout_is_data=not args.output)
    if args.format in ("markdown", "json"):
        from mcl.report.render import render_json, render_markdown

        text = (render_markdown(title, rows, measurements, args.run, peers)
                if args.format == "markdown"
                else render_json(series.title, values, rows, measurements, peers))
        if args.output:
            write_text(args.output, text)
            say_written(args.output, stdout_is_data=False)
        else:
            sys.stdout.write(text)
    else:
        from rich.console import Console

        from mcl.report.render import render_rich

        if args.output:
            import io

            buffer = io.StringIO()
            render_rich(title, rows, measurements, args.run,
                        Console(file=buffer, width=200, highlight=False), peers)
            write_text(args.output, buffer.getvalue())
            say_written(args.output, stdout_is_data=False)
        else:
            render_rich(title, rows, measurements, args.run, text_console(), peers)
    failed = [r.name for r in rows if r.problem]
    wrong = [name for name, m in measurements.items() if m.verified is False]
    for name in failed:
        say(f"mcl report: {name}: {next(r.problem for r in rows if r.name == name)}",
              file=sys.stderr)
    for name in wrong:
        say(f"mcl report: {name}: outputs differ from the numpy reference", file=sys.stderr)
    return 1 if failed or wrong else 0


def _only(series: Any, names: str) -> Any:
    from dataclasses import replace

    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if series.version(n) is None]
    if unknown:
        from mcl.diagnostics import did_you_mean

        raise MclError(error("report-unknown-version", f"no version '{unknown[0]}' in the series",
                             hint=did_you_mean(unknown[0], series.names())
                             or "versions: " + ", ".join(series.names())))
    keep = set(wanted)
    for name in wanted:  # a translation needs the row it translates
        spec = series.version(name)
        while spec is not None and spec.source:
            keep.add(spec.source)
            spec = series.version(spec.source)
    return replace(series, versions=tuple(v for v in series.versions if v.name in keep))


def _sizes_text(values: dict[str, Any]) -> str:
    return " — " + ", ".join(f"{k} = {v}" for k, v in values.items())


def _measure(series: Any, rows: list[Any], library: HwdLibrary, args: argparse.Namespace,
             values: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run the rows that name a leaf for this device (or can reach --target), with the
    sizes among the `-D` values the feedback used (one parse of `-D`); on a CPU device
    also the reference's peer, in the same run."""
    from mcl.backends import default_backend
    from mcl.report.measure import Measurement, can_reach, device_type, measure_program
    from mcl.verify import expected_outputs, load_reference, make_inputs, sizes_from

    reference = load_reference(series.folder / "reference.py")
    sizes = sizes_from(values, reference.sizes, strict=False)
    sizes, inputs = make_inputs(reference, sizes, seed=0)
    expected = None if args.no_verify else expected_outputs(reference, inputs)
    device = default_backend().select_device(args.device)
    kind = device_type(device)
    out: dict[str, Any] = {}
    with _progress(len(rows), args.quiet) as advance:
        for row in rows:
            advance(row.name)
            if row.program is None or row.spec.translated:
                continue
            leaf = args.target or row.spec.leaf_for(kind)
            if leaf is None:
                continue
            level = row.program.main.function(reference.function).hwd
            if args.target and not can_reach(library, level, leaf):
                out[row.name] = Measurement(leaf, problem=f"{level} is not above {leaf}")
                continue
            out[row.name] = measure_program(
                row.program, reference.function, leaf, library, inputs, device,
                repeat=args.repeat, reference=reference, expected=expected,
                work=reference.work(sizes))
    peers = {}
    if kind == "cpu" and reference.peer is not None:
        from mcl.report.measure import measure_peer

        name, fn = reference.peer
        peers[name] = measure_peer(fn, inputs, args.repeat, reference.work(sizes))
    return out, peers


@contextmanager
def _status(text: str, quiet: bool) -> Iterator[None]:
    """`text` on stderr while it is done, if it takes long (mcl.progress.waiting)."""
    from mcl.progress import waiting

    with waiting("report", text, quiet=quiet):
        yield


@contextmanager
def _progress(total: int, quiet: bool) -> Iterator[Callable[[str], None]]:
    """Progress over the versions on stderr (mcl.progress); yields `advance(name)`,
    called as each version starts."""
    from mcl.progress import Progress

    with Progress("report", total, quiet=quiet) as progress:
        # PoCL compiles a kernel at its first launch: most of a version's wait
        yield lambda name: progress.step(f"running {name} (compiling it for the device "
                                         "first)")
