"""Feedback for people: a colored report per function (feedback.md, "Output").

For every analysed function:

- a title with the level and the number of messages of each severity, then a summary of
  what to act on: one line per warning or suggestion code with its title and the places
  it is about (`compute several elements per unit: c[i, j] (line 13)`);
- the messages grouped by the loops around them, in source order, most pressing first
  within a group (warnings, suggestions, then facts), each with its severity, the source
  line and a marker under the expression, the values the text does not already show
  (all of them with `verbose`), and a hint of what to try;
- only the messages shown by default (mcl.feedback.render.visibility: warnings, suggestions and
  the headline facts) unless `verbose`, with one last line that counts the others by
  analysis and says that `-v` shows them.

File names print relative to the current directory when the file lies below it, as
compilers print them; the JSON report keeps them as given.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mcl.diagnostics import Span
from mcl.feedback.codes import title
from mcl.feedback.emit import number_text
from mcl.feedback.messages import (
    SEVERITY_ORDER,
    FeedbackSeverity,
    Message,
    Value,
    at_least,
    sort_key,
)
from mcl.render import quoted_source
from mcl.source_files import source_lines
from mcl.styled import Line, Printer, printer

if TYPE_CHECKING:
    from rich.console import Console

_STYLE = {FeedbackSeverity.INFO: "bold cyan", FeedbackSeverity.SUGGESTION: "bold green",
          FeedbackSeverity.WARNING: "bold yellow"}
_PLURAL = {FeedbackSeverity.INFO: "info", FeedbackSeverity.SUGGESTION: "suggestions",
           FeedbackSeverity.WARNING: "warnings"}
_SUBJECTS_SHOWN = 4  # places listed per summary line before "+N more"
_SUBJECT_WIDTH = 40  # longer source text is not repeated in the summary


def display_path(path: str, cwd: Path | None = None) -> str:
    """`path` relative to the current directory when it lies below it (as compilers
    print file names), else as given."""
    p = Path(path)
    if not p.is_absolute():
        return path
    try:
        return str(p.relative_to(cwd or Path.cwd()))
    except ValueError:
        return path


def span_text(span: Span) -> str:
    return f"{display_path(span.file)}:{span.line}:{span.column}"


class _Sources:
    """Source lines by file, read once, numbered as the parsers number them."""

    def __init__(self) -> None:
        self._lines: dict[str, list[str]] = {}

    def line(self, path: str, number: int) -> str | None:
        if path not in self._lines:
            try:
                text = Path(path).read_text(encoding="utf-8-sig", errors="replace")
                self._lines[path] = source_lines(text)
            except OSError:
                self._lines[path] = []
        lines = self._lines[path]
        return lines[number - 1] if 0 < number <= len(lines) else None

    def snippet(self, span: Span, function: str = "") -> str | None:
        """The source text a message is about, when it is short enough to quote: the
        expression under a one-line span, the head of a statement (`if (j < m)`), or the
        function's name for a message about the whole function."""
        src = self.line(span.file, span.line)
        if src is None:
            return None
        if span.end_line == span.line and span.end_column > span.column:
            text = src[span.column - 1:span.end_column - 1].strip()
        else:
            text = src[span.column - 1:].strip().rstrip("{").strip()
            if function and f" {function}(" in f" {text}":
                return function
        text = text.rstrip(";").strip()
        return text if 0 < len(text) <= _SUBJECT_WIDTH else None


