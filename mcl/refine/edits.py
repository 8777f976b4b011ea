"""Edits of a kernel's source text by spans, so that a refinement changes only what it
must: the comments, the layout and every line it does not touch stay as written, and the
unified diff of the next version is as small as the change (docs/refinements.md)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

from mcl.diagnostics import Span
from mcl.mcpl import ast
from mcl.refine.refused import Refused


@dataclass(frozen=True)
class TextEdit:
    """Replace the text from (line, column) up to, not including, (end_line,
    end_column) by `text`; 1-based, as spans are. An insertion has start == end."""

    line: int
    column: int
    end_line: int
    end_column: int
    text: str

    @classmethod
    def replacing(cls, span: Span, text: str) -> TextEdit:
        return cls(span.line, span.column, span.end_line, span.end_column, text)

    @classmethod
    def inserting(cls, line: int, column: int, text: str) -> TextEdit:
        return cls(line, column, line, column, text)


def _line_starts(text: str) -> list[int]:
    starts = [0]
    starts += [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    return starts


def span_text(text: str, span: Span) -> str:
    """The source text a span covers."""
    starts = _line_starts(text)
    return text[starts[span.line - 1] + span.column - 1:
                starts[span.end_line - 1] + span.end_column - 1]


def line_of(text: str, line: int) -> str:
    """Line `line` (1-based) of `text`, without its newline."""
    return text.split("\n")[line - 1]


def indentation(text: str, line: int) -> str:
    """The leading white space of line `line`."""
    row = line_of(text, line)
    return row[:len(row) - len(row.lstrip())]


def body_lines(text: str, stmt: Span, body: Span, what: str) -> list[str]:
    """The lines between the braces of a statement's body block `body`, as written;
    `Refused` (`what` names the statement) unless the statement starts its line, its
    body's `{` ends the statement's first line and its `}` stands alone on the last."""
    indent = indentation(text, stmt.line)
    first, last = line_of(text, body.line), line_of(text, body.end_line)
    if stmt.column != len(indent) + 1 or first.rstrip() != first[:body.column] \
            or last.strip() != "}" or body.line == body.end_line:
        raise Refused(f"{what} is not laid out as `... {{` ... `}}`")
    return text.split("\n")[body.line:body.end_line - 1]


def apply_edits(text: str, edits: Iterable[TextEdit]) -> str:
    """`text` with every edit made; edits must not overlap (two insertions at one place
    keep their order)."""
    starts = _line_starts(text)
    placed = sorted(((starts[e.line - 1] + e.column - 1, starts[e.end_line - 1]
                      + e.end_column - 1, n, e.text) for n, e in enumerate(edits)),
                    key=lambda t: (t[0], t[2]))
    out, at = [], 0
    for start, end, _, new in placed:
        if start < at:
            raise ValueError("overlapping edits")
        out += [text[at:start], new]
        at = end
    out.append(text[at:])
    return "".join(out)


def unified_diff(before: str, after: str, old_name: str, new_name: str) -> str:
    """The unified diff of two versions of a kernel (3 lines of context)."""
    return "".join(difflib.unified_diff(before.splitlines(keepends=True),
                                        after.splitlines(keepends=True), old_name, new_name))


def changed_lines(before: str, after: str) -> int:
    """Lines removed plus lines added from `before` to `after` (a diff's size)."""
    diff = difflib.ndiff(before.splitlines(), after.splitlines())
    return sum(1 for d in diff if d[:1] in "+-")


def edited_span_text(text: str, span: Span, edits: Iterable[TextEdit]) -> str:
    """The text `span` covers once `edits` (each inside it) are made: a statement
    rewritten around the edits of its parts."""
    start, end = "\x00", "\x01"
    out = apply_edits(text, [TextEdit.inserting(span.line, span.column, start), *edits,
                             TextEdit.inserting(span.end_line, span.end_column, end)])
    return out[out.index(start) + 1:out.index(end)]


def indented(text: str, by: str) -> str:
    """`text` with every line after its first that is not blank indented `by` more (a
    statement moved one level in, its first line placed by the caller)."""
    first, *rest = text.split("\n")
    return "\n".join([first, *(by + row if row.strip() else row for row in rest)])


def deleting_line(text: str, decl: ast.Decl) -> TextEdit:
    """The edit that removes the declaration's line (Refused unless it stands alone)."""
    span = decl.span
    assert span is not None
    row = line_of(text, span.line).strip()
    if span.line != span.end_line or not row.startswith(f"int {decl.name}") \
            or not row.endswith(";") or row.count(";") != 1:
        raise Refused(f"the declaration of {decl.name} does not stand alone on line "
                      f"{span.line}")
    return TextEdit(span.line, 1, span.line + 1, 1, "")
