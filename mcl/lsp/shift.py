"""Positions between the text a document's last good tree was parsed from and its text
now.

While a buffer does not parse (a statement half typed) the server answers hover,
definition, inlay hints and the like from the last check whose program parsed. Its
positions are those of the older text: an edit above the cursor moves every line below
it. A `Shift` maps the lines the two texts share -- found by a line diff -- in both
directions, so a request on an unchanged line is asked of the tree at its old line and
the answer's ranges move to the lines where that text is now. A position on a line that
was edited has no counterpart in the tree: the request is answered with nothing, and an
answer's item there is left out, never shown at the wrong place.
"""

from __future__ import annotations

import difflib
from typing import TypeVar
from urllib.parse import unquote

from lsprotocol import types as lsp

from mcl.lsp.encoding import Unmapped, map_positions
from mcl.source_files import source_lines

T = TypeVar("T")
_END = object()  # the end of a text: equal only to itself, never to a line


class Shift:
    """The line correspondence between `old` (what the tree was parsed from) and `new`
    (the document now). Lines are 0-based, as LSP numbers them."""

    def __init__(self, old: str, new: str) -> None:
        self.old_text = old
        self.unchanged = old == new
        self._to_old: dict[int, int] = {}
        self._to_new: dict[int, int] = {}
        if self.unchanged:
            return
        # the end of the text (a range may end there) corresponds whatever was edited
        a: list[object] = [*source_lines(old), _END]
        b: list[object] = [*source_lines(new), _END]
        matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
        for tag, i1, i2, j1, _ in matcher.get_opcodes():
            if tag == "equal":
                for k in range(i2 - i1):
                    self._to_old[j1 + k] = i1 + k
                    self._to_new[i1 + k] = j1 + k

    def to_old(self, line: int) -> int | None:
        """The tree's line of line `line` of the document now; None where it was edited."""
        return line if self.unchanged else self._to_old.get(line)

    def to_new(self, line: int) -> int | None:
        """The document's line now of the tree's line `line`; None where it was edited."""
        return line if self.unchanged else self._to_new.get(line)

    def request(self, position: lsp.Position) -> lsp.Position | None:
        """`position` of the document now in the tree's lines (None: an edited line)."""
        line = self.to_old(position.line)
        return None if line is None else lsp.Position(line, position.character)

    def answer(self, value: T, uri: str) -> T | None:
        """`value` (an answer computed on the tree) with its positions in `uri` moved to
        the document's lines now; items on edited lines are left out, and an answer that
        is itself on one is None."""
        if self.unchanged:
            return value

        def move(of: str, at: lsp.Position) -> lsp.Position:
            if unquote(of) != unquote(uri):
                return at  # another file: the tree of this one says nothing of it
            line = self.to_new(at.line)
            if line is None:
                raise Unmapped
            return lsp.Position(line, at.character)

        try:
            return map_positions(value, uri, move)
        except Unmapped:
            return None
