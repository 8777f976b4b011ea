"""Native implementations of the built-in and standard-library functions (mcpl.md §4).

MCPL library functions have no real body: they state their access signature with
`mcl_builtin_read/write` (mcpl.md §3). The interpreter computes them here, by name.
Which arguments a function writes comes from its MCPL declaration or from the checker's
built-in table (`mcl.mcpl.builtins`), so the two never disagree.

A native receives its arguments already converted to the operation type chosen by the
compiler (`operand_types`) and returns `(result, {argument position: new value})`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mcl.interp.values import computes_as, convert, wider

Result = tuple[object, dict[int, object]]


@dataclass(frozen=True)
class Native:
    """`fn(args) -> (result, writes)`; `typing` maps argument type names to
    (operand types, result type)."""

    fn: Callable[[list], Result]
    typing: Callable[[list[str]], tuple[list[str | None], str]]


def _floating(t: str) -> str:
    return "double" if t == "double" else "float"


def _math1_typing(ts: list[str]) -> tuple[list[str | None], str]:
    kind = _floating(ts[0])
    return [kind], kind


def _same_typing(ts: list[str]) -> tuple[list[str | None], str]:
    kind = computes_as(ts[0])
    return [kind], kind


def _wider2_typing(ts: list[str]) -> tuple[list[str | None], str]:
    kind = wider(ts[0], ts[1])
    return [kind, kind], kind


def _pow_typing(ts: list[str]) -> tuple[list[str | None], str]:
    kind = _floating(wider(ts[0], ts[1]))
    return [kind, kind], kind


def _fixed(result: str) -> Callable[[list[str]], tuple[list[str | None], str]]:
    return lambda ts: ([None] * len(ts), result)


def _atomic_typing(ts: list[str]) -> tuple[list[str | None], str]:
    # Operands are converted to the target's type; the result is the target's old value.
    return [None] + [ts[0]] * (len(ts) - 1), ts[0]


def _sincos_typing(ts: list[str]) -> tuple[list[str | None], str]:
    kind = _floating(ts[0])
    return [kind, None], kind


def _pure(f: Callable[..., object]) -> Callable[[list], Result]:
    return lambda args: (f(*args), {})


def _to_int(x: object) -> int:
    return convert(x, "int")  # type: ignore[return-value]  # truncates toward zero, as C's (int)x


def _sincos(args: list) -> Result:
    x = args[0]
    return np.sin(x), {1: np.cos(x)}


def _atomic(update: Callable[..., object]) -> Callable[[list], Result]:
    # Units of a group run one after another between barriers, so a read-modify-write is
    # indivisible here by construction; the old value is returned as CUDA/OpenCL do.
    return lambda args: (args[0], {0: update(*args)})


def _cas(target: object, expected: object, value: object) -> object:
    return value if target == expected else target


def _fma(a: np.floating, b: np.floating, c: np.floating) -> np.floating:
    # The product of two float32s is exact in float64, so one rounding at the end (almost
    # always) gives the fused result.
    return type(a)(np.float64(a) * np.float64(b) + np.float64(c))


def _erf(x: np.floating) -> np.floating:
    return type(x)(math.erf(float(x)))


def _math(function: Callable[..., object]) -> Native:
    return Native(_pure(function), _math1_typing)


NATIVES: dict[str, Native] = {
    "toFloat": Native(_pure(lambda x: convert(x, "float")), _fixed("float")),
    "toInt": Native(_pure(_to_int), _fixed("int")),
    "toDouble": Native(_pure(lambda x: convert(x, "double")), _fixed("double")),
    "sqrt": _math(np.sqrt),
    "exp": _math(np.exp),
    "log": _math(np.log),
    "sin": _math(np.sin),
    "cos": _math(np.cos),
    "tan": _math(np.tan),
    "asin": _math(np.arcsin),
    "acos": _math(np.arccos),
    "atan": _math(np.arctan),
    "sinh": _math(np.sinh),
    "cosh": _math(np.cosh),
    "tanh": _math(np.tanh),
    "exp2": _math(np.exp2),
    "log2": _math(np.log2),
    "log10": _math(np.log10),
    "fabs": _math(np.fabs),
    "floor": _math(np.floor),
    "ceil": _math(np.ceil),
    "round": _math(np.round),
    "trunc": _math(np.trunc),
    "rsqrt": Native(_pure(lambda x: 1 / np.sqrt(x)), _math1_typing),
    "abs": Native(_pure(abs), _same_typing),
    "min": Native(_pure(min), _wider2_typing),
    "max": Native(_pure(max), _wider2_typing),
    "fmin": Native(_pure(np.fmin), _pow_typing),
    "fmax": Native(_pure(np.fmax), _pow_typing),
    "pow": Native(_pure(np.power), _pow_typing),
    "sincos": Native(_sincos, _sincos_typing),
    "atomicAdd": Native(_atomic(lambda a, b: a + b), _atomic_typing),
    "atomicSub": Native(_atomic(lambda a, b: a - b), _atomic_typing),
    "atomicMin": Native(_atomic(min), _atomic_typing),
    "atomicMax": Native(_atomic(max), _atomic_typing),
    "atomicExch": Native(_atomic(lambda _a, b: b), _atomic_typing),
    "atomicInc": Native(_atomic(lambda a: a + 1), _atomic_typing),
    "atomicDec": Native(_atomic(lambda a: a - 1), _atomic_typing),
    "atomicCAS": Native(_atomic(_cas), _atomic_typing),
    "atomicAnd": Native(_atomic(lambda a, b: a & b), _atomic_typing),
    "atomicOr": Native(_atomic(lambda a, b: a | b), _atomic_typing),
    "atomicXor": Native(_atomic(lambda a, b: a ^ b), _atomic_typing),
    "atomicAddFloat": Native(_atomic(lambda a, b: a + b), _atomic_typing),
    "atan2": Native(_pure(np.arctan2), _pow_typing),
    "fmod": Native(_pure(np.fmod), _pow_typing),
    "fma": Native(_pure(_fma), lambda ts: ([_floating(ts[0])] * 3, _floating(ts[0]))),
    "erf": Native(_pure(_erf), _math1_typing),
}
