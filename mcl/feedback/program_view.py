"""The few questions the analyses ask about the program around a function: which function
a call names, which top-level constants and types are visible, and which parameters each
function reads and writes (the checker's inference, paper section 4.3).

Analyses receive either a loaded `Program` (`mcl.mcpl.loader`) or a lone `Module` (e.g.
the result of a translation); this view answers the same questions for both.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from mcl.mcpl import ast
from mcl.mcpl.access import AccessTable
from mcl.mcpl.builtins import BUILTINS, Builtin
from mcl.mcpl.check import infer_access

if TYPE_CHECKING:
    from mcl.mcpl.ast import Module
    from mcl.mcpl.loader import Program
    from mcl.mcpl.sidetables import Declaring


class ProgramView:
    def __init__(self, program: Program | Module, function: ast.Function):
        self.program = program
        self.function = function
        self.module = self._module_of(function)
        self._modes: AccessTable | None = None
        self._inferred: Any = _UNSET

    @staticmethod
    def of(program: Program | Module, function: ast.Function) -> ProgramView:
        return ProgramView(program, function)

    # -- modules ---------------------------------------------------------------------
    def modules(self) -> list[ast.Module]:
        if isinstance(self.program, ast.Module):
            return [self.program]
        mods = getattr(self.program, "modules", None)
        if mods is None:
            return []
        return list(mods.values()) if hasattr(mods, "values") else list(mods)

    def _module_of(self, function: ast.Function) -> ast.Module | None:
        for m in self.modules():
            if any(f is function for f in m.functions):
                return m
        for m in self.modules():  # an equal copy made by a pass
            if any(f == function for f in m.functions):
                return m
        return None

    def _visible(self, kind: str) -> list[Any]:
        """Definitions of a kind visible from the function's module: its own and those
        its imports export."""
        if self.module is None:
            return []
        own = list(getattr(self.module, kind))
        if isinstance(self.program, ast.Module) or not hasattr(self.program, "imported_modules"):
            return own
        try:
            imported = self.program.imported_modules(self.module)
        except KeyError:
            return own
        for _, m in imported:
            own += [d for d in getattr(m, kind) if m.exports is None or d.name in m.exports]
        return own

    # -- lookups ---------------------------------------------------------------------
    def lookup_function(self, name: str, from_function: ast.Function | None = None
                        ) -> ast.Function | None:
        module = self.module if from_function is None else self._module_of(from_function)
        if hasattr(self.program, "lookup_function") and module is not None:
            try:
                found = self.program.lookup_function(name, module)
            except KeyError:
                found = None
            return found if isinstance(found, ast.Function) else None
        return next((f for f in self._visible("functions") if f.name == name), None)

    def constants(self) -> list[ast.Decl]:
        return self._visible("constants")

    def lookup_type(self, name: str) -> ast.TypeDef | None:
        return next((t for t in self._visible("types") if t.name == name), None)

    # -- read/write inference (section 4.3) ------------------------------------------
    def _table(self) -> AccessTable:
        if self._modes is None:
            functions: list[tuple[ast.Function, Any]] = []
            for m in self.modules():
                for f in m.functions:
                    functions.append((f, self._resolver(f)))
            if self.module is None:
                functions.append((self.function, self._resolver(self.function)))
            self._modes = AccessTable(functions)
        return self._modes

    def _resolver(self, function: ast.Function) -> Any:
        def resolve(name: str) -> Any:
            found = self.lookup_function(name, function)
            return found if found is not None else BUILTINS.get(name)

        return resolve

    def param_modes(self, function: ast.Function | None = None) -> dict[str, str]:
        """Mode ("r", "w", "rw" or "") of each parameter of `function`."""
        function = function or self.function
        table = self._checker_table()
        if table is not None and function.name in table:
            return dict(table[function.name])
        return self._table().params(function)

    def _checker_table(self) -> dict[str, dict[str, str]] | None:
        """The checker's inference over a whole loaded program (None for a lone module)."""
        if self._inferred is _UNSET:
            self._inferred = (None if isinstance(self.program, ast.Module)
                              else _program_access(self.program))
        return self._inferred

    def callee_modes(self, callee: Declaring) -> tuple[str, ...] | None:
        """How a call of `callee` (the declaration the checker bound the call to)
        accesses each argument; None for a declaration that is not a function."""
        if isinstance(callee, ast.Function):
            modes = self.param_modes(callee)
            return tuple(modes.get(p.name, "r") or "r" for p in callee.params)
        return callee.modes if isinstance(callee, Builtin) else None


_UNSET = object()

# The inference of the last program asked about: the analyses make a view for each
# function, and inferring the whole program again for each made a file of many small
# functions quadratic (250 functions: 9 s). A weak reference, so no program is kept alive.
_LAST_INFERRED: list[tuple[weakref.ref[Program], dict[str, dict[str, str]]]] = []


def _program_access(program: Program) -> dict[str, dict[str, str]]:
    """`infer_access(program)`, made once per program (a program is immutable)."""
    for ref, table in _LAST_INFERRED:
        if ref() is program:
            return table
    table = infer_access(program)
    _LAST_INFERRED[:] = [(weakref.ref(program), table)]
    return table

