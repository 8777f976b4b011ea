"""How many executing units a description keeps at once: the one rule behind "the kernel
launches more units than the device runs" (elements-several-per-unit, store-contention).

The paper (section 4.2) defines `slots(U, N)` on an execution unit or group as the N
"slots" or "contexts" it has for par_unit U: "if an execution group has 4 execution units
and 8 slots for threads, [...] 2 threads have to share the time on each execution unit".
The slots of an outer execution unit (an SM's 48 warps, a mic core's 4 hardware threads)
are the units it keeps resident; the slots of the units inside it (an ALU's one thread)
are the lanes that execute some of them in a given cycle. Units beyond the resident ones
do not run until resident ones finish, which is when computing more than one element per
unit pays (paper section 5, gpu message (3)); comparing with the lanes instead would
advise fewer units on a kernel that does not even fill the device (fermi's 480 ALUs
against the 23,040 threads its SMs hold), which would slow it down.

The rule: for every execution unit or group of the device with slots for the executing
par_unit E or for a par_unit P around it, the units of E it holds are N times the units
of E in one P (the counts of the par_groups between them: `nr_units`, or `max_nr_units`
as an upper bound), the least over the slots it states (fermi's SM: 8 blocks of at most
1,024 threads, 48 warps of 32 threads: 1,536); times the number of such execution units.
The resident count is the largest of these over the device (the outermost contexts hold
the most); `math.inf` when unlimited (perfect, cpu: no advice at all).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcl.hdl.model import Number, product_of_counts

if TYPE_CHECKING:
    from mcl.hdl.model import DeviceNode, HardwareDescription


@dataclass(frozen=True)
class Resident:
    """The executing units a description keeps at once, and where the figure comes from."""

    units: Number  # math.inf when unlimited
    unit: str  # the executing par_unit (thread, vector)
    node: str = ""  # the execution unit that holds them (smp, core)
    nodes: Number = 1  # how many of those the device has
    slots: Number = math.inf  # the slots that bound one of them
    slot_unit: str = ""  # the par_unit those slots are for (warp, block, thread)
    per_slot: Number = 1  # executing units in one slot_unit
    exact: bool = True  # per_slot is exact, not an upper bound (max_nr_units)

    def explain(self) -> str:
        """`15 smps x 48 warps x 32 threads`: how `units` is made up."""
        parts = [_count(self.nodes, self.node), _count(self.slots, self.slot_unit)]
        if self.slot_unit != self.unit:
            bound = "" if self.exact else "at most "
            parts.append(bound + _count(self.per_slot, self.unit))
        return " x ".join(parts)


def resident_units(hwd: HardwareDescription) -> Resident:
    """The resident executing units of `hwd` (see the module docstring)."""
    unit = hwd.executing_unit().name
    chain = hwd.group_chain(unit)
    best = Resident(0, unit)
    for node in hwd.device.walk():
        held = _held(hwd, node, chain, unit)
        if held is not None and (held.units > best.units):
            best = held
    return best if best.units > 0 else Resident(math.inf, unit)


def concurrent_units(hwd: HardwareDescription) -> Number:
    """How many executing units the device keeps at once; math.inf when unlimited."""
    return resident_units(hwd).units


def finite_slots(hwd: HardwareDescription) -> bool:
    return concurrent_units(hwd) != math.inf


def _held(hwd: HardwareDescription, node: DeviceNode, chain: list, unit: str
          ) -> Resident | None:
    """The units of `unit` one kind of execution unit holds, over all its copies."""
    options: list[Resident] = []
    nodes = node.copies()
    for k, group in enumerate(chain):
        if group.unit is None:
            continue
        slots = node.slots_for(group.unit.name)
        if slots is None:
            continue
        inner = chain[k + 1:]
        per_slot = product_of_counts(g.count for g in inner)
        exact = all(g.exact for g in inner)
        options.append(Resident(product_of_counts((slots, per_slot, nodes)), unit,
                                node.name, nodes, slots, group.unit.name, per_slot,
                                exact))
    if not options:
        return None
    # the scarcest slots bound the unit; on a tie, the slots of the executing unit itself
    return min(options, key=lambda r: (r.units, r.slot_unit != unit))


def _count(value: Number, name: str) -> str:
    number = "unlimited" if value == math.inf else f"{int(value):,}"
    return f"{number} {name}{'' if value == 1 else 's'}"
