"""The built-in functions available everywhere (mcpl.md §4): one table of their signatures
and their values.

A signature gives the number of arguments, how each argument is accessed (for the paper's
read/write inference, section 4.3: `atomicAdd` writes its first argument) and the result
type as a function of the argument types. A function of the same name defined in, or
imported into, a module takes precedence (the standard library may define them in MCPL with
`mcl_builtin_read/write` signatures).

Values: `python` computes the function with C's semantics on the host's values
(`mcl.mcpl.evaluate.CValues`: ints, and numpy floats keeping C's precision), `symbolic` on
SymPy expressions (`mcl.mcpl.symbolic_values.SymPyValues`). Both import numpy or SymPy
only when called: `mcl check` loads neither for a kernel that needs neither.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcl.mcpl import types as T

# Pseudo-calls that only state a library function's access signature (mcpl.md §3).
SIGNATURE_CALLS = {"mcl_builtin_read": "r", "mcl_builtin_write": "w"}


@dataclass(frozen=True)
class Builtin:
    name: str
    modes: tuple[str, ...]  # per argument: "r", "w" or "rw"
    result: Callable[[list[T.VType]], T.VType]
    signature: str  # for hints
    python: Callable[..., Any] | None = None  # C semantics on host values
    symbolic: Callable[..., Any] | None = None  # on SymPy expressions
    # Non-decreasing in every argument, where defined: the range of the result over boxes
    # of arguments is `python` at the lower and at the upper ends (`IntervalValues`).
    monotone: bool = False

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


def _floating(x: Any) -> Any:
    # C converts an int argument of a math function to double.
    from mcl.mcpl.operators import is_floating

    if is_floating(x):
        return x
    import numpy as np

    return np.float64(x)


def _numpy(name: str) -> Callable[..., Any]:
    """numpy's `name` on floating arguments: a float (np.float32) argument keeps C's float
    precision, an int one is converted to double."""

    def apply(*args: Any) -> Any:
        import numpy as np

        return getattr(np, name)(*(_floating(a) for a in args))

    return apply


def _numpy_scalar(name: str) -> Callable[[Any], Any]:
    def convert(x: Any) -> Any:
        import numpy as np

        return getattr(np, name)(x)

    return convert


def _to_int(x: Any) -> int:
    # C's cast truncates toward zero; a value outside the int range has no defined result.
    from mcl.mcpl.operators import int_result

    return int_result(int(x), f"toInt({x})")


def _float_pow(a: Any, b: Any) -> Any:
    from mcl.mcpl.operators import binary

    return binary("^", _floating(a), _floating(b))


def _sympy(name: str) -> Callable[..., Any]:
    def apply(*args: Any) -> Any:
        import sympy

        return getattr(sympy, name)(*args)

    return apply


def _sympy_trunc(x: Any) -> Any:
    from mcl.mcpl.symbolic_values import trunc

    return trunc(x)


def _identity(x: Any) -> Any:
    return x


def _power(a: Any, b: Any) -> Any:
    return a**b


_MATH1_SYMPY = {"sqrt": "sqrt", "exp": "exp", "log": "log", "sin": "sin", "cos": "cos",
                "fabs": "Abs", "floor": "floor", "ceil": "ceiling"}

_MONOTONE = frozenset({"sqrt", "exp", "log", "floor", "ceil"})

_TABLE = [
    Builtin("toFloat", ("r",), _fixed(T.FLOAT), "float toFloat(number x)",
            _numpy_scalar("float32"), _identity, monotone=True),
    Builtin("toInt", ("r",), _fixed(T.INT), "int toInt(number x)", _to_int, _sympy_trunc,
            monotone=True),
    Builtin("toDouble", ("r",), _fixed(T.DOUBLE), "double toDouble(number x)",
            _numpy_scalar("float64"), _identity, monotone=True),
    *(
        Builtin(name, ("r",), _math1, f"float {name}(number x)",
                _numpy(name), _sympy(sympy_name),  # numpy's names are C's
                monotone=name in _MONOTONE)
        for name, sympy_name in _MATH1_SYMPY.items()
    ),
    Builtin("abs", ("r",), _same, "number abs(number x)", abs, _sympy("Abs")),
    Builtin("min", ("r", "r"), _wider2, "number min(number a, number b)", min, _sympy("Min"),
            monotone=True),
    Builtin("max", ("r", "r"), _wider2, "number max(number a, number b)", max, _sympy("Max"),
            monotone=True),
    Builtin("pow", ("r", "r"), _pow, "float pow(number x, number y)", _float_pow, _power),
    # OpenCL's sincos: returns sin(x) and stores cos(x) in its second argument.
    Builtin("sincos", ("r", "w"), _math1, "float sincos(number x, float cosine)"),
    # Adds `value` to the element `target` atomically; returns the old value (as CUDA).
    Builtin("atomicAdd", ("rw", "r"), _same, "number atomicAdd(number target, number value)"),
]

BUILTINS: dict[str, Builtin] = {b.name: b for b in _TABLE}