def render_feedback(messages: Sequence[Message], console: Console | Printer | None = None,
                    levels: dict[str, str] | None = None, *, verbose: bool = False,
                    minimum: FeedbackSeverity = FeedbackSeverity.INFO,
                    by_default: Sequence[bool] | None = None) -> None:
    """Print the report. `levels` names the level each function was analysed at; only
    messages at least as pressing as `minimum` are shown (`--severity`), and of those only
    the ones `by_default` marks (mcl.feedback.render.visibility) unless `verbose`, which also
    lists every value of every message, also those its text shows. Printed through
    `console` where given (a rich console or a printer), else mcl.styled's printer for
    stdout."""
    out = printer(console)
    sources = _Sources()
    by_function: dict[str, list[tuple[Message, bool]]] = {}
    marks = by_default if by_default is not None else [True] * len(messages)
    for m, mark in zip(messages, marks, strict=True):
        by_function.setdefault(m.function, []).append((m, mark))
    for function, group in by_function.items():
        pressing = [(m, mark) for m, mark in group if at_least(m, minimum)]
        shown = [m for m, mark in pressing if mark or verbose]
        quiet = [m for m, mark in pressing if not (mark or verbose)]
        files = {m.span.file for m, _ in group if m.span is not None}
        _function_report(function, shown, len(group) - len(shown), out, sources,
                         (levels or {}).get(function), verbose, minimum,
                         files.pop() if len(files) == 1 else None)
        if quiet:
            out.print(_quiet_line(quiet))
        out.print()


def _quiet_line(quiet: list[Message]) -> Line:
    """What the default view left out, by analysis, and how to see it: the facts with
    nothing to act on, and the suggestions that are no refinement with an estimated
    gain (mcl.feedback.render.visibility)."""
    facts = [m for m in quiet if m.severity == FeedbackSeverity.INFO]
    advice = [m for m in quiet if m.severity != FeedbackSeverity.INFO]
    parts = []
    if facts:
        what = "fact" if len(facts) == 1 else "facts"
        parts.append(f"{len(facts)} more {what} with nothing to act on ({_by_analysis(facts)})")
    if advice:
        what = "suggestion" if len(advice) == 1 else "suggestions"
        parts.append(f"{len(advice)} {'more ' if not facts else ''}{what} no refinement makes "
                     f"with an estimated gain ({_by_analysis(advice)})")
    return Line(f"  {' and '.join(parts)} not shown; -v shows every message", style="dim")


def _by_analysis(messages: list[Message]) -> str:
    kinds = Counter(m.analysis for m in messages)
    return ", ".join(f"{n} {analysis}" for analysis, n in kinds.most_common())


def _function_report(function: str, messages: list[Message], hidden: int, out: Printer,
                     sources: _Sources, level: str | None, verbose: bool,
                     minimum: FeedbackSeverity, file: str | None) -> None:
    out.print(_title(function, messages, level, hidden, minimum, file))
    if function and _summary(messages, out, sources):
        out.print()
    for loops, in_loop in _loop_groups(messages):
        where = " > ".join(loops) if loops else (f"function {function}" if function
                                                 else "values")
        out.print(Line(f"  [{where}]", style="dim"))
        previous: Span | None = None
        for m in sorted(in_loop, key=lambda m: (SEVERITY_ORDER[m.severity], sort_key(m))):
            # The source line once for a run of messages about the same code.
            _message(m, out, sources, verbose, quote=m.span != previous)
            previous = m.span
    needs = list(dict.fromkeys(n for m in messages for n in m.needs))
    if needs and not verbose:
        out.print(Line("  figures without a number need " + " ".join(
            f"-D {n}=..." for n in needs), style="dim"))


def _title(function: str, messages: list[Message], level: str | None, hidden: int,
           minimum: FeedbackSeverity, file: str | None) -> Line:
    head = Line("feedback", style="bold")
    if function:
        head += Line(" for ", style="bold") + Line(function, style="bold magenta")
    else:
        head += Line(" on the values given", style="bold")
    if level:
        head += Line(f" at level {level}", style="bold")
    if file is not None:
        head += Line(f" ({display_path(file)})")
    counts = Counter(m.severity for m in messages)
    parts = [f"{counts[s]} {_PLURAL[s] if counts[s] != 1 else s.value}"
             for s in (FeedbackSeverity.WARNING, FeedbackSeverity.SUGGESTION,
                       FeedbackSeverity.INFO) if counts[s]]
    head += Line(": " + (", ".join(parts) if parts else
                         "nothing to report" if not hidden else
                         "nothing to act on" if minimum == FeedbackSeverity.INFO else
                         "nothing at this severity"))
    if hidden:
        why = (f"below --severity {minimum.value}" if minimum != FeedbackSeverity.INFO
               else "with -v")
        head += Line(f" ({hidden} more {why})", style="dim")
    return head


