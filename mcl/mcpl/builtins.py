"""Signatures of the built-in functions available everywhere (mcpl.md §4).

A signature gives the number of arguments, how each argument is accessed (for the paper's
read/write inference, section 4.3: `atomicAdd` writes its first argument) and the result
type as a function of the argument types. A function of the same name defined in, or
imported into, a module takes precedence (the standard library may define them in MCPL with
`mcl_builtin_read/write` signatures).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mcl.mcpl import types as T

# Pseudo-calls that only state a library function's access signature (mcpl.md §3).
SIGNATURE_CALLS = {"mcl_builtin_read": "r", "mcl_builtin_write": "w"}


@dataclass(frozen=True)
class Builtin:
    name: str
    modes: tuple[str, ...]  # per argument: "r", "w" or "rw"
    result: Callable[[list[T.VType]], T.VType]
    signature: str  # for hints

    @property
    def arity(self) -> int:
        return len(self.modes)


def _fixed(t: T.VType) -> Callable[[list[T.VType]], T.VType]:
    return lambda _args: t


def _math1(args: list[T.VType]) -> T.VType:
    return T.floating(args[0])


def _same(args: list[T.VType]) -> T.VType:
    return args[0]


def _wider2(args: list[T.VType]) -> T.VType:
    return T.wider(args[0], args[1])


def _pow(args: list[T.VType]) -> T.VType:
    return T.floating(T.wider(args[0], args[1]))


_TABLE = [
    Builtin("toFloat", ("r",), _fixed(T.FLOAT), "float toFloat(number x)"),
    Builtin("toInt", ("r",), _fixed(T.INT), "int toInt(number x)"),
    Builtin("toDouble", ("r",), _fixed(T.DOUBLE), "double toDouble(number x)"),
    *(
        Builtin(name, ("r",), _math1, f"float {name}(number x)")
        for name in ("sqrt", "exp", "log", "sin", "cos", "fabs", "floor", "ceil")
    ),
    Builtin("abs", ("r",), _same, "number abs(number x)"),
    Builtin("min", ("r", "r"), _wider2, "number min(number a, number b)"),
    Builtin("max", ("r", "r"), _wider2, "number max(number a, number b)"),
    Builtin("pow", ("r", "r"), _pow, "float pow(number x, number y)"),
    # OpenCL's sincos: returns sin(x) and stores cos(x) in its second argument.
    Builtin("sincos", ("r", "w"), _math1, "float sincos(number x, float cosine)"),
    # Adds `value` to the element `target` atomically; returns the old value (as CUDA).
    Builtin("atomicAdd", ("rw", "r"), _same, "number atomicAdd(number target, number value)"),
]

BUILTINS: dict[str, Builtin] = {b.name: b for b in _TABLE}
