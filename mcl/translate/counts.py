"""What the translation knows about unit counts: the description constant that names a
par_group's count, and the integer value of a count where it is known without the
kernel's sizes.

Dimension statements read the description's constant rather than a bare number (the
paper's Fig. 9: `int nrThreadsM = gpu.hierarchy.blocks.block.threads.max_nr_units;`).
Knowing values statically lets the translation leave out the guard when a split count
provably divides (e.g. 1024 threads into warps of 32); otherwise it rounds up and guards.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping

from mcl.hdl.model import HardwareDescription, Parallelism, ParGroup, ParUnit, Quantity
from mcl.mcpl import ast
from mcl.mcpl import operators as ops
from mcl.mcpl.evaluate import Evaluator, IntValues, NotEvaluable

# hdl.md 3.1: the parallelism block is named `hierarchy` (`parallelism hierarchy { ... }`).
_DEFAULT_ROOT = "hierarchy"


def group_path(group: ParGroup) -> tuple[str, ...]:
    """Qualified name of a par_group inside its description, without the description name:
    fermi `threads` -> ('hierarchy', 'blocks', 'block', 'warps', 'warp', 'threads')."""
    parts: list[str] = [group.name]
    parent: ParUnit | Parallelism = group.parent
    while isinstance(parent, ParUnit):
        parts[:0] = [parent.group.name, parent.name]
        parent = parent.group.parent
    root = parent.name if parent.name != "parallelism" else _DEFAULT_ROOT
    return (root, *parts)


def count_property(group: ParGroup) -> str:
    return "nr_units" if group.exact else "max_nr_units"


def count_constant(hwd: HardwareDescription, group: ParGroup) -> ast.HwdConst:
    """The expression reading `group`'s unit count from the description: `nr_units` when
    the count is exact (fermi's 32 threads of a warp), else `max_nr_units`."""
    return ast.HwdConst((hwd.name, *group_path(group), count_property(group)))


def _as_int(value: object) -> int | None:
    if isinstance(value, Quantity):
        value = value.value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and (math.isinf(value) or not value.is_integer()):
        return None
    return int(value)


class StaticInts:
    """Evaluates integer expressions whose value does not depend on the kernel's sizes:
    literals, description constants, and names bound in `known`, with C semantics on ints
    (`IntValues`)."""

    def __init__(self, descriptions: Mapping[str, HardwareDescription], known: Mapping[str, int]):
        self._descriptions = descriptions
        self._known = dict(known)
        self._walk = _StaticWalk(IntValues())

    def bind(self, name: str, expr: ast.Expr) -> None:
        value = self.value(expr)
        if value is None:
            self._known.pop(name, None)
        else:
            self._known[name] = value

    def value(self, e: ast.Expr) -> int | None:
        """The value of `e`, or None (not known) where MCPL defines none: a count believed
        known wrongly could drop a guard, an unknown one only keeps it."""
        try:
            return int(self._walk.value(e, self))
        except (NotEvaluable, ops.OperatorError):
            return None

    def known(self, name: str) -> int:
        if name not in self._known:
            raise NotEvaluable(name)
        return self._known[name]

    def description_value(self, path: tuple[str, ...]) -> int:
        hwd = self._descriptions.get(path[0])
        value = _as_int(hwd.value(path)) if hwd is not None else None
        if value is None:
            raise NotEvaluable(".".join(path))
        return value


class _StaticWalk(Evaluator[ops.Number, StaticInts]):
    def name(self, e: ast.Name, env: StaticInts) -> ops.Number:
        return env.known(e.name)

    def hwd_constant(self, e: ast.HwdConst, env: StaticInts) -> ops.Number:
        return env.description_value(e.path)


def host_constants(function: ast.Function, module: ast.Module, statics: StaticInts) -> StaticInts:
    """Bind the module's integer constants and the function's host-level `int` declarations
    (outside every foreach) that are never assigned again, so counts such as
    `nrThreadsM` from an earlier translation step are known.

    Bindings are by name, so a name that the function declares twice (a shadowing
    declaration in a nested block, a parameter or loop variable of the same name) is not
    bound: its value would be wrong in the inner scope, and a count wrongly believed to
    divide loses its guard."""
    assigned = _assigned_names(function.body)
    declared = _declaration_counts(function)
    for decl in module.constants:
        if _is_int(decl) and decl.init is not None and decl.name not in declared:
            statics.bind(decl.name, decl.init)
    for stmt in function.body.stmts:
        if isinstance(stmt, ast.Decl) and _is_int(stmt) and stmt.init is not None:
            if stmt.name not in assigned and declared[stmt.name] == 1:
                statics.bind(stmt.name, stmt.init)
    return statics


def _declaration_counts(function: ast.Function) -> Counter[str]:
    """How often each name is declared in `function`: parameters, declarations, views and
    loop variables."""
    names: Counter[str] = Counter(p.name for p in function.params)
    for n in ast.walk(function.body):
        if isinstance(n, (ast.Decl, ast.View)):
            names[n.name] += 1
        elif isinstance(n, ast.Foreach):
            names[n.var] += 1
    return names


def _is_int(decl: ast.Decl) -> bool:
    return isinstance(decl.type, ast.Prim) and decl.type.name == "int"


def _assigned_names(node: object) -> set[str]:
    names: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, (ast.Assign, ast.IncDec)):
            root = ast.root_name(n.target)
            if root:
                names.add(root)
        elif isinstance(n, ast.Swap):
            names.update(r for r in (ast.root_name(n.left), ast.root_name(n.right)) if r)
    return names
