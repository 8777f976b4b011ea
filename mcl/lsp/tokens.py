"""Semantic tokens: highlighting from what the names are, for editors whose MCPL mode
has no syntax highlighting of its own (the editor setups of docs/editor.md).

The text is scanned for comments, numbers and words; keywords are known from the
grammar, and the other words are classified from the parsed module when it is the
current text: functions (user and built-in), parameters, variables, constants (read-only
variables), user types, the description names and par_groups (namespaces) and the
memory spaces (modifiers). While the text does not parse, the words are classified by
name as the last good tree had them (`names_of`): a parameter `n` stays a parameter, so
the colours do not flicker while a statement is typed."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from mcl.diagnostics import Span
from mcl.mcpl import ast
from mcl.mcpl.parse import KEYWORDS
from mcl.mcpl.positions import SourceText, head
from mcl.mcpl.scopes import Kind as Binds
from mcl.mcpl.types import PRIMITIVE_NAMES

if TYPE_CHECKING:
    from mcl.mcpl.sidetables import Binding, SideTables

TYPES = ["namespace", "type", "struct", "parameter", "variable", "function", "keyword",
         "comment", "number", "modifier", "property"]
MODIFIERS = ["declaration", "readonly", "defaultLibrary"]
LEGEND = lsp.SemanticTokensLegend(token_types=TYPES, token_modifiers=MODIFIERS)
_PRIMS = PRIMITIVE_NAMES
_SCAN = re.compile(r"(?P<comment>//[^\n]*|/\*(?:.|\n)*?(?:\*/|\Z))"
                   r"|(?P<number>0[xX][0-9a-fA-F]+|(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][+-]?[0-9]+)?)"
                   r"|(?P<word>[A-Za-z_][A-Za-z0-9_]*)")

Kind = tuple[str, tuple[str, ...]]  # token type, modifiers


def semantic_tokens(text: str, kinds: dict[tuple[int, int], Kind],
                    units: Callable[[str], int], known: dict[str, Kind] | None = None,
                    keywords: frozenset[str] = KEYWORDS, primitives: frozenset[str] = _PRIMS
                    ) -> list[int]:
    """The LSP encoding (relative positions, in the client's units: `units(text)`) of
    the comments, numbers and words of `text`: `keywords` and `primitives` by name, the
    other words by their (line, column) in `kinds` (`classify`: as the checker resolved
    them), else by name from `known` (`names_of` an older tree of the text)."""
    known = known or {}
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    found: list[tuple[int, int, int, int, int]] = []  # line, start, length, type, mods
    row = 0
    for m in _SCAN.finditer(text):
        while starts[row + 1] <= m.start():
            row += 1
        column = m.start() - starts[row]
        if m.lastgroup == "comment":
            for i, piece in enumerate(m.group(0).split("\n")):
                if piece:
                    found.append(_token(lines, row + i, column if i == 0 else 0, len(piece),
                                        ("comment", ()), units))
            continue
        word = m.group(0)
        if m.lastgroup == "number":
            kind: Kind | None = ("number", ())
        elif word in primitives:
            kind = ("type", ("defaultLibrary",))
        elif word in keywords:
            kind = ("keyword", ())
        else:
            kind = kinds.get((row + 1, column + 1)) or known.get(word)
        if kind is not None:
            found.append(_token(lines, row, column, len(word), kind, units))
    data: list[int] = []
    last_line = last_start = 0
    for row, start, length, type_, mods in sorted(found):
        data += [row - last_line, start - last_start if row == last_line else start,
                 length, type_, mods]
        last_line, last_start = row, start
    return data


def _token(lines: list[str], line: int, column: int, length: int, kind: Kind,
           units: Callable[[str], int]) -> tuple[int, int, int, int, int]:
    text = lines[line]
    mods = sum(1 << MODIFIERS.index(m) for m in kind[1])
    return (line, units(text[:column]), units(text[column:column + length]),
            TYPES.index(kind[0]), mods)


def classify(module: ast.Module | None, tables: SideTables, library: Any
             ) -> dict[tuple[int, int], Kind]:
    """(line, column) of each classified word of the kernel `module` -> its kind."""
    return _classify(module, tables, library)[0] if module is not None else {}


def names_of(module: ast.Module, tables: SideTables, library: Any) -> dict[str, Kind]:
    """Each classified name of `module` -> its kind where it is used (not declared)."""
    return _classify(module, tables, library)[1]


def _classify(module: ast.Module, tables: SideTables, library: Any
              ) -> tuple[dict[tuple[int, int], Kind], dict[str, Kind]]:
    """(line, column) of each classified word of `module` -> its kind, and each name ->
    its kind."""
    kinds: dict[tuple[int, int], Kind] = {}
    names: dict[str, Kind] = {}

    def mark(span: Span | None, kind: Kind, name: str) -> None:
        if span is not None:
            kinds[(span.line, span.column)] = kind
            names[name] = (kind[0], tuple(m for m in kind[1] if m != "declaration"))

    def word(node: Any, name: str, kind: Kind) -> None:
        span = getattr(node, "span", None)
        if span is not None:
            mark(SourceText(span.file).word(name, span), kind, name)

    for c in module.constants:
        word(c, c.name, ("variable", ("declaration", "readonly")))
        _expressions(c, tables, mark)
    for t in module.types:
        word(t, t.name, ("struct", ("declaration",)))
    for f in module.functions:
        mark(head(f.span, len(f.hwd)), ("namespace", ()), f.hwd)
        word(f, f.name, ("function", ("declaration",)))
        for p in f.params:
            word(p, p.name, ("parameter", ("declaration",)))
            for space in p.spaces:
                word(p, space, ("modifier", ()))
        for node in ast.walk(f.body):
            match node:
                case ast.Decl():
                    word(node, node.name, ("variable", ("declaration",)))
                    for space in node.spaces:
                        word(node, space, ("modifier", ()))
                case ast.Foreach():
                    word(node, node.var, ("variable", ("declaration",)))
                    word(node, node.group, ("namespace", ()))
                case ast.Barrier():
                    word(node, node.space, ("modifier", ()))
        _expressions(f, tables, mark)
    return kinds, names


def _expressions(top: Any, tables: SideTables,
                 mark: Callable[[Span | None, Kind, str], None]) -> None:
    for node in ast.walk(top):
        match node:
            case ast.Name(span=span) if span is not None:
                mark(span, _name_kind(tables.binding_of(node)), node.name)
            case ast.Call():
                bound = tables.binding_of(node)
                builtin = bound is not None and bound.kind is Binds.BUILTIN
                mark(head(node.span, len(node.func)),
                     ("function", ("defaultLibrary",) if builtin else ()), node.func)
            case ast.NamedType():
                mark(head(node.span, len(node.name)), ("struct", ()), node.name)
            case ast.HwdConst():
                mark(head(node.span, len(node.path[0])), ("namespace", ()), node.path[0])


def _name_kind(bound: Binding | None) -> Kind:
    if bound is None or bound.kind is Binds.CONSTANT:
        return ("variable", ("readonly",))  # (unresolved: assumed a constant)
    if bound.kind is Binds.PARAM:
        return ("parameter", ())
    return ("variable", ())
