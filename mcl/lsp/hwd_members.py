"""Completion after a `.` in a description constant (`hopper.hierarchy.` ...): the
members the path can go on with, as `HwdDescription.value` resolves a path (hdl.md:
the hierarchy of par_groups and par_units with their memory spaces and unit counts, and
the blocks of the device with their properties)."""

from __future__ import annotations

import re
from typing import Any

from lsprotocol import types as lsp

from mcl.hdl.model import MemorySpace, ParGroup
from mcl.lsp.hover import constant_value
from mcl.mcpl import ast

# the dotted path just before the cursor, and the part of the member already typed
_DOTTED = re.compile(r"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\.(\w*)\Z")
_HIERARCHY = ("hierarchy", "parallelism")


def dotted_before(line: str, character: int) -> list[str] | None:
    """The parts of `a.b.c.` before the 0-based `character` of `line` (a member may be
    half typed after the last dot), or None when no dot is there."""
    m = _DOTTED.search(line[:character])
    return m.group(1).split(".") if m else None


def member_completions(library: Any, parts: list[str]) -> list[lsp.CompletionItem] | None:
    """The members after `parts` (description name first); None when `parts[0]` is not a
    description of `library`."""
    if library is None or not parts or parts[0] not in library:
        return None
    hwd = library.get(parts[0])
    where = parts[1:]
    if not where:
        items = [_item(h, lsp.CompletionItemKind.Module, "the par_group hierarchy")
                 for h in _HIERARCHY[:1]]
        return items + [_item(c.name, lsp.CompletionItemKind.Module, c.kind)
                        for c in hwd.device.children]
    if where[0] in _HIERARCHY:
        return _hierarchy_members(library, hwd, parts, where[1:])
    node = hwd.node(".".join(where))
    if node is None:
        return []
    items = [_item(c.name, lsp.CompletionItemKind.Module, c.kind) for c in node.children]
    items += [_value_item(library, parts, p) for p in sorted(node.values)]
    items += [_item(f, lsp.CompletionItemKind.Property, "flag") for f in sorted(node.flags)]
    return items


def _hierarchy_members(library: Any, hwd: Any, parts: list[str], where: list[str]
                       ) -> list[lsp.CompletionItem]:
    scope = hwd.hierarchy_at(where)
    if scope is None:
        return []
    if isinstance(scope, MemorySpace):
        return [_value_item(library, parts, p) for p in ("default", "read_only")]
    items = []
    if isinstance(scope, ParGroup):
        if scope.unit is not None:
            items.append(_item(scope.unit.name, lsp.CompletionItemKind.Class,
                               f"par_unit of {scope.name}"))
        items += [_value_item(library, parts, p) for p in ("nr_units", "max_nr_units")
                  if hwd.value((*parts, p)) is not None]
    elif scope.inner is not None:
        items.append(_item(scope.inner.name, lsp.CompletionItemKind.Class, "par_group"))
    items += [_item(s.name, lsp.CompletionItemKind.Variable, "memory space")
              for s in scope.spaces]
    return items


def _item(label: str, kind: lsp.CompletionItemKind, detail: str) -> lsp.CompletionItem:
    return lsp.CompletionItem(label, kind=kind, detail=detail)


def _value_item(library: Any, parts: list[str], prop: str) -> lsp.CompletionItem:
    """A property with its value as hover shows it (`= 1,024`)."""
    value = constant_value(ast.HwdConst((*parts, prop)), library)
    return _item(prop, lsp.CompletionItemKind.Constant,
                 f"= {value}" if value is not None else "property")
