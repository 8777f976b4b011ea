"""Performance feedback after `mcl check` (mcl.commands.check, which owns the options).

After a file checks clean, at the level given by `--level` (after translation) or at each
function's own level, the feedback engine runs and its report follows the diagnostics:
a rich report on stdout, or a `"messages"` list in the `--format json` document. What to
run with and how to report is a `FeedbackOptions` (from `-D name=value`, `--values FILE`,
`--severity LEVEL` and `--verbose`); what came out, a `FileFeedback` kept on the file.

Importing this module is cheap: a plain `mcl check FILE` never imports SymPy.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcl.feedback.messages import FeedbackSeverity, Message

if TYPE_CHECKING:
    from mcl.feedback.findings import Finding
    from mcl.feedback.kept_findings import KeptFindings
    from mcl.hdl.library import HwdLibrary
    from mcl.mcpl.checked import CheckedProgram

SEVERITIES = ("info", "suggestion", "warning")


@dataclass(frozen=True)
class FeedbackOptions:
    """The values to analyse with and how a file's feedback is reported."""

    defines: Sequence[str] = ()  # -D name=value
    values_files: Sequence[str] = ()  # --values FILE (TOML); -D wins
    # --severity: only messages at least this pressing
    minimum: FeedbackSeverity = FeedbackSeverity.INFO
    # --verbose: every message (also those with nothing to act on) and every value under it
    verbose: bool = False
    # the SM clock (Hz) to evaluate the time model at instead of the description's: `mcl
    # profile` passes the clock the profiler ran the kernel at (docs/profile.md)
    clock_hz: float | None = None


@dataclass
class FileFeedback:
    """The feedback on one checked file (reported after all files ran)."""

    messages: list[Message]
    levels: dict[str, str]  # analysed function -> its level
    seconds: float
    options: FeedbackOptions = field(default_factory=FeedbackOptions)
    # per message: shown without --verbose (mcl.feedback.render.visibility); empty: all of them
    by_default: list[bool] = field(default_factory=list)
    # the typed findings that carry `messages`, one each (mcl.feedback.findings): for
    # readers of their fields, such as the editor's code lens
    findings: list[Finding] = field(default_factory=list)

    def shown_by_default(self) -> list[bool]:
        return self.by_default or [True] * len(self.messages)


def run_feedback(checked: CheckedProgram, library: HwdLibrary, options: FeedbackOptions,
                 kept: KeptFindings | None = None) -> FileFeedback:
    """Analyse every kernel of a checked program (mcl.feedback.registry.analyse_program);
    with `kept`, reusing the findings of kernels unchanged since a run before."""
    from mcl.feedback.registry import analyse_program_findings
    from mcl.feedback.render.visibility import shown_by_default
    from mcl.feedback.values import collect_values

    values = collect_values(options.defines, options.values_files)
    start = time.perf_counter()
    findings, levels = analyse_program_findings(checked, library, values, options.clock_hz,
                                                kept)
    messages = [f.message for f in findings]
    return FileFeedback(messages, levels, time.perf_counter() - start, options,
                        shown_by_default(messages, checked.program,
                                         [f.change for f in findings]), findings)


def json_report(reports: Iterable[FileFeedback]) -> dict[str, Any]:
    """The `"messages"` of the `--format json` document: all of them (at `--severity`),
    each marked with whether the text report shows it without `--verbose`."""
    from mcl.feedback.messages import at_least
    from mcl.feedback.render.json_report import message_to_json

    return {"messages": [{**message_to_json(m), "shown_by_default": shown}
                         for r in reports
                         for m, shown in zip(r.messages, r.shown_by_default(), strict=True)
                         if at_least(m, r.options.minimum)]}


def text_report(reports: Iterable[FileFeedback]) -> None:
    """One report per file (two files may define functions of the same name)."""
    reports = [r for r in reports if r.messages]
    if not reports:
        return
    from mcl.feedback.render.text import render_feedback
    from mcl.styled import printer

    out = printer()
    for r in reports:
        render_feedback(r.messages, out, r.levels, verbose=r.options.verbose,
                        minimum=r.options.minimum, by_default=r.shown_by_default())
