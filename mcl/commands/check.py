"""`mcl check FILE... [-I DIR] [--hwd-path DIR] [--level LEVEL] [--format text|json]`:
parse and check MCPL kernels (mcpl.md §5), print the diagnostics with the source line and a
marker, and a one-line summary. Exit status 0 when no file has errors, 1 otherwise.

The work is a short pipeline per file: load (parse + imports) -> optionally translate to
`--level` -> check -> post-check stages. A post-check stage (performance feedback adds one,
with its own options such as `-D name=value` and `--values FILE`) registers in
`POST_CHECK_STAGES`; it runs only on files without errors and returns more diagnostics.

Heavy modules are imported inside `run`, so `mcl --help` and the other commands do not pay
for them, and this path never imports sympy, numpy or pyopencl.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from mcl.commands.options import add_hwd_path_argument, add_include_argument, library_from_args
from mcl.diagnostics import Diagnostic, MclError, Severity


@dataclass
class CheckedFile:
    """One file on its way through `mcl check`."""

    path: Path
    program: Any = None  # mcl.mcpl.loader.Program, once loaded (translated with --level)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def errors(self) -> int:
        return sum(d.severity == Severity.ERROR for d in self.diagnostics)

    @property
    def warnings(self) -> int:
        return sum(d.severity == Severity.WARNING for d in self.diagnostics)


class PostCheckStage(Protocol):
    """A stage that runs after a file checked clean (e.g. performance feedback)."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(
        self, checked: CheckedFile, library: Any, args: argparse.Namespace
    ) -> list[Diagnostic]: ...


# Stages other issues plug in (feedback: `-D name=value`, `--values FILE`). A stage may
# also add to the reports: `json_report(files) -> dict` (merged into the JSON document)
# and `text_report(files)` (printed after the diagnostics).
POST_CHECK_STAGES: list[PostCheckStage] = []


def _register_feedback() -> None:
    from mcl.feedback.stage import FeedbackStage  # cheap: the analyses load only when run

    POST_CHECK_STAGES.append(FeedbackStage())


_register_feedback()


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
    for stage in POST_CHECK_STAGES:
        stage.add_arguments(p)
    p.set_defaults(func=run)


def _translator(level: str | None) -> Callable[[Any, Any], Any] | None:
    """With `--level`, a function from a loaded program to the translated one."""
    if level is None:
        return None
    from mcl.translate import translate_program

    def translate(program: Any, library: Any) -> Any:
        result = translate_program(program, level, library)
        return result.program, list(result.notes)

    return translate


def check_file(
    path: Path,
    include_dirs: list[str],
    library: Any,
    translate: Callable[[Any, Any], Any] | None = None,
    args: argparse.Namespace | None = None,
) -> CheckedFile:
    """Load, (translate,) check and run the post-check stages on one file."""
    from mcl.mcpl.check import check_program
    from mcl.mcpl.loader import load_program

    checked = CheckedFile(path)
    try:
        checked.program = load_program(path, include_dirs, library)
        if translate is not None:
            # The source is checked first: translation assumes a valid kernel.
            checked.diagnostics = check_program(checked.program, library)
            if checked.errors:
                return checked
            checked.program, notes = translate(checked.program, library)
            checked.diagnostics += notes
        checked.diagnostics += check_program(checked.program, library)
    except MclError as exc:
        checked.diagnostics += exc.diagnostics
        return checked
    if not checked.errors and args is not None:
        for stage in POST_CHECK_STAGES:
            try:
                checked.diagnostics += stage.run(checked, library, args)
            except MclError as exc:
                checked.diagnostics += exc.diagnostics
    return checked


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def summary(files: list[CheckedFile]) -> str:
    errors = sum(f.errors for f in files)
    warnings = sum(f.warnings for f in files)
    counts = f"{_count(errors, 'error')}, {_count(warnings, 'warning')}"
    if len(files) == 1:
        return f"{files[0].path.name}: {counts}"
    return f"{len(files)} files checked: {counts}"


def run(args: argparse.Namespace) -> int:
    try:
        library = library_from_args(args)
        translate = _translator(args.level)
        if args.level is not None:
            from mcl.translate.levels import require_level

            require_level(library, args.level)
    except MclError as exc:
        _report([CheckedFile(Path(f), diagnostics=exc.diagnostics) for f in args.files[:1]], args)
        return 1
    files = [check_file(Path(f), args.include_dirs, library, translate, args) for f in args.files]
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
        for stage in POST_CHECK_STAGES:
            if hasattr(stage, "json_report"):
                document.update(stage.json_report(files))
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
        return
    from rich.console import Console

    from mcl.render import render_diagnostics

    # soft_wrap: a long source line must not wrap, or the marker under it would drift.
    console = Console(stderr=True, highlight=False, soft_wrap=True)
    render_diagnostics([d for f in files for d in f.diagnostics], console)
    for stage in POST_CHECK_STAGES:
        if hasattr(stage, "text_report"):
            stage.text_report(files)
    print(summary(files))
