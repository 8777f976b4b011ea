"""Source positions of one text: character offsets <-> 1-based (line, column), and the
`Span` of a textX object. Shared by both grammars (mcl/hdl/syntax.py, mcl/mcpl/build.py)
and by the syntax-error reporting of MCPL (mcl/mcpl/parse.py), so a position means the
same in every diagnostic."""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

from mcl.diagnostics import Span


class SourcePositions:
    """The line starts of `text`, computed once; every lookup is a binary search."""

    def __init__(self, text: str, file: str):
        self.text = text
        self.file = file
        self.starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]

    def linecol(self, offset: int) -> tuple[int, int]:
        """The 1-based (line, column) of character `offset`."""
        line = bisect_right(self.starts, offset)
        return line, offset - self.starts[line - 1] + 1

    def offset(self, line: int, column: int) -> int:
        """The character offset of 1-based (line, column), clamped to the text."""
        if line > len(self.starts):
            return len(self.text)
        return min(self.starts[max(line, 1) - 1] + column - 1, len(self.text))

    def span(self, start: int, end: int) -> Span:
        """The span of characters start..end (exclusive), at least one character long."""
        line, col = self.linecol(start)
        end_line, end_col = self.linecol(max(end, start + 1))
        return Span(self.file, line, col, end_line, end_col)

    def span_of(self, obj: Any) -> Span:
        """The span of a textX model object."""
        return self.span(obj._tx_position, obj._tx_position_end)
