"""Completion: the names in scope at the cursor (variables, parameters, functions,
constants and types of the module and those its imports export, built-ins), MCPL
keywords, and the par_groups a foreach may use there and the memory spaces of the
cursor's level (the description of the function around it, or `mcl.level`).

The par_groups offered are exactly those the checker accepts at that nesting
(mcl.mcpl.nesting.nesting_problem, the paper's Figure 6): outside all foreach
statements the outermost group, inside a foreach over a group that group again
(multi-dimensional parallelism, Fig. 2) and the group directly below it.

After a `.` (the trigger character) only what the path before it can go on with: the
members of a description constant (`hopper.hierarchy.`, mcl.lsp.hwd_members), or the
fields of a variable of a user type.

A buffer that has never parsed gets the names of an error-tolerant scan of its text
(mcl.lsp.scan): its constants, types, functions, and the parameters and variables of the
function around the cursor.

Nothing is offered inside a comment: completion is for code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from mcl.lsp import lookup
from mcl.lsp.hwd_members import dotted_before, member_completions
from mcl.lsp.scan import COMMENT, level_at, scan
from mcl.mcpl import ast
from mcl.mcpl.builtins import BUILTINS
from mcl.mcpl.nesting import nesting_problem
from mcl.mcpl.parse import KEYWORDS
from mcl.mcpl.printer import print_type

if TYPE_CHECKING:
    from mcl.mcpl.loader import DefinitionKind, Program

def in_comment(text: str, line: int, character: int) -> bool:
    """Is the 0-based position inside a comment of `text`?"""
    lines = text.split("\n")
    if not 0 <= line < len(lines):
        return False
    offset = sum(len(x) + 1 for x in lines[:line]) + min(character, len(lines[line]))
    for m in COMMENT.finditer(text):
        if m.start() >= offset:
            return False
        if offset <= m.end() and not (m.group(0).startswith("/*")
                                      and m.group(0).endswith("*/") and offset == m.end()):
            return True
    return False


def kernel_completions(program: Program | None, library: Any, level: str | None, path: Path,
                       text: str, line: int, character: int) -> list[lsp.CompletionItem]:
    if in_comment(text, line, character):
        return []
    lines = text.split("\n")
    parts = dotted_before(lines[line], character) if 0 <= line < len(lines) else None
    module = lookup.module_at(program, path)
    found = lookup.find(module, line, character) if module is not None else None
    if parts is not None:
        members = member_completions(library, parts)
        return members if members is not None else _fields(program, found, parts, line,
                                                           character)
    items = [lsp.CompletionItem(k, kind=lsp.CompletionItemKind.Keyword) for k in sorted(KEYWORDS)]
    if found is not None:
        items += _names_in_scope(program, found, line, character)
    offset = sum(len(x) + 1 for x in lines[:line]) + character
    if found is None and program is None:
        items += _scanned(text, offset)
        level = level_at(text, offset) or level
    items += [lsp.CompletionItem(name, kind=lsp.CompletionItemKind.Function,
                                 detail="built-in") for name in sorted(BUILTINS)]
    if library is None:
        return items
    function = found.function if found is not None else None
    name = function.hwd if function is not None else level
    if name is None or name not in library:
        items += [lsp.CompletionItem(n, kind=lsp.CompletionItemKind.Module,
                                     detail="hardware description") for n in library.names()]
        return items
    hwd = library.get(name)
    foreach = found.innermost_of(ast.Foreach) if found is not None else None
    outer = hwd.par_group(foreach.group) if foreach is not None else None
    if foreach is None or outer is not None:
        for g in hwd.par_groups():
            if nesting_problem(hwd, outer, g) is None:
                items.append(lsp.CompletionItem(g.name, kind=lsp.CompletionItemKind.Class,
                                                detail=f"par_group of {hwd.name}"))
    for s in hwd.memory_spaces():
        items.append(lsp.CompletionItem(s.name, kind=lsp.CompletionItemKind.Variable,
                                        detail=f"memory space of {hwd.name}"))
    return items


def _names_in_scope(program: Program | None, found: lookup.Found, line: int, character: int
                    ) -> list[lsp.CompletionItem]:
    """Variables visible at the position (innermost declaration of each name), then the
    functions, constants and types of the module and of the modules it imports."""
    items: dict[str, lsp.CompletionItem] = {}
    here = (line + 1, character + 1)
    if found.function is not None:
        visible = [d for d in lookup.declarations(found.function) if d.start <= here <= d.end]
        for d in sorted(visible, key=lambda d: d.start):  # inner ones replace outer ones
            items[d.name] = lsp.CompletionItem(
                d.name, kind=lsp.CompletionItemKind.Variable,
                detail=f"{d.kind}: {_type_of(d.node)}".rstrip(": "))
    module = found.module
    kinds: tuple[tuple[DefinitionKind, lsp.CompletionItemKind], ...] = (
        ("function", lsp.CompletionItemKind.Function),
             ("constant", lsp.CompletionItemKind.Constant),
             ("type", lsp.CompletionItemKind.Struct))
    for kind, item_kind in kinds:
        names = program.visible_names(kind, module) if program is not None else set()
        for name in sorted(names):
            items.setdefault(name, lsp.CompletionItem(name, kind=item_kind, detail=kind))
    return list(items.values())


def _fields(program: Program | None, found: lookup.Found | None, parts: list[str],
            line: int, character: int) -> list[lsp.CompletionItem]:
    """After `x.` where the variable `x` in scope is of a user type: its fields."""
    if program is None or found is None or found.function is None or len(parts) != 1:
        return []
    here = (line + 1, character + 1)
    visible = [d for d in lookup.declarations(found.function)
               if d.name == parts[0] and d.start <= here <= d.end]
    type_ = getattr(max(visible, key=lambda d: d.start).node, "type", None) \
        if visible else None
    if not isinstance(type_, ast.NamedType):
        return []
    typedef = program.lookup_type(type_.name, found.module)
    if not isinstance(typedef, ast.TypeDef):
        return []
    return [lsp.CompletionItem(f.name, kind=lsp.CompletionItemKind.Field,
                               detail=f"field of {typedef.name}: {print_type(f.type)}")
            for f in typedef.fields]


_SCANNED_KINDS = {"constant": lsp.CompletionItemKind.Constant,
                  "type": lsp.CompletionItemKind.Struct,
                  "function": lsp.CompletionItemKind.Function}


def _scanned(text: str, offset: int) -> list[lsp.CompletionItem]:
    """The names of a buffer without a tree (mcl.lsp.scan), one item per name."""
    items: dict[str, lsp.CompletionItem] = {}
    for found in scan(text, offset):
        items[found.name] = lsp.CompletionItem(
            found.name, kind=_SCANNED_KINDS.get(found.kind, lsp.CompletionItemKind.Variable),
            detail=found.kind)
    return list(items.values())


def _type_of(node: Any) -> str:
    type_ = getattr(node, "type", None)
    if type_ is None and isinstance(node, ast.Foreach | ast.For):
        return "int"
    return print_type(type_) if type_ is not None else ""
