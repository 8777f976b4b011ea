"""Formatting: the layout of mcl.mcpl.printer, and nothing but the layout.

The printer works on the AST, which keeps neither comments nor the user's spelling of
things the front end normalises (`divide_up(a, b)`, redundant parentheses). So the
formatter rewrites one top-level definition at a time, and only one that

- holds no comment (it would be lost),
- prints to the same characters once blanks are ignored (so only the layout changes:
  no parenthesis, literal or call is rewritten), and
- parses back to the same tree.

The others are left as they are; text between definitions (comments, blank lines) is
never touched. The indentation is the client's (`tabSize`, `insertSpaces`): the shipped
kernels indent by two spaces, the printer by four. Range formatting rewrites the
definitions that overlap the range."""

from __future__ import annotations

import re
from typing import Any

from lsprotocol import types as lsp

from mcl.diagnostics import MclError
from mcl.lsp.convert import to_range
from mcl.mcpl import ast
from mcl.mcpl.parse import parse_source
from mcl.mcpl.printer import INDENT, print_function, print_typedef
from mcl.source_files import SourcePositions

_BLANKS = re.compile(r"\s+")


def indent_unit(tab_size: int, insert_spaces: bool) -> str:
    """One level of indentation as the client's formatting options ask for it."""
    return " " * max(tab_size, 1) if insert_spaces else "\t"


def reindented(printed: str, unit: str) -> str:
    """`printed` (the printer indents by four spaces a level) with `unit` a level. The
    header's continuation lines, aligned under its parenthesis, stay aligned."""
    if unit == INDENT:
        return printed
    out = []
    header = True
    for line in printed.split("\n"):
        if header:
            out.append(line)
            header = not line.rstrip().endswith("{")
            continue
        body = line.lstrip(" ")
        levels, rest = divmod(len(line) - len(body), len(INDENT))
        out.append(unit * levels + " " * rest + body)
    return "\n".join(out)


def format_edits(module: ast.Module, text: str, hwd_names: Any = None, unit: str = INDENT,
                 lines: tuple[int, int] | None = None) -> list[lsp.TextEdit]:
    """The edits that lay out `module`'s definitions, indented by `unit`; only those
    that overlap the 0-based `lines` (first, last), when given."""
    positions = SourcePositions(text, module.file or "")
    edits = []
    items: list[tuple[Any, str]] = [(t, print_typedef(t)) for t in module.types]
    items += [(f, print_function(f)) for f in module.functions]
    for node, printed in items:
        printed = reindented(printed, unit)
        span = node.span
        if span is None or (lines is not None and (
                span.end_line - 1 < lines[0] or span.line - 1 > lines[1])):
            continue
        start = positions.offset(span.line, span.column)
        end = positions.offset(span.end_line, span.end_column)
        original = text[start:end]
        if original == printed or "//" in original or "/*" in original:
            continue
        if _BLANKS.sub("", original) != _BLANKS.sub("", printed):
            continue
        if not _same_tree(node, printed, hwd_names):
            continue
        edits.append(lsp.TextEdit(to_range(span), printed))
    return edits


def _same_tree(node: Any, printed: str, hwd_names: Any) -> bool:
    try:
        again = parse_source(printed, "<format>", hwd_names)
    except MclError:
        return False
    found = (*again.types, *again.functions)
    return len(found) == 1 and found[0] == node
