"""Folding constant MCPL expressions with C semantics, for the checker's diagnostics.

The checker folds what it can while it types an expression (bottom-up, so the cost stays
linear in the size of the tree) to reject what OpenCL C would get wrong silently:
division by a constant zero (`1 / 0`, `i % (0 * n)`), an `int` result that needs more
than 32 bits (`10 ^ 100000`, `2^2^2^2^2^2`; signed overflow is undefined in C) and a
floating-point constant that overflows to infinity. The operators themselves are MCPL's
one definition (`mcl.mcpl.operators`), so the checker and `mcl run` agree on what
`-7 / 2` or `2 ^ 31` mean.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeGuard

from mcl.mcpl import ast
from mcl.mcpl import types as T
from mcl.mcpl.evaluate import Evaluator
from mcl.mcpl.operators import (
    FLOAT_OPS,
    IntegerDivisionByZero,
    IntegerOverflow,
    int_binary,
    int_result,
    to_single,
)

Constant = int | float
Lookup = Callable[[str], "Constant | None"]


@dataclass
class FoldError(Exception):
    """A constant expression that has no value in C (the checker reports it)."""

    code: str
    message: str
    hint: str | None = None


def _is_int(v: object) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def fold_unary(op: str, value: Constant | None) -> Constant | None:
    if op != "-" or value is None:
        return None
    if _is_int(value):
        try:
            return int_result(-value)
        except IntegerOverflow:
            raise _overflow("-") from None
    return Double(-value) if isinstance(value, Double) else -value


def fold_binary(op: str, left: Constant | None, right: Constant | None) -> Constant | None:
    """The value of `left op right` when it is a constant, else None. Raises FoldError for
    a division by zero and for results no C type holds. A product with a constant integer
    zero is zero whatever the other operand is (`0 * n`), and so is a quotient of zero
    (`0 / n`), so `i % (0 * n)` and `100 % (0 / n)` are caught."""
    if op == "*" and (left == 0 and _is_int(left) or right == 0 and _is_int(right)):
        return 0 if (left is None or _is_int(left)) and (right is None or _is_int(right)) else None
    if op in ("/", "%") and _is_int(right) and right == 0 and (left is None or _is_int(left)):
        raise FoldError(
            "mcpl-division-by-zero",
            f"integer {'division' if op == '/' else 'remainder'} by zero",
            "the divisor is always 0 here; C leaves the result undefined",
        )
    if op in ("/", "%") and left == 0 and _is_int(left) and right is None:
        return 0  # `0 / n` is 0 for every n but 0, which is a division by zero anyway
    if left is None or right is None or op not in ("+", "-", "*", "/", "%", "^"):
        return None  # shifts and bit operations wrap in practice; their counts are checked
    if _is_int(left) and _is_int(right):
        try:
            return int_binary(op, left, right)
        except IntegerDivisionByZero:  # `0 ^ -1`: a negative power of zero
            raise FoldError(
                "mcpl-division-by-zero", "a negative power of zero divides by zero"
            ) from None
        except IntegerOverflow:
            raise _overflow(op) from None
    return _fold_float(op, left, right)


class Double(float):
    """The value of a `double` constant. A plain Python float is a `float`: every MCPL
    float literal is one (docs/mcpl.md §6.1), and so is every constant declared `float`."""


def _fold_float(op: str, left: Constant, right: Constant) -> float | None:
    """`left op right` with a floating operand, in the precision C computes it in (the
    usual arithmetic conversions: double if either operand is a `Double`, else float),
    so the constant is what the device computes: `1e20 * 1e20` overflows a float. The
    operations are the operators' (`FLOAT_OPS`) on Python floats and `^` Python's power
    (numpy's, which the interpreter uses, would load numpy in `mcl check`); for a float
    the result is rounded to single precision: + - * / of two floats computed in double
    and rounded so give the float operation's own result (a double has more than twice a
    float's precision)."""
    if op not in ("+", "-", "*", "/", "^"):
        return None  # `%` is defined on integers only
    double = isinstance(left, Double) or isinstance(right, Double)
    exact = Double if double else to_single
    a, b = exact(float(left)), exact(float(right))
    if math.isinf(a) or math.isinf(b):
        raise _float_overflow(double)  # a literal past the largest float
    try:
        value = a**b if op == "^" else FLOAT_OPS[op](a, b)
    except ZeroDivisionError:
        return None  # IEEE: x / 0.0 is an infinity or NaN, which C allows
    except OverflowError:
        raise _float_overflow(double) from None
    if isinstance(value, complex):  # a negative base and a fractional exponent: NaN in C
        raise _not_a_number()
    value = exact(value)
    if math.isinf(value):
        raise _float_overflow(double)
    return value


def _overflow(op: str) -> FoldError:
    what = "power" if op == "^" else "result"
    return FoldError(
        "mcpl-int-overflow",
        f"this constant {what} does not fit in a 32-bit int ({T.INT_MIN} .. {T.INT_MAX})",
        "signed overflow is undefined in C; use float operands (2.0 ^ 40.0) if a large "
        "value is meant",
    )


def _float_overflow(double: bool) -> FoldError:
    largest = "double is about 1.8e308" if double else "float is about 3.4e38"
    return FoldError(
        "mcpl-float-range",
        f"this constant overflows to infinity in {'double' if double else 'float'} "
        "arithmetic",
        f"use a smaller value; the largest {largest}",
    )


def _not_a_number() -> FoldError:
    return FoldError(
        "mcpl-float-range",
        "this constant is not a number (NaN): a negative base to a fractional power",
        "pow of a negative base is defined for whole exponents only",
    )


def stored(value: Constant, declared: T.VType) -> Constant | None:
    """`value` as a constant declared `declared` holds it: a `float` rounded to single
    precision (None when it cannot hold it: past about 3.4e38), a `double` marked as one."""
    if declared == T.FLOAT:
        single = to_single(float(value))
        return None if math.isinf(single) else single
    if declared == T.Scalar("double"):
        return Double(value)
    return value


class FoldValues:
    """The domain of constant folding (`mcl.mcpl.evaluate`): a number, or None for a value
    that is not a constant; `fold_unary` and `fold_binary` are its operators."""

    def integer(self, value: int) -> Constant | None:
        return value

    def floating(self, value: float) -> Constant | None:
        return value

    def boolean(self, value: bool) -> Constant | None:
        return None

    def unary(self, op: str, operand: Constant | None) -> Constant | None:
        return fold_unary(op, operand)

    def binary(self, op: str, left: Constant | None, right: Constant | None) -> Constant | None:
        return fold_binary(op, left, right)

    def logical(self, op: str, left: Constant | None,
                right: Callable[[], Constant | None]) -> Constant | None:
        return None

    def call(self, name: str, args: list[Constant | None]) -> Constant | None:
        return None


class _Folding(Evaluator["Constant | None", Lookup]):
    def name(self, e: ast.Name, env: Lookup) -> Constant | None:
        return env(e.name)

    def hwd_constant(self, e: ast.HwdConst, env: Lookup) -> Constant | None:
        return None

    def other(self, e: ast.Expr, env: Lookup) -> Constant | None:
        return None


_FOLDING = _Folding(FoldValues())


def fold(e: ast.Expr, lookup: Lookup) -> Constant | None:
    """The value of `e` when it is a constant, with `lookup` giving the values of names
    (None: not a constant). Raises FoldError as `fold_binary` does."""
    return _FOLDING.value(e, lookup)
