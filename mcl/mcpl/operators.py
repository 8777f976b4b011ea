"""MCPL's operator semantics, defined once (docs/mcpl.md §6.1).

Every evaluator of MCPL arithmetic uses this module: the reference interpreter
(`mcl.interp`), host evaluation of sizes and counts (`mcl.codegen.host_eval`) and the
translation's static counts (`mcl.translate.counts`). The OpenCL that code generation emits
computes the same values wherever MCPL defines a value; where C leaves the result
undefined (signed overflow, a shift count outside 0..31, integer division by zero), MCPL
calls it an error, and the evaluators here raise `OperatorError` instead of guessing.

Values: Python ints are MCPL `int` (and `byte`) values, Python bools `bool` values; floating
values are numpy scalars (float32 for `float`, float64 for `double`) in the interpreter and
Python floats (double precision) on the host. The usual arithmetic conversions of C apply:
an operation with a floating operand is a floating operation.
"""

from __future__ import annotations

import math
import operator
import struct
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy is imported where floating point is computed: `mcl check`
    import numpy as np  # folds int constants with this module and should not load numpy

from mcl.mcpl.types import INT_BITS as INT_BITS
from mcl.mcpl.types import INT_MAX as INT_MAX
from mcl.mcpl.types import INT_MIN as INT_MIN


class OperatorError(ArithmeticError):
    """An operation whose result MCPL does not define; evaluators turn it into a
    diagnostic with the operation's position."""


class IntegerDivisionByZero(OperatorError):
    """`/`, `%` or a negative power of zero on integers."""

    def __init__(self) -> None:
        super().__init__("integer division by zero")


class IntegerOverflow(OperatorError):
    """An int result outside the 32-bit range (undefined in C)."""

    def __init__(self, detail: str = "") -> None:
        super().__init__(f"int overflow: {detail or 'the result'} does not fit in 32 bits")


class ShiftOutOfRange(OperatorError):
    """A shift count outside 0..31: undefined in C, so an error rather than a guess."""

    def __init__(self, count: int) -> None:
        super().__init__(f"shift count {count} is outside 0..{INT_BITS - 1}")


class NotOnFloats(OperatorError):
    """`<<`, `>>`, `&`, `|` with a floating operand."""

    def __init__(self, op: str) -> None:
        super().__init__(f"operator '{op}' needs integer operands")


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
    """`a ^ b` on integers. A negative exponent gives 1 / a^|b| truncated toward zero, as
    integer division would: 0 for |a| > 1, ±1 for a = ±1, and division by zero for a = 0
    (the generated `mcl_ipow` returns the same values; it returns 0 for a = 0)."""
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
        raise ShiftOutOfRange(b)
    return a << b


def shift_right(a: int, b: int) -> int:
    if not 0 <= b < INT_BITS:
        raise ShiftOutOfRange(b)
    return a >> b  # arithmetic shift, as C on signed ints with every common compiler


def float_mod(a: np.floating, b: np.floating) -> np.floating:
    import numpy as np

    return np.fmod(a, b)  # C's fmod: the sign of the dividend, like `%` on ints


def float_pow(a: np.floating, b: np.floating) -> np.floating:
    import numpy as np

    return np.power(a, b)  # OpenCL's pow/pown: NaN (not a complex number) for (-8) ^ 0.5


# Arithmetic per operand kind. INT_OPS are unchecked: callers range-check the result
# with `int_result` (the interpreter inlines + - * for speed and checks them itself).
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

COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}

# Compound assignment `x OP= e` means `x = x OP e`.
COMPOUND = {"+=": "+", "-=": "-", "*=": "*", "/=": "/", "%=": "%", "<<=": "<<", ">>=": ">>"}

Number = int | float


def int_result(value: int, what: str = "") -> int:
    """`value` if it fits in a 32-bit int, else `IntegerOverflow`."""
    if INT_MIN <= value <= INT_MAX:
        return value
    raise IntegerOverflow(what)


def int_binary(op: str, a: int, b: int) -> int:
    """`a OP b` on 32-bit ints, range-checked."""
    return int_result(INT_OPS[op](a, b), f"{a} {op} {b}")


def is_floating(value: object) -> bool:
    if isinstance(value, float):
        return True
    numpy = sys.modules.get("numpy")  # a numpy scalar exists only once numpy is loaded
    return numpy is not None and isinstance(value, numpy.floating)


def to_single(value: float) -> float:
    """`value` rounded to the nearest `float` (IEEE single precision), as C converts a
    double or an int to float, without numpy (`mcl check` folds constants with this and
    should not load it): an infinity past the largest float (about 3.4e38). Python's
    `struct` rounds as the C cast does and refuses only a value that rounds to infinity."""
    try:
        rounded: float = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)
    return rounded


def negate(a: Number) -> Number:
    """Unary minus; `-INT_MIN` overflows."""
    if is_floating(a):
        return -a
    return int_result(-int(a), f"-({a})")


def binary(op: str, a: Number, b: Number) -> Number:
    """`a OP b` for evaluators that carry types in their values (host evaluation, static
    counts) rather than in a checked tree: Python ints (and bools, promoted as in C) are
    ints, `np.float32` is float, `np.float64` (or a Python float) is double. The usual
    arithmetic conversions pick the operation: int with float is float, anything with
    double is double. `&&` and `||` are the caller's: they do not evaluate both operands."""
    if op in COMPARISONS:
        return COMPARISONS[op](a, b)
    if not is_floating(a) and not is_floating(b):
        return int_binary(op, int(a), int(b))
    if op not in FLOAT_OPS:
        raise NotOnFloats(op)
    import numpy as np

    single = not isinstance(a, float | np.float64) and not isinstance(b, float | np.float64)
    kind = np.float32 if single else np.float64
    # numpy follows IEEE as C does: x / 0.0 is inf, fmod and pow give NaN where Python's
    # float operations raise or return complex numbers.
    with np.errstate(all="ignore"):
        return FLOAT_OPS[op](kind(a), kind(b))
