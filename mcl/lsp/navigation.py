"""Go to definition and document symbols.

Definitions: a variable's declaration, a called function, a named type, an imported module
or description, a function's description (its level prefix), the par_group a foreach
names; in an `.hdl` file the description a `specializes` names and the block a reference
names."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from mcl.diagnostics import Span
from mcl.lsp import lookup
from mcl.lsp.convert import to_range
from mcl.mcpl import ast
from mcl.mcpl.printer import print_expr

if TYPE_CHECKING:
    from mcl.mcpl.loader import Program
    from mcl.mcpl.sidetables import SideTables

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def word_at(text: str, line: int, character: int) -> str | None:
    """The identifier under (or just before) the 0-based position."""
    lines = text.split("\n")
    if not 0 <= line < len(lines):
        return None
    for m in _WORD.finditer(lines[line]):
        if m.start() <= character <= m.end():
            return m.group(0)
    return None


def location(span: Span | None) -> lsp.Location | None:
    if span is None:
        return None
    return lsp.Location(Path(span.file).resolve().as_uri(), to_range(span))


def _file_start(file: str | Path) -> lsp.Location:
    start = lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0))
    return lsp.Location(Path(file).resolve().as_uri(), start)


def kernel_definition(program: Program | None, tables: SideTables, library: Any, path: Path,
                      text: str, line: int, character: int) -> lsp.Location | None:
    module = lookup.module_at(program, path)
    word = word_at(text, line, character)
    if program is None or module is None or word is None:
        return None
    found = lookup.find(module, line, character)
    node = found.innermost
    if isinstance(node, ast.Name) or isinstance(node, ast.Call) and node.func == word or \
            isinstance(node, ast.NamedType) and node.name == word:
        # A variable, constant, function or type, as the checker resolved it (a built-in
        # function has no declaration to go to).
        bound = tables.binding_of(node)
        declared = bound.node if bound is not None else None
        return location(lookup.name_span(declared, word)) if isinstance(
            declared, ast.Param | ast.Decl | ast.Foreach | ast.View | ast.Function
            | ast.TypeDef) else None
    if isinstance(node, ast.Import):
        return _import_target(program, library, node)
    if library is None:
        return None
    if isinstance(node, ast.Function) and word == node.hwd and word in library:
        return _description(library, word)
    foreach = found.innermost_of(ast.Foreach)
    if foreach is not None and word == foreach.group and found.function is not None \
            and found.function.hwd in library:
        group = library.get(found.function.hwd).par_group(word)
        return location(group.span) if group is not None else None
    return None


def _import_target(program: Program, library: Any, imp: ast.Import) -> lsp.Location | None:
    file = program.files.get(imp.dotted)
    if file is not None:
        return _file_start(file)
    if library is not None and imp.dotted in library:
        return _description(library, imp.dotted)
    return None


def _description(library: Any, name: str) -> lsp.Location | None:
    hwd = library.get(name)
    if hwd.span is not None:
        return location(hwd.span)
    return _file_start(hwd.file) if hwd.file else None


def hdl_definition(hdl: Any, library: Any, line: int, character: int
                   ) -> lsp.Location | None:
    from mcl.hdl.syntax import Block, RefStmt

    if hdl is None or library is None:
        return None
    from mcl.lsp.convert import contains

    if hdl.parent and contains(hdl.parent_span, line, character) and hdl.parent in library:
        return _description(library, hdl.parent)
    stack = list(hdl.blocks)
    while stack:
        node = stack.pop()
        if isinstance(node, Block):
            stack.extend(node.body)
        elif isinstance(node, RefStmt) and contains(node.span, line, character):
            return _reference(hdl, node, library)
    return None


def _reference(hdl: Any, ref: Any, library: Any) -> lsp.Location | None:
    """The block a reference names: in this description or one above it."""
    name = ref.name.parts[-1]
    hwd = library.get(hdl.name) if hdl.name in library else None
    candidates = [hwd, *hwd.lineage.values()] if hwd is not None else []
    if ref.name.parts[0] in library:
        candidates.insert(0, library.get(ref.name.parts[0]))
    for candidate in candidates:
        group = candidate.par_group(name)
        if group is not None and group.span is not None:
            return location(group.span)
        for node in candidate.device.walk():
            if node.name == name and node.span is not None:
                return location(node.span)
    return None


# ------------------------------------------------------------------------- symbols


def _symbol(name: str, kind: lsp.SymbolKind, span: Span | None, selection: Span | None,
            detail: str | None = None, children: list[lsp.DocumentSymbol] | None = None
            ) -> lsp.DocumentSymbol:
    whole = to_range(span)
    return lsp.DocumentSymbol(name=name or "?", kind=kind, range=whole,
                              selection_range=to_range(selection or span), detail=detail,
                              children=children or None)


def kernel_symbols(module: ast.Module) -> list[lsp.DocumentSymbol]:
    out = []
    for imp in module.imports:
        out.append(_symbol(imp.dotted, lsp.SymbolKind.Module, imp.span, None))
    for c in module.constants:
        out.append(_symbol(c.name, lsp.SymbolKind.Constant, c.span,
                           lookup.name_span(c, c.name)))
    for t in module.types:
        out.append(_symbol(t.name, lsp.SymbolKind.Struct, t.span, lookup.name_span(t, t.name)))
    for f in module.functions:
        out.append(_symbol(f.name, lsp.SymbolKind.Function, f.span,
                           lookup.name_span(f, f.name), f"{f.hwd} function",
                           _foreach_nests(f.body)))
    return out


def _foreach_nests(stmt: Any) -> list[lsp.DocumentSymbol]:
    """The foreach statements below `stmt`, nested as in the source."""
    if isinstance(stmt, ast.Foreach):
        name = f"foreach {stmt.var} in {print_expr(stmt.count)} {stmt.group}"
        return [_symbol(name, lsp.SymbolKind.Namespace, stmt.span, None, stmt.group,
                        _foreach_nests(stmt.body))]
    out = []
    for child in ast.children(stmt):
        if isinstance(child, (ast.Block, ast.For, ast.Foreach, ast.If)):
            out += _foreach_nests(child)
    return out


def hdl_symbols(hdl: Any) -> list[lsp.DocumentSymbol]:
    from mcl.hdl.syntax import Block

    def blocks(body: Any) -> list[lsp.DocumentSymbol]:
        return [_symbol(b.name, lsp.SymbolKind.Object, b.span, b.name_span, b.kind,
                        blocks(b.body)) for b in body if isinstance(b, Block)]

    whole = hdl.name_span
    if hdl.blocks:
        last = hdl.blocks[-1].span
        whole = Span(whole.file, 1, 1, last.end_line, last.end_column)
    return [_symbol(hdl.name, lsp.SymbolKind.Module, whole, hdl.name_span,
                    f"specializes {hdl.parent}" if hdl.parent else None, blocks(hdl.blocks))]
