"""Linear layout of MCPL's multi-dimensional arrays in one OpenCL buffer.

MCPL arrays are true multi-dimensional arrays (spec mcpl.md section 3): `float[n, m] c`,
nested `float[h][w] img` and tiled `int[2,2][3,3] d2` (2x2 tiles of 3x3 elements). All
forms are stored row-major over the concatenation of their bracket groups, outermost
group first, so a tiled array is tile-major: d2[ti, tj][ei, ej] lives at
((ti * 2 + tj) * 3 + ei) * 3 + ej. A view (`as float[n/t][t] a2`) is another list of
dimensions over the same storage, so it is linearised the same way.
"""

from __future__ import annotations

from functools import reduce

from mcl.mcpl.ast import ArrayType, Expr, Index, IntLit
from mcl.mcpl.typed import Typed
from mcl.mcpl.types import INT_MAX, INT_MIN


def flat_dims(t: ArrayType) -> list[Expr]:
    """All dimension sizes of `t`, outermost first (bracket groups concatenated)."""
    return [d for group in t.dims for d in group]


def index_chain(e: Index) -> tuple[Expr, list[Expr]]:
    """`d2[ti, tj][ei, ej]` -> (d2, [ti, tj, ei, ej]): the array expression and all indices
    applied to it, in order."""
    indices: list[Expr] = []
    base: Expr = e
    while isinstance(base, Index):
        indices[:0] = list(base.indices)
        base = base.base
    return base, indices


def _folded(value: int, typed: Typed) -> IntLit | None:
    """A folded literal, or None when the value does not fit in an int: then the operation
    is printed as written, like one on sizes only known at run time (a literal that large
    cannot be printed as a C int, see `c_expr.int_literal`)."""
    return typed.int_lit(value) if INT_MIN <= value <= INT_MAX else None


def _mul(a: Expr, b: Expr, typed: Typed) -> Expr:
    if isinstance(a, IntLit) and isinstance(b, IntLit):
        return _folded(a.value * b.value, typed) or typed.binary("*", a, b)
    if (isinstance(a, IntLit) and a.value == 0) or (isinstance(b, IntLit) and b.value == 0):
        return typed.int_lit(0)
    if isinstance(a, IntLit) and a.value == 1:
        return b
    if isinstance(b, IntLit) and b.value == 1:
        return a
    return typed.binary("*", a, b)


def _add(a: Expr, b: Expr, typed: Typed) -> Expr:
    if isinstance(a, IntLit) and isinstance(b, IntLit):
        return _folded(a.value + b.value, typed) or typed.binary("+", a, b)
    if isinstance(a, IntLit) and a.value == 0:
        return b
    return typed.binary("+", a, b)


def product(exprs: list[Expr], typed: Typed) -> Expr:
    """The product of `exprs` (1 for none), without multiplications by a literal 1; the
    nodes it builds typed by `typed`."""
    one: Expr = typed.int_lit(1)
    return reduce(lambda a, b: _mul(a, b, typed), exprs, one)


def linear_offset(indices: list[Expr], dims: list[Expr], typed: Typed) -> Expr:
    """Row-major offset of element `indices` (or, with fewer indices than dims, of the
    start of the sub-array they select) in Horner form: (i * d2 + j) * d3 + k; the nodes
    it builds typed by `typed`."""
    if len(indices) > len(dims):
        raise ValueError(f"{len(indices)} indices for an array of {len(dims)} dimensions")
    offset: Expr = typed.int_lit(0)
    for k, idx in enumerate(indices):
        offset = _add(_mul(offset, dims[k], typed) if k else offset, idx, typed)
    if len(indices) < len(dims):
        return _mul(offset, product(dims[len(indices):], typed), typed)
    return offset


def remaining_type(t: ArrayType, nr_indices: int) -> ArrayType | None:
    """The array type left after applying `nr_indices` indices (None when none are left)."""
    dims = flat_dims(t)
    rest = dims[nr_indices:]
    return ArrayType(t.element, (tuple(rest),)) if rest else None
