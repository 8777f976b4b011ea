"""Formatting: the layout of mcl.mcpl.printer, and nothing but the layout.

The printer works on the AST, which keeps neither comments nor the user's spelling of
things the front end normalises (`divide_up(a, b)`, redundant parentheses). So the
formatter rewrites one top-level definition at a time, and only one that

- holds no comment (it would be lost),
- prints to the same characters once blanks are ignored (so only the layout changes:
  no parenthesis, literal or call is rewritten), and
- parses back to the same tree.

The others are left as they are; text between definitions (comments, blank lines) is
never touched."""

from __future__ import annotations

import re
from typing import Any

from lsprotocol import types as lsp

from mcl.diagnostics import MclError
from mcl.lsp.convert import to_range
from mcl.mcpl import ast
from mcl.mcpl.parse import parse_source
from mcl.mcpl.printer import print_function, print_typedef
from mcl.source_files import SourcePositions

_BLANKS = re.compile(r"\s+")


def format_edits(module: ast.Module, text: str, hwd_names: Any = None) -> list[lsp.TextEdit]:
    positions = SourcePositions(text, module.file or "")
    edits = []
    items: list[tuple[Any, str]] = [(t, print_typedef(t)) for t in module.types]
    items += [(f, print_function(f)) for f in module.functions]
    for node, printed in items:
        span = node.span
        if span is None:
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
