"""Go to definition and the blocks to fold in an `.hdl` description (docs/hdl.md).

A dotted name in a description resolves as the loader resolves it: a reference statement
(`nvidia.hierarchy.blocks.block.threads.thread;`, `accelerator.host;`) or an argument
(`connects(mem, smps.smp[*])`, `space(shared)`) names, after an optional description,
either a place in the parallelism hierarchy (`hierarchy.GROUP.UNIT...`, its memory
spaces) or a block of the device by its path. The cursor's part of the name picks how
much of it: on `blocks` of `nvidia.hierarchy.blocks.block`, the par_group `blocks`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lsprotocol import types as lsp

from mcl.diagnostics import Span
from mcl.hdl.syntax import ArgStmt, BlockStmt, QualName, RefStmt, UnitExpr
from mcl.lsp.convert import contains
from mcl.lsp.navigation import description_location, location

_HIERARCHY = ("hierarchy", "parallelism")


def hdl_definition(hdl: Any, library: Any, line: int, character: int
                   ) -> lsp.Location | None:
    if hdl is None or library is None:
        return None
    if hdl.parent and contains(hdl.parent_span, line, character) and hdl.parent in library:
        return description_location(library, hdl.parent)
    for name in _names(hdl.blocks):
        if contains(name.span, line, character):
            return _resolve(hdl, library, _parts_to(name, line, character))
    return None


def _names(body: Any) -> Iterator[QualName]:
    """The dotted names written in the statements of `body`, nested blocks included."""
    for node in body:
        match node:
            case BlockStmt():
                yield from _names(node.body)
            case RefStmt():
                yield node.name
            case ArgStmt():
                for arg in node.args:
                    if isinstance(arg, UnitExpr) and isinstance(arg.expr, QualName):
                        yield arg.expr


def _parts_to(name: QualName, line: int, character: int) -> list[str]:
    """The parts of `name` up to the one under the 0-based position (a name is written
    on one line, its parts joined by dots)."""
    column = name.span.column - 1
    for i, part in enumerate(name.parts):
        column += len(part)
        if line + 1 == name.span.line and character <= column:
            return list(name.parts[:i + 1])
        column += 1  # the dot
    return list(name.parts)


def _resolve(hdl: Any, library: Any, parts: list[str]) -> lsp.Location | None:
    own = library.get(hdl.name) if hdl.name in library else None
    if parts[0] in library and parts[0] != hdl.name and len(parts) == 1:
        return description_location(library, parts[0])
    if parts[0] in library and len(parts) > 1:
        candidates, rest = [library.get(parts[0])], parts[1:]
    else:
        candidates = [own, *own.lineage.values()] if own is not None else []
        rest = parts
    for hwd in candidates:
        span = _in_hierarchy(hwd, rest[1:]) if rest[0] in _HIERARCHY else _in_device(hwd, rest)
        if span is not None:
            return location(span)
    return None


def _in_hierarchy(hwd: Any, where: list[str]) -> Span | None:
    """The par_group, par_unit or memory space at `where` below the hierarchy's root."""
    found = hwd.hierarchy_at(where)
    return found.span if found is not None else None


def _in_device(hwd: Any, parts: list[str]) -> Span | None:
    """A block of the device by its path (`smps.smp`), a memory space (`space(shared)`)
    or a par_group by its name."""
    node = hwd.node(".".join(parts))
    if node is not None and node.span is not None:
        return node.span
    if len(parts) == 1:
        space = next((s for s in hwd.memory_spaces() if s.name == parts[0]), None)
        if space is not None and space.span is not None:
            return space.span
        group = hwd.par_group(parts[0])
        if group is not None and group.span is not None:
            return group.span
    return None


def block_spans(hdl: Any) -> list[Span]:
    """The spans of every block of the description (for folding)."""
    out = []
    stack = list(hdl.blocks)
    while stack:
        block = stack.pop()
        if isinstance(block, BlockStmt):
            out.append(block.span)
            stack.extend(block.body)
    return out
