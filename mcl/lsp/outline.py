"""Folding ranges, workspace symbols and signature help: views of a kernel's structure.

Folding: every function, type, block, foreach, for and if that spans several lines, and
runs of two or more comment lines (the description at the top of every shipped kernel).
Workspace symbols: the functions, constants and types of every module the open kernels
load, matched by a case-insensitive substring of the query. Signature help works on the
text around the cursor, not the last parse: while a call is typed, the file does not
parse."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from mcl.diagnostics import Span
from mcl.lsp import lookup
from mcl.lsp.convert import to_range
from mcl.mcpl import ast
from mcl.mcpl.builtins import BUILTINS
from mcl.mcpl.printer import print_param, print_type

if TYPE_CHECKING:
    from mcl.mcpl.loader import Program

_FOLDED = (ast.Function, ast.TypeDef, ast.Block, ast.Foreach, ast.For, ast.If)
_LINE_COMMENT = re.compile(r"\s*//")
_BLOCK_COMMENT = re.compile(r"/\*(?:.|\n)*?\*/")


def folding_ranges(module: ast.Module | None, text: str, blocks: Iterable[Span] = ()
                   ) -> list[lsp.FoldingRange]:
    """The folds of a kernel's `module` (or of other `blocks`: a description's) and of
    the comments in `text`."""
    by_start: dict[int, lsp.FoldingRange] = {}
    spans: list[Span | None] = list(blocks)
    if module is not None:
        spans += [node.span for top in (*module.types, *module.functions)
                  for node in ast.walk(top) if isinstance(node, _FOLDED)]
    for span in spans:
        if span is not None and span.end_line > span.line:
            start, end = span.line - 1, span.end_line - 1
            if start not in by_start or by_start[start].end_line < end:
                by_start[start] = lsp.FoldingRange(start, end)
    lines = text.split("\n")
    row = 0
    while row < len(lines):
        first = row
        while row < len(lines) and _LINE_COMMENT.match(lines[row]):
            row += 1
        if row - first >= 2:
            by_start[first] = lsp.FoldingRange(first, row - 1,
                                               kind=lsp.FoldingRangeKind.Comment)
        row = max(row, first + 1)
    for m in _BLOCK_COMMENT.finditer(text):
        start, end = text.count("\n", 0, m.start()), text.count("\n", 0, m.end())
        if end > start:
            by_start[start] = lsp.FoldingRange(start, end, kind=lsp.FoldingRangeKind.Comment)
    return [by_start[k] for k in sorted(by_start)]


def workspace_symbols(programs: list[Any], query: str) -> list[lsp.WorkspaceSymbol]:
    wanted = query.lower()
    out: list[lsp.WorkspaceSymbol] = []
    seen: set[tuple[str, str, int]] = set()
    for program in programs:
        for name, module in program.modules.items():
            definitions: list[tuple[Any, lsp.SymbolKind]] = [
                *((f, lsp.SymbolKind.Function) for f in module.functions),
                *((c, lsp.SymbolKind.Constant) for c in module.constants),
                *((t, lsp.SymbolKind.Struct) for t in module.types)]
            for node, kind in definitions:
                span = lookup.name_span(node, node.name)
                if span is None or wanted not in node.name.lower():
                    continue
                key = (str(Path(span.file).resolve()), node.name, span.line)
                if key in seen:
                    continue
                seen.add(key)
                out.append(lsp.WorkspaceSymbol(
                    name=node.name, kind=kind, container_name=name,
                    location=lsp.Location(Path(span.file).resolve().as_uri(), to_range(span))))
    return out


def signature_help(program: Program | None, module: ast.Module | None, text: str, line: int,
                   character: int) -> lsp.SignatureHelp | None:
    """The signature of the call whose argument list holds the cursor, with the argument
    the cursor is in."""
    lines = text.split("\n")
    if not 0 <= line < len(lines):
        return None
    before = "\n".join(lines[:line] + [lines[line][:character]])
    depth, commas = 0, 0
    for i in range(len(before) - 1, -1, -1):
        ch = before[i]
        if ch in ")]":
            depth += 1
        elif ch in "([":
            if depth == 0:
                if ch == "[":
                    return None
                name = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*$", before[:i])
                return _signature(program, module, name.group(1), commas) if name else None
            depth -= 1
        elif ch == "," and depth == 0:
            commas += 1
        elif ch in ";{}":
            return None
    return None


def _signature(program: Program | None, module: ast.Module | None, name: str, active: int
               ) -> lsp.SignatureHelp | None:
    target = program.lookup_function(name, module) \
        if program is not None and module is not None else None
    if isinstance(target, ast.Function):
        params = [print_param(p) for p in target.params]
        label = f"{target.hwd} {print_type(target.ret)} {target.name}({', '.join(params)})"
    elif name in BUILTINS:
        label = BUILTINS[name].signature
        params = [p.strip() for p in label[label.index("(") + 1:-1].split(",") if p.strip()]
    else:
        return None
    info = lsp.SignatureInformation(
        label, parameters=[lsp.ParameterInformation(p) for p in params])
    return lsp.SignatureHelp([info], active_signature=0,
                             active_parameter=min(active, max(len(params) - 1, 0)))
