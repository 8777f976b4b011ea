"""`mcl check FILE... [-I DIR] [--hwd-path DIR] [--level LEVEL] [--format text|json]`:
parse and check MCPL kernels (mcpl.md §5), print the diagnostics with the source line and a
marker, and a one-line summary. Exit status 0 when no file has errors, 1 otherwise.

Each file goes through mcl.pipeline: load (parse + imports) -> check -> with `--level`,
translate -> check -> performance feedback on files without errors, when asked for: with
`--level`, `-D`, `--values`, `--severity` or `--feedback` (and not `--no-feedback`).

Heavy modules are imported inside `run`, so `mcl --help` and the other commands do not pay
for them, and this path never imports sympy, numpy or pyopencl.
"""

from __future__ import annotations

import argparse
import gc
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mcl.commands.options import (
    add_define_argument,
    add_hwd_path_argument,
    add_include_argument,
    library_from_args,
)
from mcl.diagnostics import Diagnostic, MclError, Severity
from mcl.feedback.messages import FeedbackSeverity
from mcl.feedback.stage import (
    SEVERITIES,
    FeedbackOptions,
    FileFeedback,
    json_report,
    text_report,
)
from mcl.output_width import say

if TYPE_CHECKING:
    from mcl.hdl.library import HwdLibrary
    from mcl.mcpl.loader import Program


@dataclass
class CheckedFile:
    """One file on its way through `mcl check`."""

    path: Path
    program: Program | None = None  # once loaded (translated with --level)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    feedback: FileFeedback | None = None  # performance feedback, when asked for and clean

    @property
    def errors(self) -> int:
        return sum(d.severity == Severity.ERROR for d in self.diagnostics)

    @property
    def warnings(self) -> int:
        return sum(d.severity == Severity.WARNING for d in self.diagnostics)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check",
        help="check MCPL kernels against their hardware descriptions",
        description=(
            "Parse and check MCPL files: names, types, foreach nesting and the placement of "
            "statements against each function's hardware description, barriers, array "
            "sizes, read/write inference and aliasing (docs/checker.md). Exit status 0 when "
            "no file has errors, 1 otherwise."
        ),
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="MCPL source files (.mcpl or .mcl)")
    add_include_argument(p)
    add_hwd_path_argument(p)
    p.add_argument(
        "--level",
        metavar="LEVEL",
        help="translate each file to hardware description LEVEL first, then check the result",
    )
    p.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text: diagnostics with source lines on stderr and a summary on stdout; "
        "json: one JSON document on stdout",
    )
    add_feedback_arguments(p)
    p.set_defaults(func=run)


def add_feedback_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "performance feedback",
        "after a clean check, analyse each kernel at its level (docs/feedback.md)")
    add_define_argument(group, "value of a kernel parameter for numeric feedback, e.g. "
                               "-D n=2048")
    group.add_argument("--values", dest="values_files", action="append", default=[],
                       metavar="FILE",
                       help="TOML file of parameter values (name = number); -D wins")
    group.add_argument("--feedback", action="store_true",
                       help="report performance feedback (implied by --level, -D and "
                            "--values)")
    group.add_argument("--no-feedback", action="store_true",
                       help="only check; do not run the performance analyses")
    group.add_argument("--severity", choices=SEVERITIES, default=None,
                       help="show only feedback at least this pressing: info (all, "
                            "the default), suggestion (suggestions and warnings) or "
                            "warning; implies --feedback")
    group.add_argument("-v", "--verbose", action="store_true",
                       help="show every feedback message, also the facts with nothing "
                            "to act on (hidden by default), and every value under each, "
                            "also those its text shows")


def feedback_options(args: argparse.Namespace) -> FeedbackOptions | None:
    """The feedback to run after a clean check, or None when not asked for."""
    wanted = (args.feedback or args.level or args.defines or args.values_files
              or args.severity)
    if args.no_feedback or not wanted:
        return None
    return FeedbackOptions(tuple(args.defines), tuple(args.values_files),
                           FeedbackSeverity(args.severity or "info"), args.verbose)


def check_file(
    path: Path,
    include_dirs: list[str],
    library: HwdLibrary,
    level: str | None = None,
    feedback: FeedbackOptions | None = None,
) -> CheckedFile:
    """Load, check (translate to `level` and check again) and, when clean and `feedback`
    is given, analyse one file."""
    from mcl import pipeline

    found = pipeline.check_source(path, include_dirs, library, level, feedback)
    return CheckedFile(path, found.program, found.diagnostics, found.feedback)


def check_description(path: Path, args: argparse.Namespace) -> CheckedFile:
    """A hardware description (`mcl check mycpu.hdl`): loaded with the library of the
    command (its parent must be there), with its own errors and warnings."""
    from mcl.hdl.library import library_with
    from mcl.source_files import read_source

    checked = CheckedFile(path)
    try:
        read_source(path, "hdl-io")  # a missing file is 'cannot read', as for MCPL
        library = library_with([*args.hwd_path, path], bundled=not args.no_bundled)
    except MclError as exc:
        checked.diagnostics = exc.diagnostics
        return checked
    here = path.resolve()
    checked.diagnostics = [*library.failed.get(path.stem, []),
                           *(w for w in library.warnings
                             if w.span and Path(w.span.file).resolve() == here)]
    return checked


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def summary(files: list[CheckedFile]) -> str:
    errors = sum(f.errors for f in files)
    warnings = sum(f.warnings for f in files)
    counts = f"{_count(errors, 'error')}, {_count(warnings, 'warning')}"
    # The checker's counts; the feedback's warnings are advice, counted apart so that a
    # report that opens with "1 warning" does not end with "0 warnings" unexplained.
    advice = sum(m.severity == FeedbackSeverity.WARNING
                 for f in files if f.feedback for m in f.feedback.messages)
    if advice:
        counts += f" (and {_count(advice, 'feedback warning')} above)"
    if len(files) == 1:
        return f"{files[0].path.name}: {counts}"
    return f"{len(files)} files checked: {counts}"


def run(args: argparse.Namespace) -> int:
    try:
        library = library_from_args(args)
        if args.level is not None:
            from mcl.translate.levels import require_level

            require_level(library, args.level)
    except MclError as exc:
        _report([CheckedFile(Path(f), diagnostics=exc.diagnostics) for f in args.files[:1]], args)
        return 1
    feedback = feedback_options(args)
    files: list[CheckedFile] = []
    for f in args.files:
        if files:  # the cyclic garbage of the files before: a check process runs with
            gc.collect()  # the collector off (mcl.cli.run_program)
        files.append(check_description(Path(f), args) if f.endswith(".hdl")
                     else check_file(Path(f), args.include_dirs, library, args.level,
                                     feedback))
    _report(files, args)
    return 1 if any(f.errors for f in files) else 0


def _report(files: list[CheckedFile], args: argparse.Namespace) -> None:
    if args.format == "json":
        import json

        from mcl.render import diagnostic_to_json

        document = {
            "files": [
                {
                    "file": str(f.path),
                    "errors": f.errors,
                    "warnings": f.warnings,
                    "diagnostics": [diagnostic_to_json(d) for d in f.diagnostics],
                }
                for f in files
            ],
            "summary": summary(files),
        }
        document.update(json_report(f.feedback for f in files if f.feedback))
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
        return
    from mcl.render import render_diagnostics

    render_diagnostics([d for f in files for d in f.diagnostics])
    text_report(f.feedback for f in files if f.feedback)
    say(summary(files))
