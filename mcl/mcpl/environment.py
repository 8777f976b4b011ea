"""What the names of one module refer to, for the checker (mcpl.md §2 and §5 rule 1).

Visibility (own definitions, exports of imported modules) is the loader's business
(`mcl.mcpl.loader.Program.lookup_*`); this wraps it for one module, falls back to the
built-in functions (mcpl.md §4) after user and library functions, and turns written types
into checker types.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcl.diagnostics import Diagnostic, Span
from mcl.mcpl import ast
from mcl.mcpl import types as T
from mcl.mcpl.access import AccessTable, CalleeModes
from mcl.mcpl.builtins import BUILTINS, Builtin
from mcl.mcpl.constfold import Constant, FoldError, fold, stored
from mcl.mcpl.scopes import Kind
from mcl.mcpl.sidetables import Binding, SideTables

if TYPE_CHECKING:
    from mcl.hdl.library import HwdLibrary
    from mcl.mcpl.loader import DefinitionKind, Program


def resolve_callee(program: Program, module: ast.Module,
                   name: str) -> ast.Function | Builtin | None:
    """A called name as seen from `module`: a user or library function first (the standard
    library may define built-in names in MCPL), then a built-in (mcpl.md §4)."""
    found = program.visible("function", name, module)
    return found if isinstance(found, ast.Function) else BUILTINS.get(name)


class ModuleEnv:
    """Names visible in `module` of `program` (a `mcl.mcpl.loader.Program`)."""

    def __init__(self, program: Program, module: ast.Module, library: HwdLibrary,
                 table: AccessTable, tables: SideTables | None = None):
        self.program = program
        self.module = module
        self.library = library
        self.table = table
        # Where the checker records types and bindings (one for the whole program).
        self.tables = tables if tables is not None else SideTables()
        self._names: dict[str, set[str]] = {}
        self._constant_values: dict[str, Constant | None] = {}
        self.callee_modes: CalleeModes = table.callee_modes(self.callee)

    # -- lookups (None when the name is not visible) ---------------------------------
    def _lookup(self, kind: str, name: str, span: Span | None = None) -> Any:
        lookup = getattr(self.program, f"lookup_{kind}")
        if kind == "function":
            return lookup(name, self.module, span, extra_candidates=BUILTINS)
        return lookup(name, self.module, span)

    def function(self, name: str) -> ast.Function | None:
        found = self.program.visible("function", name, self.module)
        return found if isinstance(found, ast.Function) else None

    def function_problem(self, name: str, span: Span | None) -> Diagnostic:
        """Why `name` is not a visible function: unknown, not exported or not imported."""
        found = self._lookup("function", name, span)
        assert isinstance(found, Diagnostic)
        return found

    def callee(self, name: str) -> ast.Function | Builtin | None:
        return resolve_callee(self.program, self.module, name)

    def typedef(self, name: str) -> ast.TypeDef | None:
        found = self.program.visible("type", name, self.module)
        return found if isinstance(found, ast.TypeDef) else None

    def type_problem(self, name: str, span: Span | None) -> Diagnostic:
        found = self._lookup("type", name, span)
        assert isinstance(found, Diagnostic)
        return found

    def constant(self, name: str) -> ast.Decl | None:
        found = self.program.visible("constant", name, self.module)
        return found if isinstance(found, ast.Decl) else None

    def constant_value(self, name: str, _busy: frozenset[str] = frozenset()) -> Constant | None:
        """The value of a top-level constant when its initialiser folds to a number; None
        otherwise (a problem in the initialiser is reported where the constant is
        declared, so it is not repeated at every use)."""
        if name in self._constant_values:
            return self._constant_values[name]
        decl = self.constant(name)
        value: Constant | None = None
        if decl is not None and decl.init is not None and name not in _busy:
            try:
                value = self._fold(decl.init, _busy | {name})
            except (FoldError, RecursionError):
                value = None
            if value is not None:
                value = stored(value, T.from_ast(decl.type))
        self._constant_values[name] = value
        return value

    def _fold(self, e: ast.Expr, busy: frozenset[str]) -> Constant | None:
        return fold(e, lambda name: self.constant_value(name, busy))

    def names(self, kind: DefinitionKind) -> set[str]:
        if kind not in self._names:
            self._names[kind] = set(self.program.visible_names(kind, self.module))
        return self._names[kind]

    def constant_names(self) -> set[str]:
        return self.names("constant")

    def function_names(self) -> set[str]:
        return self.names("function")

    def type_names(self) -> set[str]:
        return self.names("type")

    # -- the bindings of declarations outside function bodies (the side tables) -------
    def constant_binding(self, decl: ast.Decl) -> Binding:
        return self.tables.declare(decl, decl.name, Kind.CONSTANT, T.from_ast(decl.type),
                                   tuple(decl.spaces), const=True)

    def function_binding(self, function: ast.Function) -> Binding:
        return self.tables.declare(function, function.name, Kind.FUNCTION,
                                   self.return_type(function))

    def builtin_binding(self, builtin: Builtin) -> Binding:
        # Its result type depends on the arguments: each call's is in the types table.
        return self.tables.declare(builtin, builtin.name, Kind.BUILTIN, T.UNKNOWN)

    def typedef_binding(self, typedef: ast.TypeDef) -> Binding:
        return self.tables.declare(typedef, typedef.name, Kind.TYPE, T.Struct(typedef.name))

    def field_binding(self, decl: ast.Decl) -> Binding:
        return self.tables.declare(decl, decl.name, Kind.FIELD, self.field_type(decl))

    # -- checker types of declarations -----------------------------------------------
    def constant_type(self, name: str) -> T.VType:
        decl = self.constant(name)
        return T.UNKNOWN if decl is None else T.from_ast(decl.type)

    @staticmethod
    def param_type(param: ast.Param) -> T.VType:
        return T.from_ast(param.type)

    @staticmethod
    def field_type(decl: ast.Decl) -> T.VType:
        return T.from_ast(decl.type)

    @staticmethod
    def return_type(function: ast.Function) -> T.VType:
        return T.from_ast(function.ret)
