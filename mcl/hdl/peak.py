"""Peak arithmetic throughput and memory bandwidth read from a hardware description.

The paper names, as future work, telling the programmer how close a kernel is to what the
hardware can do (section 8); these figures are the roofs of that comparison
(mcl.feedback.analyses.roofline). Nothing here is new syntax: a description states them with the
properties HDL already has (docs/hdl.md, "Peak throughput"):

- arithmetic: every execution or SIMD unit that executes arithmetic instructions (an
  `instructions` block with `op((+), C)`, ..., `op("fma", C)`) contributes
  units × clock × operations per cycle. A unit issues one instruction every C cycles;
  `op("fma", C)` is a float32 fused multiply-add, 2 floating-point operations, and
  `op("fma_double", C)` the float64 one. An operator literal is one operation. The clock
  is the `clock_frequency` of the unit or of the nearest block around it. float64 has a
  peak only where a description states `op("fma_double", C)`.
- bandwidth of a memory level: the `bandwidth` of the memory that holds the space, per
  instance (a memory inside an execution unit exists once per unit: the figure is
  multiplied by their number), else the `bandwidth` of the interconnect that links it to
  the execution units (for the whole device). Registers (`addressable = false`) have none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcl.hdl.model import EXEC_KINDS, Number, Quantity, product_of_counts

if TYPE_CHECKING:
    from mcl.hdl.model import DeviceNode, HardwareDescription

# Floating-point operations per instruction, by MCPL type (mcl/mcpl/types.py).
FMA_OPS = {"float": "fma", "double": "fma_double"}
OPERATORS = frozenset({"+", "-", "*", "/"})
ARITHMETIC_KINDS = frozenset({"execution_unit", "simd_unit"})


@dataclass(frozen=True)
class ComputePeak:
    """The arithmetic peak of one kind of unit: `units` in the whole device, each doing
    `ops_per_cycle` floating-point operations per cycle at `clock_hz`."""

    dtype: str
    unit: str  # the unit's path in the device, e.g. smps.smp.partitions.partition.alus.alu
    units: Number
    clock_hz: float
    ops_per_cycle: float

    @property
    def flops(self) -> float:
        return float(product_of_counts((self.units, self.clock_hz, self.ops_per_cycle)))

    @property
    def formula(self) -> str:
        return (f"{_count(self.units)} units x {self.clock_hz / 1e6:g} MHz x "
                f"{self.ops_per_cycle:g} flop/cycle")


@dataclass(frozen=True)
class Bandwidth:
    """The bandwidth of the memory level that holds `space`: `per_instance` bytes/s of
    each of `instances` copies (a memory per execution unit), stated by `source`."""

    space: str
    memory: str  # path of the memory that holds the space
    source: str  # path of the block that states the bandwidth (memory or interconnect)
    per_instance: float  # bytes/s
    instances: Number

    @property
    def bytes_per_s(self) -> float:
        return float(product_of_counts((self.per_instance, self.instances)))


def compute_peaks(hwd: HardwareDescription, dtype: str = "float") -> list[ComputePeak]:
    """One entry per kind of arithmetic unit whose clock is known (empty: no peak)."""
    found = []
    for node in hwd.device.walk():
        if node.kind not in ARITHMETIC_KINDS:
            continue
        per_cycle = _ops_per_cycle(node, dtype)
        clock = _clock(node)
        if per_cycle is None or clock is None:
            continue
        found.append(ComputePeak(dtype, node.path, node.copies(), clock, per_cycle))
    return found


def peak_flops(hwd: HardwareDescription, dtype: str = "float") -> float | None:
    """Floating-point operations per second of the whole device, or None when the
    description does not give units, instructions and clock for `dtype`."""
    peaks = compute_peaks(hwd, dtype)
    return sum(p.flops for p in peaks) if peaks else None


def bandwidth(hwd: HardwareDescription, space: str) -> Bandwidth | None:
    """The bandwidth of the memory holding `space`, or None (registers, or not stated)."""
    held = hwd.memories_for(space)
    if not held or not held[0].addressable:
        return None
    memory = held[0]
    stated = memory.node.values.get("bandwidth")
    if isinstance(stated, Quantity):
        instances: Number = 1
        if memory.resides_on is not None:
            around = (memory.resides_on, *memory.resides_on.ancestors())
            instances = product_of_counts(a.count() for a in around if a.kind.endswith("_group"))
        return Bandwidth(space, memory.node.path, memory.node.path, stated.value / 8, instances)
    link = hwd.link(memory.node.path)
    if link is None or link.bandwidth is None:
        return None
    return Bandwidth(space, memory.node.path, link.node.path, link.bandwidth.value / 8, 1)


def bandwidths(hwd: HardwareDescription) -> list[Bandwidth]:
    """The bandwidth of every memory space whose level states one, outermost first."""
    found = (bandwidth(hwd, s.name) for s in hwd.memory_spaces())
    return [b for b in found if b is not None]


def _ops_per_cycle(node: DeviceNode, dtype: str) -> float | None:
    """The most floating-point operations per cycle of one instruction the unit runs."""
    best = None
    for block in node.children:
        if block.kind != "instructions":
            continue
        for arg in block.args.get("op", []):
            if len(arg) != 2:
                continue
            name, cost = str(arg[0]), arg[1]
            cost = cost.value if isinstance(cost, Quantity) else cost
            if not isinstance(cost, (int, float)) or cost <= 0:
                continue
            if name == FMA_OPS.get(dtype):
                ops = 2.0
            elif name in OPERATORS and dtype == "float":
                ops = 1.0  # an operator literal: the unit's own arithmetic (float32)
            else:
                continue
            best = max(best or 0.0, ops / cost)
    return best


def _clock(node: DeviceNode) -> float | None:
    for block in (node, *node.ancestors()):
        q = block.values.get("clock_frequency")
        if isinstance(q, Quantity) and block.kind in EXEC_KINDS | {"device", "device_unit",
                                                                   "device_group"}:
            return float(q.value)
    return None


def _count(n: Number) -> str:
    return "unlimited" if n == math.inf else f"{n:g}"
