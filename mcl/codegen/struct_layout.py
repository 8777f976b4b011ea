"""The byte layout of user types on the device, as numpy dtypes: the one place that says
where each field of a generated `typedef struct` lies.

OpenCL C (and CUDA C++, whose structs the CUDA path generates from the same types) lay
out a struct as C does: each field at the next multiple of its own alignment (a scalar's
alignment is its size), the whole padded to a multiple of its largest field alignment.
numpy computes exactly that layout for `np.dtype(..., align=True)`, so the host buffers
that carry `Complex[n]` or `{ byte r; float x; double y; }` have the device's bytes.

A user passes structured arrays of any field order or packing (`np.dtype([("real",
"f4"), ("imag", "f4")])`); `to_layout` and `from_layout` copy them field by field, by
name (numpy's own structured assignment goes by position).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from mcl.codegen.c_names import numpy_dtype
from mcl.codegen.layout import flat_dims
from mcl.diagnostics import MclError, error
from mcl.mcpl.ast import ArrayType, IntLit, NamedType, Prim, TypeDef


def struct_dtype(name: str, types: Mapping[str, TypeDef]) -> np.dtype:
    """The device layout of user type `name` (fields in declaration order)."""
    typedef = types.get(name)
    if typedef is None:
        raise MclError(error("codegen-unknown-type", f"unknown user type '{name}'"))
    fields: list[tuple] = []
    for d in typedef.fields:
        t = d.type
        if isinstance(t, ArrayType):
            dims = []
            for size in flat_dims(t):
                if not isinstance(size, IntLit):
                    raise MclError(error(
                        "codegen-type-params", f"field '{d.name}' of type '{name}' needs a "
                        "size that is a number to have a layout on the device", d.span))
                dims.append(size.value)
            fields.append((d.name, _element_dtype(t.element, types), tuple(dims)))
        else:
            fields.append((d.name, _element_dtype(t, types)))
    return np.dtype(fields, align=True)


def _element_dtype(t: object, types: Mapping[str, TypeDef]) -> np.dtype:
    if isinstance(t, NamedType):
        return struct_dtype(t.name, types)
    assert isinstance(t, Prim)
    return numpy_dtype(t.name)


def copy_fields(dst: np.ndarray, src: np.ndarray) -> None:
    """dst[field] = src[field] for every field of dst, nested structs by name too."""
    missing = [f for f in dst.dtype.names or () if f not in (src.dtype.names or ())]
    if missing:
        raise MclError(error(
            "run-struct-fields", f"a structured argument lacks the field(s) {missing} "
            f"(it has {list(src.dtype.names or ())})",
            hint="build it with numpy.dtype([(field, type), ...]) naming every field"))
    for field in dst.dtype.names or ():
        if dst.dtype[field].names is not None:
            copy_fields(dst[field], src[field])
        else:
            dst[field] = src[field]


def to_layout(value: np.ndarray, layout: np.dtype) -> np.ndarray:
    """A user's structured array as a contiguous array of the device layout."""
    if value.dtype == layout:
        return np.ascontiguousarray(value)
    out = np.zeros(value.shape, dtype=layout)
    copy_fields(out, value)
    return out


def from_layout(value: np.ndarray, like: np.dtype) -> np.ndarray:
    """An array of the device layout back in the user's dtype `like`."""
    if value.dtype == like:
        return value
    out = np.zeros(value.shape, dtype=like)
    copy_fields(out, value)
    return out
