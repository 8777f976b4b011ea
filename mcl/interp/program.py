"""Name resolution across modules for the interpreter: which function, user type or
top-level constant a name in a module means.

Works on a lone `Module` or on a loaded `Program` (`mcl.mcpl.loader`): a name is looked
up in the module itself, then in the modules it imports, then (so that a program whose
checker already passed never fails here on a visibility subtlety) in every loaded module.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from mcl.identity import Ref
from mcl.mcpl import ast
from mcl.mcpl.builtins import SIGNATURE_CALLS

if TYPE_CHECKING:
    from mcl.mcpl.ast import Module
    from mcl.mcpl.loader import Program


def module_key(module: ast.Module) -> str:
    """The dotted name importers use: `lib.math.common`; a lone file is known by its stem."""
    if module.name is None:
        from pathlib import Path

        return Path(module.file).stem if module.file else ""
    return ".".join((*(module.package or ()), module.name))


class ProgramScope:
    """The modules of one run and lookups across them."""

    def __init__(self, program_or_module: Program | Module):
        if isinstance(program_or_module, ast.Module):
            self.main = program_or_module
            modules: Iterable[ast.Module] = [program_or_module]
        else:
            self.main = program_or_module.main
            modules = program_or_module.modules.values()
        self.modules: list[ast.Module] = [self.main] + [m for m in modules if m is not self.main]
        self._by_key = {module_key(m): m for m in self.modules}
        self._module_of: dict[Ref[ast.Function], ast.Module] = {}
        for m in self.modules:
            for f in m.functions:
                self._module_of[Ref(f)] = m

    def module_of(self, function: ast.Function) -> ast.Module:
        return self._module_of.get(Ref(function), self.main)

    def _search_order(self, module: ast.Module) -> list[ast.Module]:
        imported = [self._by_key[i.dotted] for i in module.imports if i.dotted in self._by_key]
        rest = [m for m in self.modules if m is not module and all(m is not i for i in imported)]
        return [module, *imported, *rest]

    def function(self, name: str, module: ast.Module) -> ast.Function | None:
        for m in self._search_order(module):
            f = m.function(name)
            if f is not None:
                return f
        return None

    def type_def(self, name: str, module: ast.Module) -> ast.TypeDef | None:
        for m in self._search_order(module):
            for t in m.types:
                if t.name == name:
                    return t
        return None

    def constant(self, name: str, module: ast.Module) -> tuple[ast.Decl, ast.Module] | None:
        for m in self._search_order(module):
            for c in m.constants:
                if c.name == name:
                    return c, m
        return None


def is_library_stub(function: ast.Function) -> bool:
    """True for a library function without a real body: only `mcl_builtin_read/write`
    signature calls (or nothing at all). The interpreter computes such functions natively."""
    return all(
        isinstance(s, ast.CallStmt) and s.call.func in SIGNATURE_CALLS for s in function.body.stmts
    )
