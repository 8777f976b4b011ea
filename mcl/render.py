"""Render diagnostics for people (rich, with the source line and a marker) and for tools (JSON)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from mcl.diagnostics import Diagnostic, Severity, Span
from mcl.source_files import source_lines

TAB_SIZE = 8  # columns per tab stop when a source line is shown
_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "bold yellow", Severity.NOTE: "bold cyan"}


def _source_line(path: str, line: int, cache: dict[str, list[str]]) -> str | None:
    if path not in cache:
        try:
            cache[path] = source_lines(
                Path(path).read_text(encoding="utf-8-sig", errors="replace")
            )
        except OSError:
            cache[path] = []
    lines = cache[path]
    return lines[line - 1] if 0 < line <= len(lines) else None


def _marker_columns(src: str, span: Span) -> tuple[int, int]:
    """Display offset and width of the marker under `span` on line `src`. Spans count a tab
    as one column; the line is shown with tabs expanded, so the marker is measured on the
    expanded text, in terminal cells (a CJK character takes two), to stay under the
    offending characters."""
    start = cell_len(src[: span.column - 1].expandtabs(TAB_SIZE))
    if span.end_line == span.line and span.end_column > span.column:
        end = cell_len(src[: span.end_column - 1].expandtabs(TAB_SIZE))
        return start, max(end - start, 1)
    return start, 1


def marker_columns(src: str, span: Span) -> tuple[int, int]:
    """Display offset and width of the marker under `span` on line `src` (tabs expanded,
    terminal cells): for other reports that show source lines, such as the feedback."""
    return _marker_columns(src, span)


def render_diagnostics(diags: list[Diagnostic], console: Console | None = None) -> None:
    """Print each diagnostic as `file:line:col: severity: message`, the source line, a marker
    under the offending text, and the hint. Every line is printed whole (`soft_wrap`): the
    `file:line:col: error:` line must stay one line whatever the terminal width, the path
    length, or whether stderr is a terminal, so editors and CI can parse it."""
    console = console or Console(stderr=True, highlight=False, soft_wrap=True)
    print_line = functools.partial(console.print, soft_wrap=True)
    cache: dict[str, list[str]] = {}
    for d in diags:
        head = Text()
        if d.span:
            head.append(f"{d.span}: ", style="bold")
        head.append(f"{d.severity.value}", style=_STYLE[d.severity])
        head.append(f": {d.message}")
        head.append(f" [{d.code}]", style="dim")
        print_line(head)
        if d.span:
            src = _source_line(d.span.file, d.span.line, cache)
            if src is not None:
                gutter = f"{d.span.line:>5} | "
                print_line(Text(gutter, style="dim") + Text(src.expandtabs(TAB_SIZE)))
                start, width = _marker_columns(src, d.span)
                marker = " " * start + "^" + "~" * (width - 1)
                print_line(Text(" " * (len(gutter) - 2) + "| ", style="dim") + Text(marker, style=_STYLE[d.severity]))
        if d.hint:
            print_line(Text("      = hint: ", style="bold cyan") + Text(d.hint))
        for note in d.notes:
            print_line(Text("      = note: ", style="bold cyan") + Text(note))


def span_to_json(span: Span | None) -> dict:
    """The position fields every JSON record of mcl carries (null without a span)."""
    return {
        "file": span.file if span else None,
        "line": span.line if span else None,
        "column": span.column if span else None,
        "end_line": span.end_line if span else None,
        "end_column": span.end_column if span else None,
    }


def diagnostic_to_json(d: Diagnostic) -> dict:
    return {
        **span_to_json(d.span),
        "severity": d.severity.value,
        "code": d.code,
        "message": d.message,
        "hint": d.hint,
    }


def diagnostics_json(diags: list[Diagnostic]) -> str:
    return json.dumps({"diagnostics": [diagnostic_to_json(d) for d in diags]}, indent=2)
