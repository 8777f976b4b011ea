"""Performance feedback as a post-check stage of `mcl check` (mcl.commands.check).

After a file checks clean, at the level given by `--level` (after translation) or at each
function's own level, the feedback engine runs and its report follows the diagnostics:
a rich report on stdout, or a `"messages"` list in the `--format json` document. Options:
`-D name=value` (repeatable), `--values FILE` (TOML), `--feedback`, `--no-feedback`,
`--severity LEVEL` (only messages at least that pressing, in both reports) and
`--verbose` (list every value under every message in the rich report).

Feedback runs when asked for: with `--level`, `-D`, `--values` or `--feedback` (and not
`--no-feedback`). A plain `mcl check FILE` stays a quick check that never imports SymPy
(importing this module is cheap too).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from typing import Any

from mcl.diagnostics import Diagnostic


class FeedbackStage:
    """Implements mcl.commands.check.PostCheckStage."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        group = parser.add_argument_group(
            "performance feedback",
            "after a clean check, analyse each kernel at its level (docs/feedback.md)")
        group.add_argument("-D", dest="defines", action="append", default=[],
                           metavar="NAME=VALUE",
                           help="value of a kernel parameter for numeric feedback, e.g. "
                                "-D n=2048 (repeatable)")
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
                           help="list every value under every feedback message, also "
                                "those its text shows")

    @staticmethod
    def wanted(args: argparse.Namespace) -> bool:
        if getattr(args, "no_feedback", False):
            return False
        return bool(getattr(args, "feedback", False) or getattr(args, "level", None)
                    or getattr(args, "defines", None) or getattr(args, "values_files", None)
                    or getattr(args, "severity", None))

    def run(self, checked: Any, library: Any, args: argparse.Namespace) -> list[Diagnostic]:
        if not self.wanted(args):
            return []
        from mcl.feedback.values import collect_values

        values = collect_values(getattr(args, "defines", []), getattr(args, "values_files", []))
        from mcl.feedback.registry import analyse_program

        start = time.perf_counter()
        messages, levels = analyse_program(checked.program, library, values)
        checked.feedback = messages
        checked.feedback_levels = levels
        checked.feedback_seconds = time.perf_counter() - start
        checked.feedback_options = ReportOptions.of(args)
        return []

    # -- reports (called by mcl.commands.check after the diagnostics) ---------------
    def json_report(self, files: list[Any]) -> dict[str, Any]:
        from mcl.feedback.messages import at_least
        from mcl.feedback.render_json import message_to_json

        return {"messages": [message_to_json(m) for f in files
                             for m in getattr(f, "feedback", [])
                             if at_least(m, _options(f).minimum)]}

    def text_report(self, files: list[Any]) -> None:
        """One report per file (two files may define functions of the same name)."""
        if not any(getattr(f, "feedback", []) for f in files):
            return
        from rich.console import Console

        from mcl.feedback.render_text import render_feedback

        console = Console(highlight=False, soft_wrap=True)
        for f in files:
            messages = getattr(f, "feedback", [])
            if messages:
                options = _options(f)
                render_feedback(messages, console, getattr(f, "feedback_levels", {}),
                                verbose=options.verbose, minimum=options.minimum)


SEVERITIES = ("info", "suggestion", "warning")


@dataclass(frozen=True)
class ReportOptions:
    """How a file's feedback is reported (`--severity`, `--verbose`); kept with the
    file's messages, since the reports are asked for after all files ran."""

    minimum: Any  # mcl.feedback.messages.Severity
    verbose: bool = False

    @staticmethod
    def of(args: argparse.Namespace) -> ReportOptions:
        from mcl.feedback.messages import Severity

        return ReportOptions(Severity(getattr(args, "severity", None) or "info"),
                             bool(getattr(args, "verbose", False)))


def _options(checked: Any) -> ReportOptions:
    from mcl.feedback.messages import Severity

    return getattr(checked, "feedback_options", None) or ReportOptions(Severity.INFO)
