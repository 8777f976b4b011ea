"""`Ref`: one object as a dictionary key by identity, for the few places that must tell
apart objects which compare equal.

MCPL's AST nodes are frozen dataclasses that compare by value with their spans left out
(`mcl.mcpl.ast`), so two `s += a[k];` in different loops are equal keys. A pass that
remembers something about one *place* in the tree (the value a checker folded for this
`n`, the accesses of this statement) must not find it again at another equal place. A
`Ref` holds the object it names, so the object lives as long as the key: a bare `id()`
in a memo does not, and the address of a collected object is reused by the next one
allocated, which then finds the collected object's entry.

Objects that already hash by identity (the feedback facts and the hardware model's
nodes are `eq=False` dataclasses) are keys as they are; `Ref` is only for value-equal
ones. This module is the only place in `mcl/` that hashes an `id()`
(`tests/test_code_habits.py`).
"""

from __future__ import annotations

from typing import Generic, TypeVar

T = TypeVar("T")


class Ref(Generic[T]):
    """`obj` as a key that equals only a `Ref` to the very same object."""

    __slots__ = ("obj",)

    def __init__(self, obj: T) -> None:
        self.obj = obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Ref) and other.obj is self.obj

    def __repr__(self) -> str:
        return f"Ref({self.obj!r})"
