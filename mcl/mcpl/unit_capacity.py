"""The most one unit may keep in arrays of its own, from the leaves below a level.

A unit's own array (`float[8] acc;` in a thread: its registers, paper section 4.1) is
held against no capacity at its level: the registers are not addressable, and what they
do not hold the leaf's compiler keeps in device memory (spilled; CUDA's "local memory").
That memory is reserved for every unit the device holds at once, whatever the launch:
one copy for each context its execution units have (`slots(unit, N)` times their
count). So at a leaf one unit may keep at most the device memory's capacity divided by
those contexts, and an array over it can never run there.

A level above the leaves (gpu, perfect) states no such limit: its descriptions leave the
registers unbounded, or have none. A program at such a level is refined towards a leaf
below it (paper section 5), so an array is refused only where no leaf below the level
could keep it: the largest of the leaves' limits bounds it. A leaf that states no bounded
device memory or no count of contexts (a user's description) bounds nothing, and then no
array is refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcl.diagnostics import MclError
from mcl.hdl.model import HardwareDescription, MemoryInfo, MemorySpace

if TYPE_CHECKING:
    from mcl.hdl.library import HwdLibrary


@dataclass(frozen=True)
class OwnArrayLimit:
    """At leaf `leaf`, one `unit` may keep at most `bytes`: `memory` divided among the
    `contexts` units the device holds at once."""

    leaf: str
    unit: str
    memory: MemoryInfo
    contexts: int

    @property
    def bytes(self) -> int:
        assert self.memory.capacity is not None
        return int(self.memory.capacity) // self.contexts

    def describe(self, name_leaf: bool = True) -> str:
        assert self.memory.capacity is not None
        at = f" at '{self.leaf}'" if name_leaf else ""
        return (f"{self.bytes:,} B{at} ({self.memory.node.path}.capacity, "
                f"{int(self.memory.capacity):,} B, shared by the {self.contexts:,} "
                f"{self.unit}s it holds at once)")


def in_registers(hwd: HardwareDescription, spaces: list[MemorySpace]) -> bool:
    """Whether an array in `spaces` is a unit's own and held by no addressable memory
    of stated capacity at this level (registers): the arrays `level_limit` bounds. One
    that a memory with a capacity holds is held against it (mcl.mcpl.capacity)."""
    unit = hwd.executing_unit()
    return bool(spaces) and all(
        space.scope is unit and ((memory := hwd.bounded_memory(space.name)) is None
                                 or not memory.addressable)
        for space in spaces)


def leaf_limit(hwd: HardwareDescription) -> OwnArrayLimit | None:
    """The limit of one unit's own arrays at leaf `hwd`; None where it states none."""
    unit = hwd.executing_unit().name
    counts = [info.slots * info.nr_units for info in hwd.execution_units_for(unit)]
    contexts = max(counts, default=0)
    if not counts or contexts < 1 or math.isinf(contexts):
        return None
    for space in hwd.default_spaces():  # outermost first: the device memory spills go to
        memory = hwd.bounded_memory(space.name)
        if memory is not None and memory.addressable:
            return OwnArrayLimit(hwd.name, unit, memory, int(contexts))
    return None


def level_limit(library: HwdLibrary, level: str) -> OwnArrayLimit | None:
    """The largest limit among the leaves at or below `level`; None when one of them
    states none (that leaf might keep any array) or a leaf did not load."""
    try:
        leaves = [level] if library.is_leaf(level) else [
            leaf for leaf in library.leaves() if level in library.ancestors(leaf)]
        limits = [leaf_limit(library.get(leaf)) for leaf in leaves]
    except MclError:
        return None
    if not limits or any(limit is None for limit in limits):
        return None
    return max((limit for limit in limits if limit is not None), key=lambda lim: lim.bytes)
