"""Inlay hints: what the text leaves implicit and the toolchain knows.

- Before a parameter or declaration without a memory space: the space it lives in by
  default (mcl.mcpl.nesting.default_space, hdl.md 3.2), as `mcl check` assumes it.
- After a description constant (`gpu.hierarchy.blocks.block.threads.max_nr_units`): its
  value in the description.
- After an `int` parameter the settings give a value (`mcl.defines`, `-D n=2048` in
  mcl.toml): that value, which the feedback uses.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types as lsp

from mcl.diagnostics import Span
from mcl.lsp import lookup
from mcl.lsp.hover import constant_value, default_space_of
from mcl.mcpl import ast


def inlay_hints(module: ast.Module, library: Any, values: dict[str, float],
                first_line: int, last_line: int) -> list[lsp.InlayHint]:
    """Hints on the 0-based lines first_line..last_line."""
    out: list[lsp.InlayHint] = []
    for function in module.functions:
        hwd = library.get(function.hwd) if library is not None \
            and function.hwd in library else None
        for p in function.params:
            out += _space_hint(p, hwd, None)
            if p.name in values and isinstance(p.type, ast.Prim):
                out.append(lsp.InlayHint(_end(lookup.name_span(p, p.name)),
                                         f"= {_number(values[p.name])}", padding_left=True))
        _walk(function.body, hwd, None, library, out)
    for c in module.constants:
        _walk(c, None, None, library, out)
    return [h for h in out if first_line <= h.position.line <= last_line]


def _walk(node: Any, hwd: Any, level: Any, library: Any, out: list[lsp.InlayHint]) -> None:
    """Hints of `node` and below; `level`: the par_group of the innermost foreach."""
    match node:
        case ast.Decl():
            out += _space_hint(node, hwd, level)
        case ast.HwdConst():
            out.append(_constant_hint(node, library))
            return
        case ast.Foreach() if hwd is not None:
            level = hwd.par_group(node.group) or level
    for child in ast.children(node):
        _walk(child, hwd, level, library, out)


def _space_hint(node: Any, hwd: Any, level: Any) -> list[lsp.InlayHint]:
    if node.spaces or node.span is None:
        return []
    space = default_space_of(node, hwd, level)
    if space is None:
        return []
    start = lsp.Position(node.span.line - 1, node.span.column - 1)
    return [lsp.InlayHint(start, space.name, kind=lsp.InlayHintKind.Type,
                          padding_right=True,
                          tooltip=f"the default memory space of `{hwd.name}` here")]


def _constant_hint(node: ast.HwdConst, library: Any) -> lsp.InlayHint:
    return lsp.InlayHint(_end(node.span), f"= {constant_value(node, library) or '?'}",
                         padding_left=True)


def _end(span: Span | None) -> lsp.Position:
    if span is None:
        return lsp.Position(0, 0)
    return lsp.Position(span.end_line - 1, span.end_column - 1)


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value:,}" if isinstance(value, int) else str(value)
