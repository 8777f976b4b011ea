"""How many blocks an NVIDIA multiprocessor runs at once (the paper's section 5.1, Fig. 14).

"The maximum number of blocks that can run on an SMP [...] is important but governed by
complex rules": every block needs a block slot, thread (and warp) slots, registers for
all its threads and its shared memory, and the multiprocessor runs only as many blocks as
the scarcest of these resources allows. The feedback functions of `nvidia` and `hopper`
(in `hwdescs/`) fill in `SmResources` from their hardware description and the kernel,
and report the result.

Newer GPUs allocate registers per warp in fixed units, split the register file over
sub-partitions and round shared memory up to an allocation unit plus a per-block
reservation; `SmResources` carries these granularities (1 and 0 mean "exact").
`multiprocessor` and `kernel_usage` read both sides from a feedback function's `Kernel`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from mcl.hdl.model import ParUnit

# Resource names, as they appear in the messages.
BLOCK_SLOTS = "block slots"
THREADS = "threads"
WARPS = "warps"
REGISTERS = "registers"
SHARED_MEMORY = "shared memory"


@dataclass(frozen=True)
class SmResources:
    """What one multiprocessor offers. Counts may be `math.inf` (no limit)."""

    block_slots: float
    thread_slots: float
    registers: float  # 32-bit registers in the register file
    shared_bytes: float
    warp_slots: float = math.inf
    warp_size: int = 32
    register_unit: int = 1  # registers are allocated per warp in multiples of this
    register_partitions: int = 1  # a warp's registers come from one of these equal parts
    shared_unit: int = 1  # shared memory per block is rounded up to a multiple of this
    shared_reserved: int = 0  # bytes the system reserves in every block's shared memory


@dataclass(frozen=True)
class BlockUsage:
    """What one block of the kernel needs."""

    threads: int
    registers_per_thread: int
    shared_bytes: int


@dataclass(frozen=True)
class Occupancy:
    """Blocks per multiprocessor and, per resource, how many blocks that resource allows."""

    blocks: int
    block_slots: float
    warps_per_block: int
    limits: dict[str, float] = field(default_factory=dict)

    @property
    def limiting(self) -> tuple[str, ...]:
        """The resources that allow no more than `blocks` blocks (block slots last: running
        out of them is the good case)."""
        names = [name for name, limit in self.limits.items() if limit <= self.blocks]
        return tuple(sorted(names, key=lambda name: name == BLOCK_SLOTS))

    @property
    def warps(self) -> int:
        return self.blocks * self.warps_per_block


def _round_up(value: float, unit: int) -> float:
    return math.ceil(value / unit) * unit if unit > 1 else value


def blocks_per_sm(sm: SmResources, block: BlockUsage) -> Occupancy:
    """The number of blocks of `block` that fit on one multiprocessor at once."""
    warps = math.ceil(block.threads / sm.warp_size)
    limits: dict[str, float] = {
        BLOCK_SLOTS: sm.block_slots,
        THREADS: sm.thread_slots // block.threads,
    }
    if sm.warp_slots != math.inf:
        limits[WARPS] = sm.warp_slots // warps
    if block.registers_per_thread > 0:
        per_warp = _round_up(block.registers_per_thread * sm.warp_size, sm.register_unit)
        per_partition = sm.registers // sm.register_partitions
        warps_by_registers = sm.register_partitions * (per_partition // per_warp)
        limits[REGISTERS] = warps_by_registers // warps
    if block.shared_bytes > 0 or sm.shared_reserved > 0:
        per_block = _round_up(block.shared_bytes + sm.shared_reserved, sm.shared_unit)
        limits[SHARED_MEMORY] = sm.shared_bytes // per_block
    blocks = int(max(0, min(limits.values())))
    return Occupancy(blocks, sm.block_slots, warps, limits)


# ----------------------------------------------------------------------------- from a kernel


@dataclass(frozen=True)
class Multiprocessor:
    """The execution unit a feedback function is attached to, read as a multiprocessor:
    its resources, the memory space its scratchpad holds, and the par_units involved."""

    resources: SmResources
    shared_space: str | None
    block_unit: str
    thread_unit: str


def multiprocessor(kernel: Any, **rules: int) -> Multiprocessor:
    """Read an SMP from the description: slots for blocks, warps and threads on the block
    that names the function (`kernel.node`), the registers (a memory that is not
    addressable) and the scratchpad (an addressable memory holding a space declared in a
    par_unit, `shared`) that reside on it. `rules` are allocation granularities the
    description language cannot state (`register_unit`, `shared_unit`, ...)."""
    hwd = kernel.hwd.description
    node = kernel.node
    thread = hwd.executing_unit().name
    registers, shared_bytes, shared_space, block = math.inf, math.inf, None, None
    for child in node.walk():
        if child.kind != "memory":
            continue
        info = next((m for m in hwd.memories() if m.node is child), None)
        if info is None or info.capacity is None:
            continue
        if not info.addressable:
            registers = info.capacity // 4  # 32-bit registers
            continue
        for name in info.spaces:
            space = hwd.memory_space(name)
            if space is not None and isinstance(space.scope, ParUnit):
                shared_bytes, shared_space, block = info.capacity, name, space.scope.name
    if block is None:  # no scratchpad: the outermost par_unit plays the block
        block = hwd.par_units()[0].name
    lockstep = hwd.lockstep(thread)
    warp_size = int(lockstep.count) if lockstep is not None else 32

    def slots(unit: str) -> float:
        found = node.slots_for(unit)
        return math.inf if found is None else found

    warp_units = [u.name for u in hwd.par_units() if lockstep is not None
                  and u.inner is lockstep]
    resources = SmResources(
        block_slots=slots(block), thread_slots=slots(thread), registers=registers,
        shared_bytes=shared_bytes,
        warp_slots=slots(warp_units[0]) if warp_units else math.inf, warp_size=warp_size,
        **rules)
    return Multiprocessor(resources, shared_space, block, thread)


def kernel_usage(kernel: Any, sm: Multiprocessor) -> tuple[BlockUsage, Any]:
    """What one block of the kernel needs: threads per block, registers per thread (an
    estimate, returned second) and shared memory per block."""
    threads = kernel.context.units_per(sm.thread_unit, sm.block_unit)
    registers = kernel.context.registers_per_thread()
    shared = kernel.context.space_bytes(sm.shared_space) if sm.shared_space else 0
    return BlockUsage(threads, registers.value, shared), registers