def _summary(messages: list[Message], out: Printer, sources: _Sources) -> bool:
    """One line per code of the warnings and suggestions: what to act on, and where.
    False when there is nothing to act on."""
    pressing = [m for m in messages if m.severity != FeedbackSeverity.INFO]
    codes: dict[tuple[FeedbackSeverity, str], list[Message]] = {}
    for m in sorted(pressing, key=lambda m: (SEVERITY_ORDER[m.severity], sort_key(m))):
        codes.setdefault((m.severity, m.code), []).append(m)
    for (severity, code), group in codes.items():
        subjects = list(dict.fromkeys(_subject(m, sources) for m in group))
        more = len(subjects) - _SUBJECTS_SHOWN
        where = ", ".join(subjects[:_SUBJECTS_SHOWN]) + (f", +{more} more" if more > 0 else "")
        line = Line("  ") + Line(f"{severity.value:<11}", style=_STYLE[severity])
        count = f" ({len(group)})" if len(group) > 1 else ""
        line += Line(f" {title(code, group[0].text)}{count}: ") + Line(where, style="bold")
        out.print(line)
    return bool(codes)


def _subject(m: Message, sources: _Sources) -> str:
    if m.span is None:
        return m.function or "the kernel"
    quoted = sources.snippet(m.span, m.function)
    return f"{quoted} (line {m.span.line})" if quoted else f"line {m.span.line}"


def _loop_groups(messages: list[Message]) -> list[tuple[tuple[str, ...], list[Message]]]:
    """Messages by the loops around them: the function level first, then the loops in
    the order their messages appear in the source."""
    groups: dict[tuple[str, ...], list[Message]] = {}
    for m in messages:
        groups.setdefault(m.loops, []).append(m)
    return sorted(groups.items(),
                  key=lambda item: (bool(item[0]), min(sort_key(m)[1:] for m in item[1])))


def _message(m: Message, out: Printer, sources: _Sources, verbose: bool,
             quote: bool = True) -> None:
    head = Line("  ")
    if m.span:
        head.append(f"{span_text(m.span)}: ", style="bold")
    head.append(m.severity.value, style=_STYLE[m.severity])
    head.append(": ")
    head.keep = len(head.text)  # the `file:line:col: severity: ` stays on one line
    head.append(m.text)
    if m.approximate and not m.text.startswith("approximation"):
        head.append(" (approximation)", style="yellow")
    head.append(f" [{m.code}]", style="dim")
    out.print(head)
    if m.span and quote:
        _source(m.span, m.severity, out, sources)
    for name, v in _listed(m.values, m.shown, verbose):
        out.print(_value_line(name, v, verbose))
    if m.hint:
        out.print(Line("        = hint: ", style="bold cyan") + Line(m.hint))


def _source(span: Span, severity: FeedbackSeverity, out: Printer, sources: _Sources) -> None:
    src = sources.line(span.file, span.line)
    if src is None:
        return
    for line in quoted_source(src, span, 7, _STYLE[severity], to_line_end=True):
        out.print(line)


def _listed(values: Sequence[tuple[str, Value]], shown: Sequence[str], verbose: bool
            ) -> list[tuple[str, Value]]:
    """The values a report lists under a message: those its text does not show, not even
    as another value with the same figure (best case = worst case = p)."""
    if verbose:
        return list(values)
    seen = {(v.text, v.numeric) for name, v in values if name in shown}
    return [(name, v) for name, v in values if (v.text, v.numeric) not in seen]


def _value_line(name: str, v: Value, verbose: bool) -> Line:
    symbolic = v.text
    is_number = getattr(v.symbolic, "is_Number", False) and v.numeric is not None
    line = Line(f"        {name} = ", style="dim")
    line += Line(number_text(v.numeric) if is_number and v.numeric is not None else symbolic)
    if v.numeric is not None and not is_number and number_text(v.numeric) != symbolic:
        line += Line(f" = {number_text(v.numeric)}", style="bold")
    elif v.needs and verbose:
        line += Line("   (numeric: give " + " ".join(f"-D {n}=..." for n in v.needs) + ")",
                     style="dim")
    return line
