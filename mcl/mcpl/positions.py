"""Precise markers for words the AST keeps without a span of their own.

The AST gives spans to nodes, not to every word in them: a `Decl` spans from its first
modifier to its `;`, a `Foreach` from `foreach` to its closing brace. When a diagnostic is
about one word (the memory space `mian` in `mian float[n] a;`, the par_group in a foreach
header), the checker looks the word up in the source text inside the node's span, so the
marker sits under that word; without the text (a module parsed from a string) it falls back
to the node's span.
"""

from __future__ import annotations

import re
from pathlib import Path

from mcl.diagnostics import Span
from mcl.source_files import overlay_text, source_lines


class SourceText:
    """The lines of one source file, read on first use."""

    def __init__(self, file: str) -> None:
        self.file = file
        self._lines: list[str] | None = None

    def lines(self) -> list[str]:
        if self._lines is None:
            try:
                buffer = overlay_text(self.file)  # an editor's unsaved text (mcl lsp)
                self._lines = source_lines(
                    buffer if buffer is not None
                    else Path(self.file).read_text(encoding="utf-8-sig"))
            except (OSError, UnicodeDecodeError, ValueError):
                self._lines = []
        return self._lines

    def word(self, word: str, within: Span | None, start: Span | None = None) -> Span | None:
        """Span of the first whole-word occurrence of `word` inside `within`, at or after
        the end of `start` when given; `within` itself when the word cannot be found."""
        if within is None:
            return None
        lines = self.lines()
        if not lines or within.line > len(lines):
            return within
        line, column = within.line, within.column
        if start is not None:
            line, column = start.end_line, start.end_column
        pattern = re.compile(r"(?<![A-Za-z0-9_])" + re.escape(word) + r"(?![A-Za-z0-9_])")
        last = min(within.end_line, len(lines))
        while line <= last:
            text = lines[line - 1]
            stop = within.end_column - 1 if line == within.end_line else len(text)
            m = pattern.search(text, max(column - 1, 0), max(stop, 0))
            if m:
                return Span(within.file, line, m.start() + 1, line, m.end() + 1)
            line, column = line + 1, 1
        return within


def head(span: Span | None, length: int) -> Span | None:
    """The first `length` characters of `span` (a keyword such as `foreach`)."""
    if span is None:
        return None
    return Span(span.file, span.line, span.column, span.line, span.column + length)
