"""`CheckedProgram`: the checker's output, the one value every stage after the checker
takes (feedback, the interpreter, code generation, the language server).

It lives here, with the checker's side tables, below the packages that read it: the
feedback stage and the interpreter take a `CheckedProgram` without importing the pass
list (`mcl.pipeline`), which imports them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcl.diagnostics import Diagnostic, MclError, Severity
from mcl.mcpl import types as T
from mcl.mcpl.ast import Expr, Module
from mcl.mcpl.loader import Program
from mcl.mcpl.sidetables import Binding, SideTables, Use


@dataclass(frozen=True)
class CheckedProgram:
    """The checker's output: the program, its diagnostics (with the translation's notes
    before them when it was translated), the level it was translated to (None: as
    written, each function at its own level) and the checker's side tables (the type of
    each expression, the declaration each name stands for: `mcl.mcpl.sidetables`)."""

    program: Program
    diagnostics: tuple[Diagnostic, ...] = ()
    level: str | None = None
    notes: tuple[Diagnostic, ...] = ()  # the translation's alone (also in `diagnostics`)
    tables: SideTables = field(default_factory=SideTables, compare=False, repr=False)

    def type_of(self, e: Expr) -> T.VType | None:
        """The checker's type of the expression `e` of this program."""
        return self.tables.type_of(e)

    def binding_of(self, use: Use) -> Binding | None:
        """The declaration the name in `use` (a Name, Call, Field, NamedType or ViewDecl
        of this program) stands for."""
        return self.tables.binding_of(use)

    @property
    def main(self) -> Module:
        return self.program.main

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == Severity.ERROR]

    def valid(self) -> Program:
        """The program, or MclError with the checker's errors."""
        errors = self.errors
        if errors:
            raise MclError(errors)
        return self.program
