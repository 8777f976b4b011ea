"""The diagnostics of a buffer whose edit broke one definition: its syntax error and the
other definitions' diagnostics from the last good check, at their lines now.

A text that does not parse is not checked, so its check says only the syntax error, and
every warning of the other definitions vanishes while a statement is half typed, to come
back when it is complete. The edit from the last good text touched some top-level
definitions (mcl.mcpl.syntax_region); the others are the same text, so a check of the
last good text "repaired" -- the edited definitions as they were -- says of them what the
last good check said, at positions that moved by the lines the edit added. That check is
the last good one only when nothing else it read changed since (another file, the
settings): the server passes it only then (`DocumentState.environment`). What stands in
the edited definitions, or refers to a line there, is left out, never shown at the wrong
place.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcl.diagnostics import Diagnostic, Span
from mcl.lsp.analysis import CheckResult, Libraries, check_document
from mcl.lsp.config import Effective
from mcl.lsp.convert import import_of, same_file
from mcl.lsp.lookup import module_at
from mcl.mcpl.parse import definition_ends
from mcl.mcpl.syntax_region import edited_region

# A message's reference to a line of the file ("the first declaration is at line 12").
_LINE_REFERENCE = re.compile(r"\bline (\d+)")


class _Edited(Exception):
    """A position stands in the edited definitions."""


@dataclass(frozen=True)
class _Moves:
    """Positions (1-based) of the good text to the text now: those before the region stay,
    those after it move with its end, those in it have no counterpart."""

    start: tuple[int, int]
    old_end: tuple[int, int]
    new_end: tuple[int, int]

    def position(self, line: int, column: int) -> tuple[int, int]:
        """A position at or after the region's end, in the text now."""
        if line == self.old_end[0]:
            return self.new_end[0], column - self.old_end[1] + self.new_end[1]
        return line + self.new_end[0] - self.old_end[0], column

    def span(self, span: Span) -> Span:
        """`span` in the text now; _Edited where it overlaps the region."""
        if (span.end_line, span.end_column) <= self.start:
            return span
        if (span.line, span.column) < self.old_end:
            raise _Edited
        return Span(span.file, *self.position(span.line, span.column),
                    *self.position(span.end_line, span.end_column))

    def words(self, text: str | None) -> str | None:
        """`text` with its references to lines moved."""
        if text is None:
            return None

        def moved(m: re.Match[str]) -> str:
            line = int(m.group(1))
            if line < self.start[0]:
                return m.group()
            if line <= self.old_end[0]:
                raise _Edited  # (the line the region starts or ends on, too)
            return f"line {line + self.new_end[0] - self.old_end[0]}"

        return _LINE_REFERENCE.sub(moved, text)


def _linecol(text: str, offset: int) -> tuple[int, int]:
    return text.count("\n", 0, offset) + 1, offset - text.rfind("\n", 0, offset)


def check_with_kept(path: Path, settings: Effective, libraries: Libraries,
                    last_good: tuple[str, str, CheckResult] | None) -> CheckResult:
    """`check_document`; `last_good`: (the document's text, the text of its last check
    that parsed, that check) when nothing else that check read has changed since, and then
    a text that does not parse keeps that check's diagnostics of the definitions the edit
    did not touch."""
    result = check_document(path, settings, libraries)
    if last_good is None or result.program is not None:
        return result
    return with_kept(result, path, *last_good)


def with_kept(result: CheckResult, path: Path, text: str, good_text: str,
              good: CheckResult) -> CheckResult:
    """`result` (the check of `text`, which did not parse) with the diagnostics of `good`
    (the last good check, of `good_text`, with nothing else changed since) outside the
    definitions the edit touched, moved to their places in `text`. `result` itself when
    its syntax error is not in those definitions (an unclosed brace reaches further)."""
    syntax = [d for d in result.diagnostics
              if d.code == "mcpl-syntax" and same_file(d.span, path)]
    region = edited_region(good_text, text, definition_ends(good_text)) \
        if len(syntax) == 1 else None
    if region is None or syntax[0].span is None:
        return result
    moves = _Moves(_linecol(text, region.start), _linecol(good_text, region.old_end),
                   _linecol(text, region.new_end))
    error = syntax[0].span
    if not moves.start <= (error.line, error.column) < moves.new_end:
        return result
    module = module_at(good.program, path)
    imports = tuple(module.imports) if module is not None else ()
    kept = [moved for d in good.diagnostics if d not in result.diagnostics
            and (moved := _moved(d, path, moves, imports)) is not None]
    return dataclasses.replace(result, diagnostics=[*result.diagnostics, *kept],
                               imports=_moved_imports(imports, moves))


def _moved(d: Diagnostic, path: Path, moves: _Moves, imports: tuple[Any, ...]
           ) -> Diagnostic | None:
    """`d` at its place in the text now; None where it stands in the edited definitions
    (or, about another file, where the import it is shown on does)."""
    try:
        if d.span is not None and not same_file(d.span, path):
            line = import_of(d.span, imports)
            if line is not None and line.span is not None:
                moves.span(line.span)
            return d
        span = moves.span(d.span) if d.span is not None else None
        return dataclasses.replace(d, span=span, message=moves.words(d.message) or "",
                                   hint=moves.words(d.hint),
                                   notes=tuple(moves.words(n) or "" for n in d.notes))
    except _Edited:
        return None


def _moved_imports(imports: tuple[Any, ...], moves: _Moves) -> tuple[Any, ...]:
    """The module's imports at their lines now, for placing the diagnostics about the
    files they bring in (mcl.lsp.convert.diagnostic); those in the region are left out."""
    found = []
    for imp in imports:
        try:
            span = moves.span(imp.span) if imp.span is not None else None
        except _Edited:
            continue
        found.append(dataclasses.replace(imp, span=span))
    return tuple(found)

