"""Memory a kernel asks for against the memory the level has (paper section 4.1: a memory
states its `capacity`; section 5: the programmer learns the limits of a level there, not
when the device refuses the launch).

A declaration stands in one memory space; that space is held by one memory of the
description (`HardwareDescription.bounded_memory`). An array whose size is known when the
kernel is checked (named constants) may not exceed that memory's capacity, and neither may
the arrays of one space declared together between foreach levels (the shared tiles of a
block live side by side in the block's on-chip memory; only declarations and foreach
statements stand there, so every array declared at such a level exists at once). Arrays of
a unit, among its statements, are held against the capacity one by one: blocks of for
loops and branches need not exist at the same time. Sizes that depend on parameters are decided
where the sizes are known: `mcl run` checks them against the device before the launch.
A unit's own arrays in its registers, which state no capacity that holds them, are bounded
by the leaves below the level instead (mcl.mcpl.unit_capacity).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcl.hdl.model import HardwareDescription, MemoryInfo, MemorySpace
from mcl.mcpl import types as T


@dataclass(frozen=True)
class Demand:
    """`bytes` of memory space `space` asked for by the declaration of `name`."""

    name: str
    space: str
    bytes: int


@dataclass(frozen=True)
class Excess:
    """Why a declaration does not fit: the demands that together exceed `memory`."""

    demands: tuple[Demand, ...]
    memory: MemoryInfo
    hwd: str

    @property
    def total(self) -> int:
        return sum(d.bytes for d in self.demands)

    @property
    def capacity(self) -> int:
        assert self.memory.capacity is not None
        return int(self.memory.capacity)

    def message(self) -> str:
        last = self.demands[-1]
        where = f"'{self.hwd}' holds {self.capacity:,} B of '{last.space}' " \
            f"({self.memory.node.path}.capacity)"
        if len(self.demands) == 1:
            return f"'{last.name}' needs {last.bytes:,} B of '{last.space}', but {where}"
        parts = ", ".join(f"'{d.name}' {d.bytes:,} B" for d in self.demands)
        return (f"the arrays of '{last.space}' declared together here need {self.total:,} B "
                f"({parts}), but {where}")


def array_bytes(vt: T.VType, elements: int | None) -> int | None:
    """Bytes of an array of `elements` elements of type `vt`; None when either is unknown
    (a struct element: its size depends on the target's layout rules)."""
    if elements is None or not isinstance(vt, T.Array):
        return None
    primitive = T.PRIMITIVES.get(vt.element.name) if isinstance(vt.element, T.Scalar) else None
    if primitive is None or not primitive.size:
        return None
    return elements * primitive.size


@dataclass
class CapacityTally:
    """The constant-size arrays declared so far at each level of one function."""

    hwd: HardwareDescription
    _declared: dict[tuple[object, str], list[Demand]] = field(default_factory=dict)

    def add(self, level: object, name: str, spaces: list[MemorySpace], size: int
            ) -> Excess | None:
        """Record `size` bytes of `name` in one of `spaces`, declared with the other arrays
        recorded for `level` (None: held alone); the excess when it does not fit. Several
        spaces mean 'either' (mcpl.md section 3): the roomiest decides, so nothing that
        could fit is refused."""
        held = [(m, s) for s in spaces if (m := self.hwd.bounded_memory(s.name)) is not None]
        if len(held) < len(spaces) or not held:
            return None  # a space without a stated capacity: nothing to hold it against
        if not all(m.addressable for m, _ in held):
            # Registers (`addressable = false`): what does not fit is kept in memory by the
            # compiler (spilled), slower but correct; the occupancy feedback weighs it. A
            # unit's own arrays there are bounded by the leaves (mcl.mcpl.unit_capacity).
            return None
        memory, space = max(held, key=lambda ms: ms[0].capacity or 0)
        demand = Demand(name, space.name, size)
        demands = [demand] if level is None else self._declared.setdefault((level, space.name), [])
        if level is not None:
            demands.append(demand)
        capacity = memory.capacity
        assert capacity is not None
        if size > capacity:
            return Excess((demand,), memory, self.hwd.name)
        total = sum(d.bytes for d in demands)
        if total > capacity >= total - size:  # once, where the arrays stop fitting
            return Excess(tuple(demands), memory, self.hwd.name)
        return None
