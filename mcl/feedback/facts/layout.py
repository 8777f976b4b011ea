"""Where an array element lies in memory: flattened offsets and the bytes an access touches.

MCPL arrays are true multi-dimensional arrays (paper 4.3); the cache analysis (6.4) and
the feedback functions (6.5: coalescing, bank conflicts) need the byte an access touches.
Arrays are stored row-major over all their dimensions, outermost bracket group first
(`float[n, m] c`: c[i, j] is element i*m + j; a view `a as float[n/t][t] a2` addresses
the storage of `a` with its own shape). Records (user types) are laid out field after
field without padding. Sizes of types come from `mcl.feedback.facts.sizes`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import sympy

from mcl.feedback.facts.kernel import Access, DeclaredName, Derived, KernelFacts, Scope, dims
from mcl.feedback.facts.sizes import element_bytes
from mcl.mcpl import ast


def _static(size: Any) -> int | None:
    size = sympy.sympify(size)
    return int(size) if size.is_Integer and size > 0 else None


def type_bytes(facts: KernelFacts, type_: ast.Type | None, scope: Scope | None) -> int | None:
    """Bytes of a type when they are known without running the kernel (an array type:
    element bytes times its constant extents), else None."""
    if type_ is None:
        return None
    scope = scope if scope is not None else Scope(None, None, None)
    size = element_bytes(type_, facts.view.lookup_type, facts.evaluator, scope)
    if isinstance(type_, ast.ArrayType):
        for group in type_.dims:
            for d in group:
                size = size * (d.value if isinstance(d, ast.IntLit) else sympy.Symbol("?"))
    return _static(size)


def element_layout(facts: KernelFacts, binding: DeclaredName, field: str | None = None
                   ) -> tuple[int, int, int] | None:
    """(bytes of one array element, bytes an access of `field` touches, offset of that
    field in the element); the field is the whole element when None. None when a size is
    not known statically."""
    root = binding.root
    if not isinstance(root.type, ast.ArrayType) or binding.through_field:
        return None
    record = type_bytes(facts, root.type.element, root.scope)
    if record is None:
        return None
    element = root.type.element
    if field is None or not isinstance(element, ast.NamedType):
        return record, record, 0
    typedef = facts.view.lookup_type(element.name)
    offset = 0
    for member in typedef.fields if typedef is not None else ():
        size = type_bytes(facts, member.type, root.scope)
        if size is None:
            return None
        if member.name == field:
            return record, size, offset
        offset += size
    return None


def dims_scope(facts: KernelFacts, binding: DeclaredName) -> Scope | None:
    """Names visible to an array's size expressions: all parameters for a parameter (a size
    may name a later parameter), the declaration's scope otherwise."""
    if binding.kind == "param" and facts.params:
        last = facts.params[-1]
        return last.scope.declare(last) if last.scope is not None else None
    return binding.scope


def extents(facts: KernelFacts, binding: DeclaredName) -> list[Any]:
    """The sizes of all dimensions of an array (SymPy), outermost first."""
    # No scope only where the sizes name nothing (a kernel without parameters).
    scope = cast(Scope, dims_scope(facts, binding))
    return [facts.evaluator.sym(d, scope) for d in dims(binding)]


def element_count(facts: KernelFacts, binding: DeclaredName) -> Any:
    count = sympy.Integer(1)
    for extent in extents(facts, binding):
        count = count * extent
    return sympy.expand(count)


def flat_index(facts: KernelFacts, access: Access) -> Any:
    """The element offset of an access in its array's storage (SymPy, in the loops'
    counters and the kernel's parameters). Computed once per access: the cache analysis
    and every step of a feedback function through a warp ask for it."""
    known = facts.get(FlatIndices).by_access
    if access not in known:
        known[access] = _flat_index(facts, access)
    return known[access]


@dataclass(frozen=True)
class FlatIndices(Derived):
    """The element offsets of a function's accesses, each computed on first request."""

    by_access: dict[Access, Any] = field(default_factory=dict)

    @classmethod
    def derive(cls, facts: KernelFacts) -> FlatIndices:
        return cls()


def _flat_index(facts: KernelFacts, access: Access) -> Any:
    strides = _strides(facts, access.binding)
    offset = sympy.Integer(0)
    for k, index in enumerate(access.indices):
        # subscripts past the array's own (a field's, `c[i].v[k]`) count one element each
        stride = strides[k] if k < len(strides) else sympy.Integer(1)
        offset = offset + facts.evaluator.sym(index, access.item.scope) * stride
    return sympy.expand(offset)


def subscript_strides(facts: KernelFacts, binding: DeclaredName) -> list[Any]:
    """The element strides of the subscripts of an access through `binding` (`_strides`)."""
    return _strides(facts, binding)


def _strides(facts: KernelFacts, binding: DeclaredName) -> list[Any]:
    """The element strides of the subscripts of an access through `binding`, row-major in
    its extents. A view of a part (`a[i] as float[4][4] d`) first has those of the part's
    subscripts (DeclaredName.prefix), each in the extents of the array it indexes."""
    own = _row_major(extents(facts, binding))
    if binding.storage is None:
        return own
    selecting = len(binding.prefix) - len(binding.storage.prefix)
    return _strides(facts, binding.storage)[:len(binding.storage.prefix) + selecting] + own


def _row_major(sizes: list[Any]) -> list[Any]:
    strides: list[Any] = []
    stride: Any = sympy.Integer(1)
    for extent in reversed(sizes):
        strides.insert(0, stride)
        stride = stride * extent
    return strides
