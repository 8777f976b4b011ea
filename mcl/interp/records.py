"""Values of user types at the interpreter's boundary: numpy structured arrays.

The OpenCL path takes a `Complex[n]` argument as a numpy structured array (the bytes of
the device's `typedef struct`); the interpreter computes with `StructValue` records
(values.py). So that one reference drives both, `run_function` converts a structured
argument into records before the run and writes the records back into the caller's
array after it: the caller sees its structured array updated, as from the device.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mcl.interp.values import DTYPES, StructValue, convert
from mcl.mcpl import ast

# The definition a written user type stands for (the checker's binding of it).
TypeLookup = Callable[[ast.NamedType], ast.TypeDef]


def is_structured(value: object) -> bool:
    """A numpy structured array or record (np.void with named fields)."""
    return isinstance(value, (np.ndarray, np.void)) and value.dtype.names is not None


def to_records(value: np.ndarray | np.void, t: ast.NamedType, lookup: TypeLookup) -> object:
    """A structured array as an object array of StructValue (same shape), a record as one
    StructValue. Raises ValueError naming a field the user type lacks or the reverse."""
    typedef, type_name = lookup(t), t.name
    names = [f.name for f in typedef.fields]
    given = list(value.dtype.names or ())
    if sorted(given) != sorted(names):
        raise ValueError(f"its fields {given} are not those of {type_name}: {names}")
    if isinstance(value, np.void) or value.ndim == 0:
        record = value if isinstance(value, np.void) else value[()]
        return StructValue(type_name, {f.name: _field(record[f.name], f.type, lookup)
                                       for f in typedef.fields})
    out = np.empty(value.shape, dtype=object)
    for index in np.ndindex(value.shape):
        out[index] = to_records(value[index], t, lookup)
    return out


def _field(value: Any, t: ast.Type, lookup: TypeLookup) -> object:
    if isinstance(t, ast.Prim):
        return convert(value, t.name)
    if isinstance(t, ast.NamedType):
        return to_records(value, t, lookup)
    assert isinstance(t, ast.ArrayType)
    element = t.element
    if isinstance(element, ast.NamedType):
        return to_records(np.asarray(value), element, lookup)
    return np.array(value, dtype=DTYPES[element.name])


def write_back(records: object, target: np.ndarray) -> None:
    """Store records (as `to_records` made them, after the run) into `target`."""
    if isinstance(records, StructValue):
        target[()] = _as_tuple(records, target.dtype)
        return
    assert isinstance(records, np.ndarray)
    for index in np.ndindex(records.shape):
        target[index] = _as_tuple(records[index], target.dtype)


def _as_tuple(record: StructValue, dtype: np.dtype) -> tuple:
    items: list[object] = []
    for name in dtype.names or ():
        value = record.fields[name]
        field_dtype = dtype.fields[name][0] if dtype.fields else dtype
        if isinstance(value, StructValue):
            items.append(_as_tuple(value, field_dtype))
        elif isinstance(value, np.ndarray) and value.dtype == object:
            base = field_dtype.base
            items.append(np.array([_as_tuple(v, base) for v in value.reshape(-1)],
                                  dtype=base).reshape(value.shape))
        else:
            items.append(value)
    return tuple(items)
