"""Integer intervals of MCPL index expressions: the smallest and largest value an
expression can take when every variable ranges over an interval.

Splitting a kernel across devices (`mcl.multi.split`) needs, per range of blocks, the
rows of each array the range may touch. The bounds come from interval arithmetic with C's
operators (`mcl.mcpl.constfold`, MCPL's one definition of them), evaluated at the corners
of the operands' intervals; conditions around an access are not used, so a bound is
never smaller than the truth (a range may be given a row it does not read, never miss
one). What has no integer interval (floats, data read from arrays, calls other than
min/max) is None: unknown.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mcl.mcpl import ast
from mcl.mcpl.constfold import FoldError, fold_binary


@dataclass(frozen=True)
class Interval:
    lo: int
    hi: int

    @staticmethod
    def point(value: int) -> Interval:
        return Interval(value, value)

    @property
    def is_point(self) -> bool:
        return self.lo == self.hi

    def clip(self, lo: int, hi: int) -> Interval | None:
        """The part inside [lo, hi]; None when nothing is."""
        low, high = max(self.lo, lo), min(self.hi, hi)
        return Interval(low, high) if low <= high else None


Env = Mapping[str, "Interval | None"]


def interval_of(e: ast.Expr | None, env: Env) -> Interval | None:
    """The interval of integer expression `e` when its names range over `env`."""
    try:
        return _interval(e, env)
    except (FoldError, RecursionError, TypeError, ZeroDivisionError):
        return None


def _interval(e: ast.Expr | None, env: Env) -> Interval | None:
    match e:
        case ast.IntLit(value=value) if not isinstance(value, bool):
            return Interval.point(value)
        case ast.Name(name=name):
            return env.get(name)
        case ast.Unary(op="-", operand=operand):
            inner = _interval(operand, env)
            return Interval(-inner.hi, -inner.lo) if inner is not None else None
        case ast.Binary(op=op, left=left, right=right) if op in ("+", "-", "*", "/", "%"):
            a, b = _interval(left, env), _interval(right, env)
            if a is None or b is None:
                return None
            if op == "%":
                return _remainder(a, b)
            if op == "/" and b.lo <= 0 <= b.hi:
                return None  # a divisor that may be zero: no bound
            return _corners(op, a, b)
        case ast.Call(func=("min" | "max") as func, args=(first, second)):
            a, b = _interval(first, env), _interval(second, env)
            if a is None or b is None:
                return None
            pick = min if func == "min" else max
            return Interval(pick(a.lo, b.lo), pick(a.hi, b.hi))
    return None


def _corners(op: str, a: Interval, b: Interval) -> Interval | None:
    """`a op b` for +, -, * and / (a divisor of one sign): each is monotone in each operand
    on such intervals, so the extremes are at the corners (and, for C's division that
    rounds towards zero, at a zero numerator)."""
    lefts = {a.lo, a.hi} | ({0} if a.lo <= 0 <= a.hi else set())
    values = [fold_binary(op, x, y) for x in lefts for y in (b.lo, b.hi)]
    ints = [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
    if len(ints) != len(values):
        return None
    return Interval(min(ints), max(ints))


def _remainder(a: Interval, b: Interval) -> Interval | None:
    """C's `a % b` for a divisor of one sign: the sign of the numerator, smaller than the
    divisor in size, and never larger in size than the numerator."""
    if b.lo <= 0 <= b.hi:
        return None
    if a.is_point and b.is_point:
        return _corners("%", a, b)
    limit = max(abs(b.lo), abs(b.hi)) - 1
    if a.lo >= 0:
        return Interval(0, min(a.hi, limit))
    if a.hi <= 0:
        return Interval(max(a.lo, -limit), 0)
    return Interval(max(a.lo, -limit), min(a.hi, limit))
