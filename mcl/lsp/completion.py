"""Completion: MCPL keywords, and the memory spaces and par_group names valid at the
cursor's level (the description of the function around it, or `mcl.level`). Inside a
foreach only the par_groups nested below its own are offered: a foreach over `blocks`
holds one over `threads`, never the other way round (section 3.1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from mcl.lsp import lookup
from mcl.mcpl import ast
from mcl.mcpl.parse import KEYWORDS


def kernel_completions(program: Any, library: Any, level: str | None, path: Path,
                       line: int, character: int) -> list[lsp.CompletionItem]:
    items = [lsp.CompletionItem(k, kind=lsp.CompletionItemKind.Keyword) for k in sorted(KEYWORDS)]
    if library is None:
        return items
    module = lookup.module_at(program, path)
    found = lookup.find(module, line, character) if module is not None else None
    function = found.function if found is not None else None
    name = function.hwd if function is not None else level
    if name is None or name not in library:
        items += [lsp.CompletionItem(n, kind=lsp.CompletionItemKind.Module,
                                     detail="hardware description") for n in library.names()]
        return items
    hwd = library.get(name)
    groups = hwd.par_groups()
    foreach = found.innermost_of(ast.Foreach) if found is not None else None
    if foreach is not None:
        names = [g.name for g in groups]
        if foreach.group in names:
            groups = groups[names.index(foreach.group) + 1:]
    for g in groups:
        items.append(lsp.CompletionItem(g.name, kind=lsp.CompletionItemKind.Class,
                                        detail=f"par_group of {hwd.name}"))
    for s in hwd.memory_spaces():
        items.append(lsp.CompletionItem(s.name, kind=lsp.CompletionItemKind.Variable,
                                        detail=f"memory space of {hwd.name}"))
    return items
