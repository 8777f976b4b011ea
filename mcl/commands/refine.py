"""`mcl refine FILE --target LEAF [--steps N] [--beam B] [--lookahead 1|2] [--budget S]
[--measure [--backend NAME] [--device SPEC] [--repeat N]] [-o DIR [--force]]
[-D name=value ...] [--function NAME] [--reference PATH] [--format text|json]`: refine a
kernel by itself, a beam search over sequences of refinements ranked by the time model
(with --measure, by the device), each step verified, and write the series of versions
that `mcl report DIR` shows as Table II (docs/refinements.md, "mcl refine")."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcl.commands.options import (
    add_backend_argument,
    add_define_argument,
    add_device_argument,
    add_format_argument,
    add_hwd_path_argument,
    add_include_argument,
    add_quiet_argument,
    add_repeat_argument,
    library_from_args,
)
from mcl.diagnostics import MclError, error
from mcl.output_width import say

if TYPE_CHECKING:
    from mcl.commands.refine_series import SeriesRow
    from mcl.refine.search import SearchResult, Version


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "refine",
        help="refine a kernel by itself: a search over refinements, each step verified",
        description=(
            "Translate FILE to the leaf LEAF where it is written above it, then search "
            "(a beam search) over sequences of the refinements `mcl apply` offers, named "
            "constants' values among them, ranked by the time model's estimate at LEAF, "
            "each candidate checked and verified against the reference at three sizes. "
            "With --measure the best candidates of each step are timed on a device and "
            "ranked by their measured times. With -o, the best sequence is written as a "
            "series of versions that `mcl report DIR` shows as Table II."),
    )
    p.add_argument("file", metavar="FILE", help="MCPL kernel (.mcpl)")
    p.add_argument("--target", required=True, metavar="LEAF",
                   help="the leaf to refine for, e.g. hopper")
    p.add_argument("--steps", type=int, default=4, metavar="N",
                   help="refinements in a sequence at most (default 4)")
    p.add_argument("--beam", type=int, default=2, metavar="B",
                   help="versions kept at each step (default 2)")
    p.add_argument("--lookahead", type=int, choices=(1, 2), default=2, metavar="{1,2}",
                   help="2 (the default): take a step the model calls neutral (a named "
                   "count, say) where a refinement one step later is faster; 1: only "
                   "steps that are faster themselves")
    p.add_argument("--budget", type=float, metavar="SECONDS",
                   help="stop the search after this many seconds (checked before each "
                   "version is expanded; default: none)")
    p.add_argument("--measure", action="store_true",
                   help="time the kept candidates of each step on a device and rank them "
                   "by their measured times")
    add_backend_argument(p, when="with --measure: ")
    add_device_argument(p, when="with --measure: ")
    add_repeat_argument(p, default=5, when="with --measure: ")
    p.add_argument("-o", "--output", metavar="DIR",
                   help="write the series here: a .mcpl file per version and series.toml "
                   "(default: write nothing, print the series)")
    p.add_argument("--force", action="store_true", help="write into DIR though it is not "
                   "empty")
    p.add_argument("--function", metavar="NAME",
                   help="the function to refine (default: the reference's, or the one kernel)")
    p.add_argument("--reference", metavar="PATH",
                   help="numpy reference (default: reference.py beside FILE)")
    add_define_argument(p, "a size for the time model and --measure, e.g. -D n=2048 "
                        "(default: the reference's sizes)")
    add_format_argument(p, "refine")
    add_include_argument(p)
    add_hwd_path_argument(p)
    add_quiet_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mcl.defines import parse_defines
    from mcl.refine.search import SearchLimits, search
    from mcl.refine.search_start import search_start

    _check_numbers(args)
    out = Path(args.output) if args.output else None
    if out is not None and out.exists() and (not out.is_dir() or any(out.iterdir())) \
            and not args.force:
        raise MclError(error("refine-exists", f"{out} exists and is not an empty folder; "
                             "the series is not written into it",
                             hint="name another folder with -o, or pass --force"))
    library = library_from_args(args)
    _require_leaf(library, args.target)
    start = search_start(args.file, args.target, library, args.include_dirs,
                         parse_defines(args.defines), args.function, args.reference)
    if start.kernel.model_seconds is None and not args.measure:
        raise MclError(error(
            "refine-no-estimate", f"the time model states no time for {start.kernel.function} "
            f"at {args.target} at {_sizes(start.kernel.values) or 'no sizes'}: the search has "
            "nothing to rank by", hint="give the sizes with -D name=value, or rank by "
            "measured times with --measure"))
    timer = None
    if args.measure:
        from mcl.commands.refine_timing import DeviceTimer

        timer = DeviceTimer.open(start.kernel, args.target, args.backend, args.device,
                                 args.repeat)
    limits = SearchLimits(args.steps, args.beam, args.budget, args.lookahead)
    result = search(start.kernel, limits, timer, _progress(args.quiet))
    rows = _rows(args, start.translated_from, result)
    written = _write(args, out, rows, result, timer) if out is not None else []
    if args.format == "json":
        print(json.dumps(_document(args, start.translated_from, result, rows, timer,
                                   written), indent=2))
    else:
        _print(args, start.translated_from, result, rows, timer)
    if written:
        from mcl.output_files import say_written

        say_written(written[0].parent, stdout_is_data=args.format == "json")
    return 0


def _check_numbers(args: argparse.Namespace) -> None:
    for flag, value in (("--steps", args.steps), ("--beam", args.beam),
                        ("--repeat", args.repeat)):
        if value < 1:
            raise MclError(error("refine-usage", f"{flag} needs a positive count, not {value}"))
    if args.budget is not None and args.budget <= 0:
        raise MclError(error("refine-usage", f"--budget needs a positive number of "
                             f"seconds, not {args.budget}"))
    from mcl.backends import DEFAULT_BACKEND

    if (args.device or args.backend != DEFAULT_BACKEND) and not args.measure:
        raise MclError(error("refine-usage", "--backend and --device only apply with "
                             "--measure", hint="add --measure to time the versions"))


def _require_leaf(library: Any, target: str) -> None:
    from mcl.translate.levels import require_level

    require_level(library, target, what="target")
    if target not in library.leaves():
        raise MclError(error(
            "refine-not-leaf", f"{target} is not a leaf of the hierarchy: the search "
            "refines a kernel for a leaf, where code is generated and the model times it",
            hint="leaves: " + ", ".join(sorted(library.leaves()))))


def _progress(quiet: bool) -> Callable[[str], None]:
    """Each step of the search, a line on stderr (mcl.progress; stdout keeps the
    report or the JSON document), none with --quiet."""
    from mcl.progress import Progress

    return Progress("refine", quiet=quiet).say


def _rows(args: argparse.Namespace, translated_from: str | None, result: SearchResult
          ) -> list[SeriesRow]:
    from mcl.commands.refine_series import series_rows

    path = Path(args.file)
    return series_rows(result, path, path.read_text(encoding="utf-8"), translated_from,
                       args.target)


def _write(args: argparse.Namespace, out: Path, rows: list[SeriesRow], result: SearchResult,
           timer: Any) -> list[Path]:
    from mcl.commands.refine_series import SearchSettings, write_series

    assert result.start.kernel is not None
    reference = result.start.kernel.reference
    settings = SearchSettings(Path(args.file), args.target, args.steps, args.beam, args.budget,
                              args.backend if timer is not None else None,
                              result.start.kernel.values if result.start.kernel else {})
    return write_series(out, rows, result, settings, reference)


def _print(args: argparse.Namespace, translated_from: str | None, result: SearchResult,
           rows: list[SeriesRow], timer: Any) -> None:
    from mcl.feedback.emit import seconds_text

    kernel = result.start.kernel
    assert kernel is not None
    where = f" (translated from {translated_from})" if translated_from else ""
    say(f"{Path(args.file).name}, {kernel.function} refined for {args.target}{where} at "
          f"{_sizes(kernel.values) or 'no sizes'}"
          + (f", timed on {timer.device_name}" if timer is not None else ""))
    for row in rows:
        version = row.version
        times = []
        if version is not None and version.seconds is not None:
            times.append(f"model {seconds_text(version.seconds)}")
        if version is not None and version.measured_seconds is not None:
            times.append(f"measured {seconds_text(version.measured_seconds)}")
        elif version is not None and version.measured is not None and version.measured.problem:
            times.append(f"not measured: {version.measured.problem}")
        say(f"  {row.name}: {row.change}" + (f"  {', '.join(times)}" if times else ""))
        if version is not None and version.verification is not None:
            from mcl.commands.refine_series import verified_text

            say(f"      verified {verified_text(version)}")
    say(f"{_overall(result)}; {_count(result.candidates, 'candidate')} weighed in "
          f"{result.wall_s:.1f} s; stopped: {result.stopped}")


def _overall(result: SearchResult) -> str:
    start, best = result.start, result.best
    parts = []
    if start.seconds and best.seconds:
        parts.append(f"estimated {start.seconds / best.seconds:.2f}x")
    if start.measured_seconds and best.measured_seconds:
        parts.append(f"measured {start.measured_seconds / best.measured_seconds:.2f}x")
    return (f"{_count(len(result.series) - 1, 'refinement')}, "
            + (" and ".join(parts) if parts else "no gain") + " over the first version")


def _document(args: argparse.Namespace, translated_from: str | None, result: SearchResult,
              rows: list[SeriesRow], timer: Any, written: list[Path]) -> dict[str, Any]:
    from mcl.schemas import SCHEMA_VERSION

    kernel = result.start.kernel
    assert kernel is not None
    return {
        "schema_version": SCHEMA_VERSION, "file": args.file, "target": args.target,
        "function": kernel.function, "values": dict(kernel.values),
        "translated_from": translated_from, "steps": args.steps, "beam": args.beam,
        "lookahead": args.lookahead,
        "measured_on": timer.device_name if timer is not None else None,
        "series": [_row_json(row) for row in rows],
        "candidates": result.candidates, "not_offered": result.refused,
        "stopped": result.stopped, "wall_s": result.wall_s, "step_seconds": result.step_seconds,
        "written": [str(p) for p in written],
    }


def _row_json(row: SeriesRow) -> dict[str, Any]:
    from mcl.commands.refine_series import verified_text

    version: Version | None = row.version
    measured = version.measured if version is not None else None
    return {
        "name": row.name, "change": row.change,
        "refinement": version.invocation or None if version is not None else None,
        "estimated_seconds": version.seconds if version is not None else None,
        "estimated_gain": version.estimated_gain if version is not None else None,
        "measured_seconds": version.measured_seconds if version is not None else None,
        "measured_gain": version.measured_gain if version is not None else None,
        "not_measured": measured.problem if measured is not None else None,
        "verified": (verified_text(version) or None) if version is not None else None,
    }


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _sizes(sizes: Any) -> str:
    return " ".join(f"{k}={v}" for k, v in dict(sizes).items())
