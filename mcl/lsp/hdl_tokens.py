"""Semantic tokens and completion in an `.hdl` description (docs/hdl.md).

Tokens: the block kinds (`par_group`, `memory`, ...) and the header words are keywords;
a block's name and every part of a dotted name (`nvidia.hierarchy.blocks`, `smps.smp`)
are namespaces; properties (`capacity`, `max_nr_units`, `default`, `connects`) are
properties; units (`GB`, `cycles`) are types. Completion offers those words, the names
of the descriptions, and after a `.` what the path can go on with (mcl.lsp.hwd_members,
as in a kernel)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lsprotocol import types as lsp

from mcl.diagnostics import Span
from mcl.hdl.syntax import (
    ArgStmt,
    BlockStmt,
    FlagStmt,
    HdlFile,
    QualName,
    RefStmt,
    UnitExpr,
    ValuedStmt,
)
from mcl.lsp.completion import in_comment
from mcl.lsp.hwd_members import dotted_before, member_completions
from mcl.lsp.tokens import Kind

HEADER = frozenset({"hardware_description", "specializes"})
# the block kinds of hdl.md, also where a description has none of them yet
BLOCK_KINDS = frozenset({"parallelism", "par_group", "par_unit", "memory_space", "device",
                         "device_group", "device_unit", "memory", "cache", "interconnect",
                         "execution_group", "execution_unit", "simd_group", "simd_unit",
                         "load_store_group", "load_store_unit", "instructions"})

_NAMESPACE: Kind = ("namespace", ())
_PROPERTY: Kind = ("property", ())
_ITEM_KINDS = {"property": lsp.CompletionItemKind.Property,
               "type": lsp.CompletionItemKind.Unit}


def keywords(hdl: HdlFile | None) -> frozenset[str]:
    """The words coloured as keywords: the header's and the block kinds."""
    kinds = {b.kind for b in _blocks(hdl.blocks)} if hdl is not None else set()
    return HEADER | BLOCK_KINDS | kinds


def _blocks(body: Any) -> Iterator[BlockStmt]:
    for node in body:
        if isinstance(node, BlockStmt):
            yield node
            yield from _blocks(node.body)


def classify(hdl: HdlFile) -> tuple[dict[tuple[int, int], Kind], dict[str, Kind]]:
    """(line, column) of each classified word of `hdl` -> its kind, and each name -> its
    kind (for a text that no longer parses)."""
    kinds: dict[tuple[int, int], Kind] = {}
    names: dict[str, Kind] = {}

    def mark(span: Span | None, name: str, kind: Kind) -> None:
        if span is not None:
            kinds[(span.line, span.column)] = kind
            names[name] = (kind[0], tuple(m for m in kind[1] if m != "declaration"))

    def dotted(name: QualName) -> None:
        column = name.span.column
        for part in name.parts:
            mark(Span(name.span.file, name.span.line, column, name.span.line,
                      column + len(part)), part, _NAMESPACE)
            column += len(part) + 1

    mark(hdl.name_span, hdl.name, ("namespace", ("declaration",)))
    if hdl.parent is not None:
        mark(hdl.parent_span, hdl.parent, _NAMESPACE)
    for block in _blocks(hdl.blocks):
        mark(block.name_span, block.name, ("namespace", ("declaration",)))
        for stmt in block.body:
            if isinstance(stmt, RefStmt):
                dotted(stmt.name)
            elif isinstance(stmt, FlagStmt | ValuedStmt | ArgStmt):
                mark(stmt.span, stmt.name, _PROPERTY)
            values = stmt.args if isinstance(stmt, ArgStmt) else \
                (stmt.value,) if isinstance(stmt, ValuedStmt) else ()
            for value in values:
                if isinstance(value, UnitExpr) and isinstance(value.expr, QualName):
                    dotted(value.expr)
                if isinstance(value, UnitExpr) and value.unit is not None:
                    mark(value.unit_span, value.unit, ("type", ("defaultLibrary",)))
    return kinds, names


def hdl_completions(hdl: HdlFile | None, library: Any, text: str, line: int, character: int
                    ) -> list[lsp.CompletionItem]:
    if in_comment(text, line, character):
        return []
    lines = text.split("\n")
    parts = dotted_before(lines[line], character) if 0 <= line < len(lines) else None
    if parts is not None:
        return member_completions(library, parts) or []
    items: dict[str, lsp.CompletionItem] = {}
    for word in sorted(keywords(hdl)):
        items[word] = lsp.CompletionItem(word, kind=lsp.CompletionItemKind.Keyword)
    names = library.names() if library is not None else ()
    for name in sorted(names):
        items.setdefault(name, lsp.CompletionItem(name, kind=lsp.CompletionItemKind.Module,
                                                  detail="hardware description"))
    if hdl is not None:
        for name, kind in sorted(classify(hdl)[1].items()):
            item_kind = _ITEM_KINDS.get(kind[0], lsp.CompletionItemKind.Module)
            items.setdefault(name, lsp.CompletionItem(name, kind=item_kind, detail=kind[0]))
    return list(items.values())
