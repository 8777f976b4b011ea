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

Spellings: `c` (and `c_int` where C has a separate function for ints) says how code
generation writes a call in OpenCL C, in CUDA and in the host's C++ (docs/codegen.md,
"Built-ins"); `mcl.codegen.c_expr` reads it and only adds the printing (conversions of the
arguments, pointers, precedence). Plain strings, so this layer imports nothing of codegen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from mcl.mcpl import types as T

# Pseudo-calls that only state a library function's access signature (mcpl.md §3).
SIGNATURE_CALLS = {"mcl_builtin_read": "r", "mcl_builtin_write": "w"}


@dataclass(frozen=True)
class CFunction:
    """A call `NAME(arguments)` with NAME `opencl` in OpenCL C kernels, `cuda` in CUDA kernels
    and `host` in the host's C++. NAME is the text before the parenthesised arguments: a
    function, qualified on the host (`std::sqrt`, `std::min<cl_int>`: cl_int makes both
    arguments one type), or a cast of one (`(int)abs`: OpenCL's abs(int) returns uint, MCPL's
    abs an int). `floating`: each argument is converted to float first, as C's math
    functions take floating arguments (an int argument of `sqrt` is ambiguous in OpenCL)."""

    opencl: str
    cuda: str
    host: str
    floating: bool = False


@dataclass(frozen=True)
class CCast:
    """A C cast `(type)x`, the same in every language (MCPL's conversions, mcpl.md §4)."""

    type: str


@dataclass(frozen=True)
class CAtomic:
    """An atomic read-modify-write of the element named by the first argument, written by
    code generation's atomic rule (a pointer to the element; a float in OpenCL 1.x, which
    has no float atomics, a compare-and-swap loop; a private variable a plain update).
    `opencl`: the OpenCL 1.1 function on an int ("" where there is none); `cuda`: CUDA's,
    called with `cuda_operands` after the call's own operands."""

    opencl: str
    cuda: str
    cuda_operands: tuple[str, ...] = ()


@dataclass(frozen=True)
class CRule:
    """Printed by rule `name` of `mcl.codegen.c_expr.C_RULES`: the call is no single
    function in every language (`sincos` stores through a pointer in OpenCL only)."""

    name: str


CSpelling = CFunction | CCast | CAtomic | CRule


def c_math(name: str) -> CFunction:
    """C's math function `name` on floating arguments: `std::name` on the host."""
    return CFunction(name, name, f"std::{name}", floating=True)


@dataclass(frozen=True)
class Builtin:
    """A built-in function: its type rule, its spelling in C, its value on the host."""

    name: str
    modes: tuple[str, ...]  # per argument: "r", "w" or "rw"
    result: Callable[[list[T.VType]], T.VType]
    signature: str  # for hints
    c: CSpelling  # how code generation writes a call
    python: Callable[..., Any] | None = None  # C semantics on host values
    symbolic: Callable[..., Any] | None = None  # on SymPy expressions
    # Non-decreasing in every argument, where defined: the range of the result over boxes
    # of arguments is `python` at the lower and at the upper ends (`IntervalValues`).
    monotone: bool = False
    # The spelling of a call whose arguments are all ints, where C's function differs.
    c_int: CFunction | None = None

    @property
    def arity(self) -> int:
        return len(self.modes)


def _fixed(t: T.VType) -> Callable[[list[T.VType]], T.VType]:
    # a partial, not a lambda: a checked program refers to its builtins, and the tuner
    # pickles it for its worker processes (mcl.tune.model)
    return partial(_always, t)


def _always(t: T.VType, _args: list[T.VType]) -> T.VType:
    return t


def _math1(args: list[T.VType]) -> T.VType:
    return T.floating(args[0])


def _same(args: list[T.VType]) -> T.VType:
    return args[0]


def _promoted(args: list[T.VType]) -> T.VType:
    return T.promote(args[0])


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
    from mcl.mcpl.rounding import trunc

    return trunc(x)


def _identity(x: Any) -> Any:
    return x


def _power(a: Any, b: Any) -> Any:
    return a**b


_MATH1_SYMPY = {"sqrt": "sqrt", "exp": "exp", "log": "log", "sin": "sin", "cos": "cos",
                "fabs": "Abs", "floor": "floor", "ceil": "ceiling"}

_MONOTONE = frozenset({"sqrt", "exp", "log", "floor", "ceil"})

_TABLE = [
    Builtin("toFloat", ("r",), _fixed(T.FLOAT), "float toFloat(number x)", CCast("float"),
            _numpy_scalar("float32"), _identity, monotone=True),
    Builtin("toInt", ("r",), _fixed(T.INT), "int toInt(number x)", CCast("int"), _to_int,
            _sympy_trunc, monotone=True),
    Builtin("toDouble", ("r",), _fixed(T.DOUBLE), "double toDouble(number x)",
            CCast("double"), _numpy_scalar("float64"), _identity, monotone=True),
    *(
        Builtin(name, ("r",), _math1, f"float {name}(number x)", c_math(name),
                _numpy(name), _sympy(sympy_name),  # numpy's names are C's
                monotone=name in _MONOTONE)
        for name, sympy_name in _MATH1_SYMPY.items()
    ),
    Builtin("abs", ("r",), _promoted, "number abs(number x)", c_math("fabs"), abs, _sympy("Abs"),
            c_int=CFunction("(int)abs", "(int)abs", "std::abs")),
    Builtin("min", ("r", "r"), _wider2, "number min(number a, number b)", c_math("fmin"), min,
            _sympy("Min"), monotone=True, c_int=CFunction("min", "min", "std::min<cl_int>")),
    Builtin("max", ("r", "r"), _wider2, "number max(number a, number b)", c_math("fmax"), max,
            _sympy("Max"), monotone=True, c_int=CFunction("max", "max", "std::max<cl_int>")),
    Builtin("pow", ("r", "r"), _pow, "float pow(number x, number y)", c_math("pow"),
            _float_pow, _power),
    # OpenCL's sincos: returns sin(x) and stores cos(x) in its second argument.
    Builtin("sincos", ("r", "w"), _math1, "float sincos(number x, float cosine)",
            CRule("sincos")),
    # Adds `value` to the element `target` atomically; returns the old value (as CUDA).
    Builtin("atomicAdd", ("rw", "r"), _same, "number atomicAdd(number target, number value)",
            CAtomic("atomic_add", "atomicAdd")),
]

BUILTINS: dict[str, Builtin] = {b.name: b for b in _TABLE}
