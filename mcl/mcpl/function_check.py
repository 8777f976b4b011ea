"""The check of one function's body (mcl.mcpl.check_function), kept on the function's node
with what it wrote into the side tables, and replayed where nothing it read has changed.

    checked_function(env, function, hwd, source) -> list[Diagnostic]

The check of a body reads its tree, the functions it calls (their signatures and the
parameters they write), the program's constants and types, the names in sight
(mcl.mcpl.function_inputs) and the hardware description; it writes its diagnostics and
the side tables' entries of its nodes (mcl.mcpl.sidetables). The parse keeps the
definitions an edit did not touch as the same objects, so in a file of many functions
an edit inside one checks that one again: each of the others finds its diagnostics on
its node, under the same key, and its side-table entries are written again in the order
the check wrote them (a binding as the declaration it stands for, which the tables of
this check make once: bindings compare by identity).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcl.identity import Ref
from mcl.mcpl import ast
from mcl.mcpl.check_function import FunctionChecker
from mcl.mcpl.function_inputs import function_inputs, several_functions
from mcl.mcpl.sidetables import Binding, Declaring, SideTables, Use

if TYPE_CHECKING:
    from mcl.diagnostics import Diagnostic
    from mcl.hdl.model import HardwareDescription
    from mcl.mcpl import types as T
    from mcl.mcpl.environment import ModuleEnv
    from mcl.mcpl.positions import SourceText
    from mcl.mcpl.scopes import Kind

__all__ = ["checked_function"]

# Checks kept per function node: an edit of a constant changes every function's key, so
# two entries cover editing it back and forth.
PER_NODE = 2

_DECLARE, _BIND, _TYPE = 0, 1, 2


class _Recording(SideTables):
    """Side tables that write into `tables` and note each write, in order."""

    def __init__(self, tables: SideTables) -> None:
        super().__init__(tables.types, tables.bindings, tables.declared)
        self.writes: list[tuple[Any, ...]] = []

    def declare(self, node: Declaring, name: str, kind: Kind, type_: T.VType,
                spaces: tuple[str, ...] = (), const: bool = False) -> Binding:
        self.writes.append((_DECLARE, node, name, kind, type_, spaces, const))
        return super().declare(node, name, kind, type_, spaces, const)

    def bind(self, use: Use, binding: Binding) -> None:
        self.writes.append((_BIND, use, binding))
        super().bind(use, binding)

    def record_type(self, e: ast.Expr, type_: T.VType) -> None:
        self.writes.append((_TYPE, e, type_))
        super().record_type(e, type_)


def _replay(writes: list[tuple[Any, ...]], tables: SideTables) -> None:
    for write in writes:
        if write[0] == _DECLARE:
            tables.declare(*write[1:])
        elif write[0] == _BIND:
            b: Binding = write[2]
            tables.bind(write[1], tables.declare(b.node, b.name, b.kind, b.type, b.spaces,
                                                 b.const))
        else:
            tables.record_type(write[1], write[2])


def checked_function(env: ModuleEnv, function: ast.Function,
                     hwd: HardwareDescription | None, source: SourceText
                     ) -> list[Diagnostic]:
    """`FunctionChecker(env, function, hwd, source).run()`, its side-table entries
    written into `env.tables`; found on the function's node where its key is that of a
    check before (in a module of several functions only: `several_functions`)."""
    if not several_functions(env.module):
        return FunctionChecker(env, function, hwd, source).run()
    kept: dict[tuple[Any, ...], tuple[list[Diagnostic], list[tuple[Any, ...]]]] = \
        ast.kept_on(function, "_check", dict)
    key = (function_inputs(env.program, function), Ref(hwd), Ref(env.library))
    found = kept.get(key)
    if found is not None:
        _replay(found[1], env.tables)
        return list(found[0])
    tables = env.tables
    recording = env.tables = _Recording(tables)
    try:
        diags = FunctionChecker(env, function, hwd, source).run()
    finally:
        env.tables = tables
    if len(kept) >= PER_NODE:
        del kept[next(iter(kept))]
    kept[key] = (list(diags), recording.writes)
    return diags
