"""MCPL's operators on interpreter values, with C semantics (mcpl.md §4).

The compiler has already converted both operands to the operation's type (C's usual
arithmetic conversions), so each function here works on one kind of value: Python ints for
integer arithmetic, numpy float32/float64 scalars for floating point.
"""

from __future__ import annotations

import operator
from collections.abc import Callable

import numpy as np

# The interpreter's modules read the int range from here (`ops.INT_MAX`).
from mcl.mcpl.types import INT_BITS
from mcl.mcpl.types import INT_MAX as INT_MAX
from mcl.mcpl.types import INT_MIN as INT_MIN


class IntegerDivisionByZero(Exception):
    """Raised by `/` and `%` on integers; the compiler turns it into a diagnostic."""


class IntegerOverflow(Exception):
    """An int result that is known to need more than 32 bits without computing it."""


class ShiftOutOfRange(Exception):
    """A shift count outside 0..31: undefined in C, so an error rather than a guess."""


def c_div(a: int, b: int) -> int:
    """C integer division: truncates toward zero (Python's // floors)."""
    if b == 0:
        raise IntegerDivisionByZero
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def c_mod(a: int, b: int) -> int:
    """C remainder: has the sign of the dividend, so a == (a / b) * b + a % b."""
    if b == 0:
        raise IntegerDivisionByZero
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def int_pow(a: int, b: int) -> int:
    """`a ^ b` on integers; a negative exponent truncates toward zero like C's (int)pow."""
    if b >= 0:
        if abs(a) > 1 and b >= INT_BITS:
            raise IntegerOverflow  # computing a ** 10**9 only to reject it would take minutes
        return a**b
    if a == 0:
        raise IntegerDivisionByZero
    if abs(a) == 1:  # 1 / (±1)^|b| is ±1; every other base truncates to 0
        return 1 if a == 1 or b % 2 == 0 else -1
    return 0


def shift_left(a: int, b: int) -> int:
    if not 0 <= b < INT_BITS:
        raise ShiftOutOfRange
    return a << b


def shift_right(a: int, b: int) -> int:
    if not 0 <= b < INT_BITS:
        raise ShiftOutOfRange
    return a >> b  # arithmetic shift, as C on signed ints with every common compiler


def float_mod(a: np.floating, b: np.floating) -> np.floating:
    return np.fmod(a, b)


def float_pow(a: np.floating, b: np.floating) -> np.floating:
    return np.power(a, b)


# Arithmetic per operand kind ("int" or "float"/"double", the latter share numpy's rules).
INT_OPS: dict[str, Callable[[int, int], int]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": c_div,
    "%": c_mod,
    "^": int_pow,
    "<<": shift_left,
    ">>": shift_right,
    "&": operator.and_,
    "|": operator.or_,
}

FLOAT_OPS: dict[str, Callable] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "%": float_mod,
    "^": float_pow,
}

COMPARISONS: dict[str, Callable[[object, object], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}

# Compound assignment `x OP= e` means `x = x OP e`.
COMPOUND = {"+=": "+", "-=": "-", "*=": "*", "/=": "/", "%=": "%", "<<=": "<<", ">>=": ">>"}
