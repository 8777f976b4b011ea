"""Go to definition and document symbols.

Definitions: a variable's declaration, a called function, a named type, an imported module
or description, a function's description (its level prefix), the par_group a foreach
names. In an `.hdl` file: mcl.lsp.hdl_navigation."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from mcl.diagnostics import Span
from mcl.lsp import lookup
from mcl.lsp.convert import to_range
from mcl.mcpl import ast
from mcl.mcpl.loader import Program
from mcl.mcpl.printer import print_expr
from mcl.mcpl.sidetables import SideTables
from mcl.mcpl.visitor import unknown_node

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
    return _definition_at(found.innermost, word, found, program, tables, library)


def _definition_at(node: ast.Node | None, word: str, found: lookup.Found, program: Program,
                   tables: SideTables, library: Any) -> lsp.Location | None:
    """The definition of `word` at `node`, the innermost node around the cursor."""
    match node:
        case None:
            return None
        case ast.Name():
            return _declaration(tables, node, word)
        case ast.Call() | ast.NamedType() if lookup.names(node) == word:
            return _declaration(tables, node, word)
        case ast.Import():
            return _import_target(program, library, node)
        case ast.Function() if library is not None and word == node.hwd and word in library:
            return description_location(library, word)
        case (ast.Name() | ast.Call() | ast.NamedType() | ast.Function() | ast.Prim()
              | ast.ArrayType() | ast.IntLit() | ast.FloatLit() | ast.BoolLit() | ast.HwdConst()
              | ast.Index() | ast.Field() | ast.Unary() | ast.Binary() | ast.Decl()
              | ast.ViewDecl() | ast.Assign() | ast.IncDec() | ast.CallStmt() | ast.Swap()
              | ast.If() | ast.For() | ast.Foreach() | ast.Barrier() | ast.Return()
              | ast.Block() | ast.Launch() | ast.Param() | ast.TypeDef() | ast.Module()
              | ast.View()):
            return _par_group(found, library, word)
        case _:
            unknown_node(node, "go to definition")


def _declaration(tables: SideTables, use: ast.Name | ast.Call | ast.NamedType, word: str
                 ) -> lsp.Location | None:
    """Where the variable, constant, function or type `use` names is declared, as the
    checker resolved it (a built-in function has no declaration to go to)."""
    bound = tables.binding_of(use)
    declared = bound.node if bound is not None else None
    return location(lookup.name_span(declared, word)) if isinstance(
        declared, ast.Param | ast.Decl | ast.Foreach | ast.View | ast.Function
        | ast.TypeDef) else None


def _par_group(found: lookup.Found, library: Any, word: str) -> lsp.Location | None:
    """The par_group `word` of the innermost foreach around the cursor, if it names it."""
    foreach = found.innermost_of(ast.Foreach)
    if library is None or foreach is None or word != foreach.group \
            or found.function is None or found.function.hwd not in library:
        return None
    group = library.get(found.function.hwd).par_group(word)
    return location(group.span) if group is not None else None


def _import_target(program: Program, library: Any, imp: ast.Import) -> lsp.Location | None:
    file = program.files.get(imp.dotted)
    if file is not None:
        return _file_start(file)
    if library is not None and imp.dotted in library:
        return description_location(library, imp.dotted)
    return None


def description_location(library: Any, name: str) -> lsp.Location | None:
    hwd = library.get(name)
    if hwd.span is not None:
        return location(hwd.span)
    return _file_start(hwd.file) if hwd.file else None


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
    from mcl.hdl.syntax import BlockStmt

    def blocks(body: Any) -> list[lsp.DocumentSymbol]:
        return [_symbol(b.name, lsp.SymbolKind.Object, b.span, b.name_span, b.kind,
                        blocks(b.body)) for b in body if isinstance(b, BlockStmt)]

    whole = hdl.name_span
    if hdl.blocks:
        last = hdl.blocks[-1].span
        whole = Span(whole.file, 1, 1, last.end_line, last.end_column)
    return [_symbol(hdl.name, lsp.SymbolKind.Module, whole, hdl.name_span,
                    f"specializes {hdl.parent}" if hdl.parent else None, blocks(hdl.blocks))]
