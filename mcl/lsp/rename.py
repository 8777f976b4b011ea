"""Rename that keeps the program's meaning: a new name is refused when some use would
then stand for another declaration, or when it would be declared twice.

Names resolve by mcpl.md §5: a variable is the innermost declaration in scope (rule 1),
and top-level constants are looked up after all scopes; constants, functions and types
share one namespace per module, with what its imports export. So renaming `x` to `n`
changes meaning when

- a use of `x` sits where a variable `n` is in scope (captured by `n`: the constant
  `TILE_K` renamed `n` inside a function with a parameter `n`);
- a variable `x` would shadow a use of another `n` (the renamed declaration captures it);
- `n` is already declared in the same scope, or is a top-level name (own or imported)
  where `x` is visible (a duplicate).

The check reads the checker's side tables of every program the rename edits (the
document's and those of the files that import its module), before any edit is made."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcl.diagnostics import Span
from mcl.lsp import lookup
from mcl.lsp.references import name_span_of_use, rename_problem
from mcl.mcpl import ast
from mcl.mcpl.builtins import BUILTINS
from mcl.mcpl.scopes import Kind
from mcl.mcpl.sidetables import Binding, SideTables

if TYPE_CHECKING:
    from mcl.mcpl.loader import Program

# Kinds whose uses are plain names (`Name` nodes): a variable in scope captures them.
_VARIABLES = frozenset({Kind.PARAM, Kind.LOCAL, Kind.LOOP, Kind.INDEX, Kind.VIEW})
_NAMED_BY_VARIABLES = _VARIABLES | {Kind.CONSTANT}


def conflict(program: Program, tables: SideTables, binding: Binding, new_name: str
             ) -> str | None:
    """Why renaming `binding` (as this program's tables know it) to `new_name` would
    change what a name stands for, or None when the rename keeps the meaning."""
    problem = rename_problem(new_name)
    if problem is not None or new_name == binding.name:
        return problem
    if binding.kind in _VARIABLES:
        return _variable_conflict(program, tables, binding, new_name)
    return _top_level_conflict(program, tables, binding, new_name)


def _at(span: Span | None) -> tuple[int, int]:
    return (span.line, span.column) if span is not None else (0, 0)


def _where(program: Program, span: Span | None) -> tuple[ast.Module | None, Any]:
    """The module and the function (None: top level) of a place in the program."""
    if span is None:
        return None, None
    module = lookup.module_at(program, Path(span.file))
    if module is None:
        return None, None
    return module, lookup.find(module, span.line - 1, span.column - 1).function


def _variables_at(function: Any, place: tuple[int, int]) -> Iterator[lookup.Declaration]:
    """The variables of `function` whose scope covers `place` (1-based line, column)."""
    for d in lookup.declarations(function):
        if d.start <= place <= d.end:
            yield d


def _uses(tables: SideTables, binding: Binding) -> Iterator[tuple[Any, Span]]:
    for use in tables.uses_of(binding):
        span = name_span_of_use(use)
        if span is not None:
            yield use, span


def _variable_conflict(program: Program, tables: SideTables, binding: Binding,
                       new_name: str) -> str | None:
    node_span = getattr(binding.node, "span", None)
    _, function = _where(program, node_span)
    if function is None:
        return None
    declared = list(lookup.declarations(function))
    me = next((d for d in declared if d.node is binding.node), None)
    if me is None:
        return None
    old = binding.name
    for other in declared:
        if other.name != new_name or other.node is binding.node:
            continue
        if me.start <= other.start <= me.end:
            return (f"'{new_name}' is already declared at line {other.start[0]} (a "
                    f"{other.kind}) where '{old}' is in scope: a use of '{old}' there "
                    f"would stand for it")
        same_scope = other.end == me.end or (other.kind == me.kind == "foreach index")
        if other.start <= me.start <= other.end and same_scope:
            return (f"'{new_name}' is already declared in this scope (line "
                    f"{other.start[0]}, a {other.kind})")
    # A use of another `new_name` inside the renamed variable's scope would stand for it.
    file = Path(node_span.file).resolve() if node_span is not None else None
    for use_binding in dict.fromkeys(b for b in tables.bindings.values()
                                     if b.name == new_name and b is not binding
                                     and b.kind in _NAMED_BY_VARIABLES):
        for _, span in _uses(tables, use_binding):
            if Path(span.file).resolve() == file and me.start <= _at(span) <= me.end:
                return (f"the use of '{new_name}' at line {span.line} (a "
                        f"{use_binding.kind.value}) would stand for the renamed '{old}'")
    return None


def _top_level_names(program: Program, module: ast.Module) -> set[str]:
    """Constants, types and functions `module` can name (one namespace per module)."""
    names: set[str] = set()
    for kind in ("constant", "type", "function"):
        names |= program.visible_names(kind, module)
    return names


def _top_level_conflict(program: Program, tables: SideTables, binding: Binding,
                        new_name: str) -> str | None:
    old = binding.name
    if binding.kind is Kind.FUNCTION and new_name in BUILTINS:
        return f"'{new_name}' is a built-in function"
    declaring, _ = _where(program, getattr(binding.node, "span", None))
    modules = [declaring] if declaring is not None else []
    uses = list(_uses(tables, binding))
    for _, span in uses:
        module, _ = _where(program, span)
        if module is not None and all(module is not m for m in modules):
            modules.append(module)
    for module in modules:
        if new_name in _top_level_names(program, module):
            where = f"module '{module.name}'" if module.name else "this module"
            return f"'{new_name}' is already defined in (or imported into) {where}"
    if binding.kind not in _NAMED_BY_VARIABLES:
        return None  # calls and types are not names a variable can capture
    for use, span in uses:
        if not isinstance(use, ast.Name):
            continue
        _, function = _where(program, span)
        if function is None:
            continue
        for variable in _variables_at(function, _at(span)):
            if variable.name == new_name:
                return (f"'{new_name}' is the {variable.kind} declared at line "
                        f"{variable.start[0]}: the use of '{old}' at line {span.line} would "
                        f"stand for it")
    return None
