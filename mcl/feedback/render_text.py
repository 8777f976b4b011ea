"""Feedback for people: a colored report grouped by function and loop, each message with
its severity, the source line and a marker under the expression, and its values,
symbolic and numeric (feedback.md, "Output")."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import groupby
from pathlib import Path

from rich.console import Console
from rich.text import Text

from mcl.feedback.emit import number_text
from mcl.feedback.messages import Message, Severity, sort_key

_STYLE = {Severity.INFO: "bold cyan", Severity.SUGGESTION: "bold green",
          Severity.WARNING: "bold yellow"}


class _Sources:
    def __init__(self) -> None:
        self._lines: dict[str, list[str]] = {}

    def line(self, path: str, number: int) -> str | None:
        if path not in self._lines:
            try:
                self._lines[path] = Path(path).read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError):
                self._lines[path] = []
        lines = self._lines[path]
        return lines[number - 1] if 0 < number <= len(lines) else None


def render_feedback(messages: Iterable[Message], console: Console | None = None,
                    levels: dict[str, str] | None = None) -> None:
    """Print the report. `levels` names the level each function was analysed at."""
    console = console or Console(highlight=False, soft_wrap=True)
    sources = _Sources()
    ordered = sorted(messages, key=lambda m: (m.function, m.loops, sort_key(m)))
    for function, in_function in groupby(ordered, key=lambda m: m.function):
        group = list(in_function)
        title = Text("feedback", style="bold")
        if function:
            title += Text(" for ", style="bold") + Text(function, style="bold magenta")
        if levels and function in levels:
            title += Text(f" at level {levels[function]}", style="bold")
        console.print(title)
        for loops, in_loop in groupby(group, key=lambda m: m.loops):
            where = " > ".join(loops) if loops else ("function" if function else "values")
            console.print(Text(f"  [{where}]", style="dim"))
            for m in in_loop:
                _message(m, console, sources)
        console.print()


def _message(m: Message, console: Console, sources: _Sources) -> None:
    head = Text("  ")
    if m.span:
        head.append(f"{m.span}: ", style="bold")
    head.append(m.severity.value, style=_STYLE[m.severity])
    head.append(f": {m.text}")
    if m.approximate:
        head.append(" (approximation)", style="yellow")
    head.append(f" [{m.code}]", style="dim")
    console.print(head)
    if m.span:
        src = sources.line(m.span.file, m.span.line)
        if src is not None:
            gutter = f"{m.span.line:>7} | "
            console.print(Text(gutter, style="dim") + Text(src))
            end = m.span.end_column if m.span.end_line == m.span.line else len(src) + 1
            width = max(end - m.span.column, 1)
            marker = " " * (m.span.column - 1) + "^" + "~" * (width - 1)
            console.print(Text(" " * (len(gutter) - 2) + "| ", style="dim")
                          + Text(marker, style=_STYLE[m.severity]))
    for name, v in m.values:
        line = Text(f"        {name} = ", style="dim") + Text(str(v.symbolic))
        if v.numeric is not None and number_text(v.numeric) != str(v.symbolic):
            line += Text(f" = {number_text(v.numeric)}", style="bold")
        elif v.needs:
            line += Text("   (numeric: give " + ", ".join(f"-D {n}=..." for n in v.needs) + ")",
                         style="dim")
        console.print(line)
    if m.hint:
        console.print(Text("        = hint: ", style="bold cyan") + Text(m.hint))
