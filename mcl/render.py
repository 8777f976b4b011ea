"""Render diagnostics for people (styled lines with the source line and a marker:
mcl.styled) and for tools (JSON)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.cells import cell_len

from mcl.diagnostics import Diagnostic, Severity, Span
from mcl.source_files import source_lines
from mcl.styled import Line, Printer, printer

if TYPE_CHECKING:
    from rich.console import Console

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


# A shown source line is cut to about this many cells around its marker: a 1 MB line of
# generated code must not print 1 MB (twice, with the marker) for one error.
EXCERPT_CELLS = 100
_CONTEXT_CELLS = 40  # cells kept before the marker when the line is cut
_LINES = "\t\n"  # kept in messages, hints and notes


def escape_controls(text: str, keep: str = "\t") -> str:
    """`text` with control and bidirectional-override characters written as escapes
    (`\\x00`, `\\u202e`): echoed raw, they would reorder or hide what the terminal shows.
    The characters of `keep` stay (tabs, which source lines expand; the line breaks of a
    message that quotes a compiler's log)."""
    if text.isprintable():
        return text
    return "".join(c if c in keep or c.isprintable() else _escape(c) for c in text)


def _escape(c: str) -> str:
    code = ord(c)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 \
        else f"\\U{code:08x}"


def source_excerpt(src: str, span: Span, to_line_end: bool = False) -> tuple[str, int, int]:
    """The text to show for source line `src` under a diagnostic at `span`, and the
    display offset and width of its marker: tabs expanded, control characters escaped,
    and a long line cut around the marker (with `…` where text was left out). A span over
    several lines is marked at its start, or to the end of its first line."""
    if span.end_line != span.line:
        end = len(src) + 1 if to_line_end else span.column + 1
        span = Span(span.file, span.line, span.column, span.line, end)
    first, last = span.column - 1, max(span.end_column - 1, span.column)
    before = escape_controls(src[:first]).expandtabs(TAB_SIZE)
    marked = escape_controls(src[first:last])
    after = escape_controls(src[last:])
    start, width = cell_len(before), max(cell_len(marked.expandtabs(TAB_SIZE)), 1)
    if start + width + cell_len(after) <= EXCERPT_CELLS and src.isprintable():
        return src.expandtabs(TAB_SIZE), *_marker_columns(src, span)
    shown_before = before
    if start > _CONTEXT_CELLS:
        shown_before = "…" + before[-_CONTEXT_CELLS:]
    room = max(EXCERPT_CELLS - cell_len(shown_before), 10)
    marked = marked.expandtabs(TAB_SIZE)
    if cell_len(marked) > room:
        marked = marked[:room] + "…"
        after = ""
    elif cell_len(marked) + cell_len(after) > room:
        after = after[: room - cell_len(marked)] + "…"
    width = min(width, cell_len(marked))
    return shown_before + marked + after, cell_len(shown_before), max(width, 1)


def quoted_source(src: str, span: Span, digits: int, style: str, to_line_end: bool = False
                  ) -> tuple[Line, Line]:
    """Source line `src` after a gutter with its number (`digits` wide), and under it the
    marker of `span` in `style`: how a diagnostic and a feedback message quote the code
    they are about (the excerpt and the marker's columns: `source_excerpt`)."""
    gutter = f"{span.line:>{digits}} | "
    shown, start, width = source_excerpt(src, span, to_line_end=to_line_end)
    # verbatim: never wrapped (mcl.output_width), so the marker stays under its text
    return (Line(gutter, style="dim", verbatim=True) + Line(shown),
            Line(" " * (len(gutter) - 2) + "| ", style="dim", verbatim=True)
            + Line(" " * start + "^" + "~" * (width - 1), style=style))


def render_diagnostics(diags: list[Diagnostic], console: Console | Printer | None = None
                       ) -> None:
    """Print each diagnostic as `file:line:col: severity: message`, the source line, a marker
    under the offending text, and the hint. The `file:line:col: severity:` prefix starts
    its line whatever the width, so editors and CI can parse it; a long message goes on
    over indented lines (mcl.output_width), and the source line and its marker are shown
    as they are."""
    if not diags:
        return
    print_line = printer(console, stderr=True).print
    cache: dict[str, list[str]] = {}
    for d in diags:
        head = Line()
        if d.span:
            head.append(f"{d.span}: ", style="bold")
        head.append(f"{d.severity.value}", style=_STYLE[d.severity])
        head.append(": ")
        head.keep = len(head.text)  # the `file:line:col: severity: ` stays on one line
        head.append(escape_controls(d.message, keep=_LINES))
        head.append(f" [{d.code}]", style="dim")
        print_line(head)
        if d.span:
            src = _source_line(d.span.file, d.span.line, cache)
            if src is not None:
                for line in quoted_source(src, d.span, 5, _STYLE[d.severity]):
                    print_line(line)
        if d.hint:
            print_line(Line("      = hint: ", style="bold cyan")
                       + Line(escape_controls(d.hint, keep=_LINES)))
        for note in d.notes:
            print_line(Line("      = note: ", style="bold cyan")
                       + Line(escape_controls(note, keep=_LINES)))


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
    import json

    return json.dumps({"diagnostics": [diagnostic_to_json(d) for d in diags]}, indent=2)
