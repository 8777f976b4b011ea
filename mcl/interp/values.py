"""How MCPL values live in the interpreter.

- `int`, `byte`: Python `int` (C truncating division and remainder are implemented by the
  operators in `mcl.mcpl.operators`); `bool`: Python `bool`.
- `float`: `numpy.float32` scalars, so every operation rounds to single precision exactly
  as a device does; `double`: `numpy.float64` (IEEE semantics, division by zero gives inf).
- Arrays: numpy arrays. A tiled array `int[2,2][3,3]` is one array of shape (2, 2, 3, 3):
  row-major tiles, then row-major elements inside a tile (mcpl.md §3). Indexing one bracket
  group of it gives a numpy *view* of the tile, and a view declared with `as` is a reshape
  of the same storage, so writes through any name are seen by every other name.
- User types: `StructValue` objects, passed by reference; arrays of them are numpy object
  arrays.

Memory that a kernel declares without an initialiser is *poisoned* (NaN for floating point,
the most negative int for integers) rather than zeroed: real devices do not clear local
memory, so a kernel that reads before writing should fail verification here too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mcl.mcpl import ast
from mcl.mcpl import types as T
from mcl.mcpl.types import PRIMITIVE_NAMES

DTYPES: dict[str, type] = {
    "float": np.float32,
    "double": np.float64,
    "int": np.int32,
    "byte": np.uint8,
    "bool": np.bool_,
}

POISON: dict[str, object] = {
    "float": np.float32(np.nan),
    "double": np.float64(np.nan),
    "int": -(2**31),
    "byte": 0xCD,
    "bool": False,
}

SCALARS = PRIMITIVE_NAMES - {"void"}
INTEGRAL = frozenset({"int", "byte", "bool"})


def scalar_name(t: ast.Type | T.VType | None) -> str | None:
    """'int', 'float', ... for a primitive type (as written or as the checker's side tables
    hold it), None for arrays and user types."""
    return t.name if isinstance(t, (ast.Prim, T.Scalar)) else None


def computes_as(kind: str) -> str:
    """The type a value of `kind` computes in: the language's rule (`mcl.mcpl.types.
    promoted`), and a bool as an int (as C's, when a program with errors reaches it)."""
    return "int" if kind == "bool" else T.promoted(kind)


def wider(a: str, b: str) -> str:
    """The result type of `a OP b`: the language's usual arithmetic conversions
    (`mcl.mcpl.types.arithmetic`, one rule with the checker), a bool computing as an int."""
    return T.arithmetic(computes_as(a), computes_as(b))


def convert(value: Any, to: str) -> object:
    """Convert a scalar to type `to` as an assignment does (C semantics: float to int
    truncates toward zero, byte wraps)."""
    if to == "float":
        return np.float32(value)
    if to == "double":
        return np.float64(value)
    if to == "int":
        number = int(value)  # NaN: ValueError, inf: OverflowError
        if not -(2**31) <= number < 2**31:
            raise OverflowError(f"{value} does not fit in a 32-bit int")
        return number
    if to == "byte":
        return int(value) & 0xFF
    if to == "bool":
        return bool(value)
    return value


class StructValue:
    """A value of a user type (`type Complex { float real; float imag; }`): a mutable record
    of named fields, passed by reference like arrays."""

    __slots__ = ("type_name", "fields")

    def __init__(self, type_name: str, fields: dict[str, object]):
        self.type_name = type_name
        self.fields = fields

    def copy(self) -> StructValue:
        """A deep copy: assigning a struct copies its fields (C semantics), arrays included."""
        return StructValue(self.type_name, {k: copy_value(v) for k, v in self.fields.items()})

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StructValue) or other.type_name != self.type_name:
            return NotImplemented
        return all(
            isinstance(w := other.fields[k], np.ndarray) and np.array_equal(v, w)
            if isinstance(v, np.ndarray)
            else v == other.fields[k]
            for k, v in self.fields.items()
        )

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.fields.items())
        return f"{self.type_name}({inner})"


def copy_value(value: object) -> object:
    if isinstance(value, StructValue):
        return value.copy()
    if isinstance(value, np.ndarray):
        return value.copy()
    return value
