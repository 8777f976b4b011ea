"""MCPL's operators on ranges of values: the interval domain of `mcl.mcpl.evaluate`.

An `Interval(lo, hi, kind)` holds every value an expression can take where MCPL defines
one (docs/mcpl.md §6.1) when each name lies in its own interval: C's truncating `/` and
`%`, a negative integer power, arithmetic shifts. An operation that is undefined for every
value in its operands' ranges (a division by the interval [0, 0]) has no interval, and
neither has one whose range this domain does not bound (a built-in that is not monotone).
Floating ranges are widened by more than a float's rounding at every operation, so the
value float32 arithmetic computes lies inside too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from mcl.mcpl import operators as ops
from mcl.mcpl.builtins import BUILTINS
from mcl.mcpl.evaluate import CValues, NotEvaluable

# More than float32's relative rounding (2^-24) at each operation, and an absolute margin
# for results near 0 whose operands were rounded.
_RELATIVE_SLACK = 1e-6
_ABSOLUTE_SLACK = 1e-30
_LARGEST_EXPONENT = 64  # past it an int power has no value in 32 bits for |a| > 1


@dataclass(frozen=True)
class Interval:
    """Values from lo to hi inclusive; kind "int", "float" or "bool" (lo, hi in 0..1)."""

    lo: Any
    hi: Any
    kind: str = "int"

    def __contains__(self, value: object) -> bool:
        return bool(self.lo <= value <= self.hi)

    @property
    def point(self) -> bool:
        return bool(self.lo == self.hi)


def _hull(values: Iterable[Any], kind: str) -> Interval:
    found = list(values)
    if kind != "float":
        return Interval(min(found), max(found), kind)
    numbers = [float(v) for v in found]
    if any(math.isnan(v) for v in numbers):
        return Interval(-math.inf, math.inf, "float")
    lo, hi = min(numbers), max(numbers)
    return Interval(lo - abs(lo) * _RELATIVE_SLACK - _ABSOLUTE_SLACK,
                    hi + abs(hi) * _RELATIVE_SLACK + _ABSOLUTE_SLACK, "float")


def _corners(f: Callable[[Any, Any], Any], a: Interval, b: Interval, kind: str) -> Interval:
    """The range of f over the box a x b, for f monotone in each argument when the other
    is fixed (the direction may depend on it): the extremes lie at the corners."""
    return _hull((f(x, y) for x in (a.lo, a.hi) for y in (b.lo, b.hi)), kind)


def _union(parts: list[Interval]) -> Interval:
    if not parts:
        raise NotEvaluable("no value is defined")
    return Interval(min(p.lo for p in parts), max(p.hi for p in parts), parts[0].kind)


def _nonzero_parts(b: Interval) -> list[Interval]:
    """b without 0, as its negative and its positive part (an int divisor)."""
    parts = []
    if b.lo <= -1:
        parts.append(Interval(b.lo, min(b.hi, -1)))
    if b.hi >= 1:
        parts.append(Interval(max(b.lo, 1), b.hi))
    return parts


def _quotient(a: Interval, b: Interval) -> Interval:
    # For a fixed divisor trunc(a / b) is monotone in a, and for a fixed a in b on each
    # side of 0.
    return _union([_corners(ops.c_div, a, part, "int") for part in _nonzero_parts(b)])


def _remainder(a: Interval, b: Interval, kind: str) -> Interval:
    """|a % b| < |b| and a % b has the sign of a (C's remainder, and fmod)."""
    largest = max(abs(b.lo), abs(b.hi))
    if largest == 0:
        raise NotEvaluable("remainder by zero")
    bound = largest - 1 if kind == "int" else largest
    lo = 0 if a.lo >= 0 else max(a.lo, -bound)
    hi = 0 if a.hi <= 0 else min(a.hi, bound)
    return Interval(lo, hi, kind) if kind == "int" else _hull((lo, hi), kind)


def _int_power(a: Interval, b: Interval) -> Interval:
    parts = []
    if b.lo < 0:  # 1 / a^|b| truncated: -1, 0 or 1
        parts.append(Interval(-1, 1))
    if b.hi >= 0:
        low = max(b.lo, 0)
        if b.hi > _LARGEST_EXPONENT and max(abs(a.lo), abs(a.hi)) > 1:
            raise NotEvaluable("an unbounded power")
        if a.lo >= 0:  # monotone in each argument for a >= 0, b >= 0
            parts.append(_corners(ops.int_pow, a, Interval(low, b.hi), "int"))
        else:
            largest = max(abs(a.lo), abs(a.hi), 1) ** b.hi
            parts.append(Interval(-largest, largest))
    return _union(parts)


def _shift(op: str, a: Interval, b: Interval) -> Interval:
    counts = Interval(max(b.lo, 0), min(b.hi, ops.INT_BITS - 1))  # others are undefined
    if counts.lo > counts.hi:
        raise NotEvaluable(f"shift count outside 0..{ops.INT_BITS - 1}")
    return _corners(ops.INT_OPS[op], a, counts, "int")


def _bits(op: str, a: Interval, b: Interval) -> Interval:
    if a.lo >= 0 and b.lo >= 0:
        if op == "&":
            return Interval(0, min(a.hi, b.hi))
        return Interval(max(a.lo, b.lo), (1 << max(a.hi, b.hi).bit_length()) - 1)
    if op == "&" and (a.lo >= 0 or b.lo >= 0):  # masking with a non-negative value
        return Interval(0, a.hi if a.lo >= 0 else b.hi)
    return Interval(ops.INT_MIN, ops.INT_MAX)


def _float_arithmetic(op: str, a: Interval, b: Interval) -> Interval:
    if op == "/" and b.lo <= 0 <= b.hi:
        return Interval(-math.inf, math.inf, "float")  # x / 0.0 is an infinity
    if op == "%":
        return _remainder(a, b, "float")
    if op == "^":
        if a.lo <= 0:  # a negative base with a fractional exponent is NaN; 0 ^ -1 inf
            return Interval(-math.inf, math.inf, "float")
        return _corners(_pow, a, b, "float")
    with_inf = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": _times, "/": _over}
    return _corners(with_inf[op], a, b, "float")


def _pow(x: float, y: float) -> float:
    try:
        return math.pow(x, y)
    except OverflowError:
        return math.inf


def _times(x: float, y: float) -> float:
    return 0.0 if x == 0 or y == 0 else x * y  # 0 * inf is 0 for a range's end


def _over(x: float, y: float) -> float:
    return x / y if math.isfinite(y) else 0.0 if math.isfinite(x) else math.nan


def _outcomes(op: str, a: Interval, b: Interval) -> tuple[bool, bool]:
    """(can it be true, can it be false) for `a op b`."""
    if op in (">", ">="):
        return _outcomes("<" if op == ">" else "<=", b, a)
    if op == "<":
        return a.lo < b.hi, a.hi >= b.lo
    if op == "<=":
        return a.lo <= b.hi, a.hi > b.lo
    overlap = a.lo <= b.hi and b.lo <= a.hi
    same_point = a.point and b.point and a.lo == b.lo
    if op == "==":
        return overlap, not same_point
    return not same_point, overlap  # "!="


class IntervalValues:
    """Ranges of MCPL values. Where every operand is a single value the result is C's
    (`CValues`), so constants come out exact."""

    _exact = CValues()

    def integer(self, value: int) -> Interval:
        return Interval(value, value)

    def floating(self, value: float) -> Interval:
        return Interval(value, value, "float")

    def boolean(self, value: bool) -> Interval:
        return Interval(int(value), int(value), "bool")

    def unary(self, op: str, operand: Interval) -> Interval:
        if op == "!":
            return Interval(1 - operand.hi, 1 - operand.lo, "bool")
        return Interval(-operand.hi, -operand.lo, operand.kind)

    def binary(self, op: str, a: Interval, b: Interval) -> Interval:
        try:
            return self._binary(op, a, b)
        except ops.OperatorError as exc:  # undefined somewhere in the box: no range given
            raise NotEvaluable(str(exc)) from None

    def _binary(self, op: str, a: Interval, b: Interval) -> Interval:
        if op in ops.COMPARISONS:
            true, false = _outcomes(op, a, b)
            return Interval(0 if false else 1, 1 if true else 0, "bool")
        if a.kind == "float" or b.kind == "float":
            if op not in ops.FLOAT_OPS:
                raise NotEvaluable(f"'{op}' of floating values")
            return _float_arithmetic(op, a, b)
        if a.point and b.point:
            return self.integer(int(self._exact.binary(op, a.lo, b.lo)))
        if op in ("+", "-", "*"):
            return _corners(ops.INT_OPS[op], a, b, "int")
        if op == "/":
            return _quotient(a, b)
        if op == "%":
            return _remainder(a, b, "int")
        if op == "^":
            return _int_power(a, b)
        if op in ("<<", ">>"):
            return _shift(op, a, b)
        return _bits(op, a, b)

    def logical(self, op: str, left: Interval, right: Callable[[], Interval]) -> Interval:
        decided = 0 if op == "&&" else 1
        if left.point and left.lo == decided:  # C does not evaluate the right operand
            return left
        r = right()
        if op == "&&":
            return Interval(left.lo & r.lo, left.hi & r.hi, "bool")
        return Interval(left.lo | r.lo, left.hi | r.hi, "bool")

    def call(self, name: str, args: list[Interval]) -> Interval:
        builtin = BUILTINS.get(name)
        if builtin is None or not builtin.monotone or builtin.python is None \
                or len(args) != builtin.arity:
            raise NotEvaluable(f"no range for {name}(...)")
        import numpy as np

        try:
            with np.errstate(all="ignore"):
                ends = [builtin.python(*(a.lo for a in args)),
                        builtin.python(*(a.hi for a in args))]
        except (ops.OperatorError, ValueError, OverflowError) as exc:
            raise NotEvaluable(str(exc)) from None
        if ops.is_floating(ends[0]) or ops.is_floating(ends[1]):
            if any(math.isnan(float(v)) for v in ends):
                raise NotEvaluable(f"{name}(...) is not a number at the range's end")
            return _hull(ends, "float")
        return Interval(int(ends[0]), int(ends[1]))
