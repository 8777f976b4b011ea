"""Typed construction: a node a pass builds after the check gets its type when it is
built, by the checker's rules, so that the side tables describe every expression of the
tree later stages print (docs/architecture.md, "The checker's side tables").

    binary_type(op, left, right) -> VType   the type a well-typed `left op right` has
    Typed(tables).int_lit(7) / .float_lit(0.5) / .name("i", T.INT) / .binary("+", a, b)
    Typed(tables).param(Prim("int"), "first") -> (Param, Binding); .use(binding) -> Name

`binary_type` is the rule the checker itself applies (`check_expressions.binary`), with
C's usual arithmetic conversions from `mcl.mcpl.types` (`wider`); a call's type is the
built-in's typing of `mcl.mcpl.builtins` or the function's declared result, both already
in the tables when the checker saw the call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from mcl.diagnostics import Span
from mcl.mcpl import ast
from mcl.mcpl import types as T
from mcl.mcpl.scopes import Kind
from mcl.mcpl.sidetables import Binding, SideTables

E = TypeVar("E", bound=ast.Expr)

# The operators whose result is a bool whatever their operands (mcpl.md section 4).
LOGICAL = frozenset({"&&", "||"})
EQUALITY = frozenset({"==", "!="})
ORDER = frozenset({"<", "<=", ">", ">="})
BITWISE = frozenset({"&", "|"})


def binary_type(op: str, left: T.VType, right: T.VType) -> T.VType:
    """The type of `left op right` for operands the checker accepts: a bool for the
    logical operators and the comparisons (and `&`, `|` of two bools), else the wider
    operand after C's usual arithmetic conversions."""
    if op in LOGICAL or op in EQUALITY or op in ORDER:
        return T.BOOL
    if op in BITWISE and T.is_bool(left) and T.is_bool(right) and T.BOOL in (left, right):
        return T.BOOL
    return T.wider(left, right)


@dataclass(frozen=True)
class Typed:
    """Builds expression nodes and records each one's type in `tables` as it is built."""

    tables: SideTables

    def _typed(self, e: E, type_: T.VType) -> E:
        self.tables.record_type(e, type_)
        return e

    def int_lit(self, value: int, span: Span | None = None) -> ast.IntLit:
        return self._typed(ast.IntLit(value, span=span), T.INT)

    def float_lit(self, value: float, span: Span | None = None) -> ast.FloatLit:
        return self._typed(ast.FloatLit(value, repr(value), span=span), T.FLOAT)

    def name(self, name: str, type_: T.VType) -> ast.Name:
        """A name of the generated code (a variable a pass declares itself, outside the
        checker's bindings) whose type is `type_`."""
        return self._typed(ast.Name(name), type_)

    def param(self, type_: ast.Prim, name: str) -> tuple[ast.Param, Binding]:
        """A new scalar parameter `type_ name`, declared as the checker declares one."""
        param = ast.Param(type_, name)
        return param, self.tables.declare(param, name, Kind.PARAM, T.Scalar(type_.name))

    def use(self, binding: Binding, span: Span | None = None) -> ast.Name:
        """A use of the declaration `binding`: bound to it, of its type."""
        name = ast.Name(binding.name, span=span)
        self.tables.bind(name, binding)
        return self._typed(name, binding.type)

    def binary(self, op: str, left: ast.Expr, right: ast.Expr, span: Span | None = None
               ) -> ast.Binary:
        """`left op right` of two typed operands."""
        lt, rt = self.tables.type_of(left), self.tables.type_of(right)
        assert lt is not None and rt is not None, "an operand was built untyped"
        return self._typed(ast.Binary(op, left, right, span=span), binary_type(op, lt, rt))
