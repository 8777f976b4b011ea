"""One evaluator of MCPL expressions, parametrised by the domain its values live in
(docs/mcpl.md §6.1 defines the operators; `mcl.mcpl.operators` implements them once).

The walk over the tree is here; what an operator means is the domain's:

- `CValues`: MCPL's C semantics on Python ints and bools and numpy floats, straight from
  `mcl.mcpl.operators` (host evaluation of sizes, the translation's static counts);
- `mcl.mcpl.constfold.FoldValues`: the checker's constant folding (a value or None for
  "not a constant"; a float in the precision C computes it in);
- `mcl.mcpl.extents._IndexValues`: ints and bools at one point of the extents check's
  search for an access outside its array;
- `mcl.mcpl.symbolic_values.SymPyValues`: SymPy expressions in the kernel's sizes, with C's
  truncation for `/`, `%`, a negative integer power and `toInt` (feedback, vectorisation);
- `mcl.mcpl.intervals.IntervalValues`: the range of values an expression can take.

What a name or a description constant stands for, and what an expression the domain does
not compute (an array element, a field) becomes, is the client's: it subclasses
`Evaluator` and overrides `name`, `hwd_constant` and `other`. An operation the domain does
not define raises (`NotEvaluable`, or `OperatorError` for C's undefined results);
`operate` is where a client turns that into its own answer (a diagnostic with the
operation's position, "unknown", an opaque symbol).

The interpreter (`mcl.interp.compile_expr`) keeps its own fast path: it compiles each
expression once into closures over the checker's types, and every operator in them is
`mcl.mcpl.operators`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from mcl.mcpl import ast
from mcl.mcpl import operators as ops
from mcl.mcpl.builtins import BUILTINS

V = TypeVar("V")
Env = TypeVar("Env")


class NotEvaluable(Exception):
    """An expression or operation that the domain (or the client) gives no value."""


class Domain(Protocol[V]):
    """The values of one evaluation and the operators on them."""

    def integer(self, value: int) -> V: ...

    def floating(self, value: float) -> V: ...

    def boolean(self, value: bool) -> V: ...

    def unary(self, op: str, operand: V) -> V: ...

    def binary(self, op: str, left: V, right: V) -> V: ...

    def logical(self, op: str, left: V, right: Callable[[], V]) -> V:
        """`&&` or `||`; `right` evaluates the right operand (C evaluates it only when the
        left one does not decide)."""
        ...

    def call(self, name: str, args: list[V]) -> V: ...


class Evaluator(Generic[V, Env]):
    """Walks an expression; the domain computes, the subclass gives names their values."""

    def __init__(self, domain: Domain[V]):
        self.domain = domain

    def value(self, e: ast.Expr, env: Env) -> V:
        domain = self.domain
        match e:
            case ast.IntLit():
                return domain.integer(e.value)
            case ast.FloatLit():
                return domain.floating(e.value)
            case ast.BoolLit():
                return domain.boolean(e.value)
            case ast.Name():
                return self.name(e, env)
            case ast.HwdConst():
                return self.hwd_constant(e, env)
            case ast.Unary():
                return self.operate(e, domain.unary, e.op, self.value(e.operand, env))
            case ast.Binary(op="&&" | "||"):
                right = e.right
                return self.operate(e, domain.logical, e.op, self.value(e.left, env),
                                    lambda: self.value(right, env))
            case ast.Binary():
                left = self.value(e.left, env)
                return self.operate(e, domain.binary, e.op, left, self.value(e.right, env))
            case ast.Call():
                args = [self.value(a, env) for a in e.args]
                return self.operate(e, domain.call, e.func, args)
            case _:
                ast.check_node(e)  # a kind MCPL does not have is a compiler bug, not data
                return self.other(e, env)

    def operate(self, e: ast.Expr, operation: Callable[..., V], *args: Any) -> V:
        """`operation(*args)`, the domain's meaning of `e`; subclasses catch what it raises."""
        return operation(*args)

    def name(self, e: ast.Name, env: Env) -> V:
        raise NotEvaluable(f"'{e.name}' has no value here")

    def hwd_constant(self, e: ast.HwdConst, env: Env) -> V:
        raise NotEvaluable(f"'{'.'.join(e.path)}' has no value here")

    def other(self, e: ast.Expr, env: Env) -> V:
        raise NotEvaluable(f"cannot compute {type(e).__name__} here")


class CValues:
    """MCPL's C semantics: Python ints are `int`, bools `bool`, `np.float32` `float` and
    `np.float64` (or a Python float) `double`; `mcl.mcpl.operators` does the arithmetic
    and raises `OperatorError` where C defines no result."""

    def integer(self, value: int) -> ops.Number:
        return value

    def floating(self, value: float) -> ops.Number:
        import numpy as np  # `mcl check` folds ints and should not load numpy

        return np.float32(value)  # an MCPL float literal is a float, as `0.5f` in C

    def boolean(self, value: bool) -> ops.Number:
        return value

    def unary(self, op: str, operand: ops.Number) -> ops.Number:
        return (not operand) if op == "!" else ops.negate(operand)

    def binary(self, op: str, left: ops.Number, right: ops.Number) -> ops.Number:
        return ops.binary(op, left, right)

    def logical(self, op: str, left: ops.Number, right: Callable[[], ops.Number]) -> ops.Number:
        if op == "&&":
            return bool(left) and bool(right())
        return bool(left) or bool(right())

    def call(self, name: str, args: list[ops.Number]) -> ops.Number:
        builtin = BUILTINS.get(name)
        if builtin is None or builtin.python is None or len(args) != builtin.arity:
            raise NotEvaluable(f"cannot compute {name}(...) here")
        return builtin.python(*args)


class IntValues(CValues):
    """C semantics restricted to `int` values: a float, a call or a comparison has no value
    (the translation's static counts, where only a whole number of units means anything)."""

    def floating(self, value: float) -> ops.Number:
        raise NotEvaluable("not an int")

    def boolean(self, value: bool) -> ops.Number:
        raise NotEvaluable("not an int")

    def unary(self, op: str, operand: ops.Number) -> ops.Number:
        if op != "-":
            raise NotEvaluable("not an int")
        return ops.negate(operand)

    def binary(self, op: str, left: ops.Number, right: ops.Number) -> ops.Number:
        if op not in ops.INT_OPS:
            raise NotEvaluable("not an int")
        return ops.int_binary(op, int(left), int(right))

    def logical(self, op: str, left: ops.Number, right: Callable[[], ops.Number]) -> ops.Number:
        raise NotEvaluable("not an int")

    def call(self, name: str, args: list[ops.Number]) -> ops.Number:
        raise NotEvaluable("not an int")
