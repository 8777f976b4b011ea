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

`verdict` is the one rule both functions use to say what limits occupancy and what to
change: the grid first (a kernel of fewer blocks than the multiprocessors hold
leaves slots empty whatever a block needs), nothing when every thread (warp) slot is
already in use, else a change of one limiting resource that the model shows raises the
warps per multiprocessor -- fewer registers, less shared memory (the paper's phases), or
another number of threads per block (more when the block slots limit) -- and no advice
when no single change does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from mcl.feedback.findings import (
    FUNCTIONS_DOCS,
    OccupancyFinding,
    RaiseOccupancy,
    code_of,
    declaration,
)
from mcl.feedback.message_code import MessageCode
from mcl.feedback.messages import FeedbackSeverity
from mcl.hdl.model import ParUnit, product_of_counts

# The codes of the messages built here for the descriptions' feedback functions
# (mcl.feedback.codes; the catalogue is docs/feedback.md).
DOCS = FUNCTIONS_DOCS  # its section of docs/feedback.md
MESSAGE_CODES = (
    declaration(OccupancyFinding),
    MessageCode("shared-mem-parallelism", "fewer blocks per SMP than it has slots",
                (FeedbackSeverity.INFO, FeedbackSeverity.SUGGESTION), DOCS, headline=True),
)


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


def refusal(sm: SmResources, block: BlockUsage,
            occupancy: Occupancy | None = None) -> str | None:
    """Why not one block of `block` fits on `sm`, with the figures; None when one does
    (such a kernel never starts: `mcl check` refuses it, mcl.feedback.block_refusal).
    Registers per thread of 0 are not known well enough to refuse (an estimate).
    `occupancy` is `blocks_per_sm(sm, block)` where the caller has it already."""
    limits = (occupancy or blocks_per_sm(sm, block)).limits
    if limits.get(THREADS, math.inf) < 1 or limits.get(WARPS, math.inf) < 1:
        return (f"{block.threads:,} threads per block, but a multiprocessor holds "
                f"{_figure(sm.thread_slots)} threads and {_figure(sm.warp_slots)} warps")
    if limits.get(SHARED_MEMORY, math.inf) < 1:
        most = shared_per_block(sm)
        reserved = (f" ({_figure(sm.shared_bytes)} B less the {sm.shared_reserved:,} B "
                    "reserved for each block)" if sm.shared_reserved else "")
        return (f"{block.shared_bytes:,} B of shared memory per block, but a multiprocessor "
                f"gives one block at most {_figure(most)} B{reserved}")
    if limits.get(REGISTERS, math.inf) < 1:
        warps = math.ceil(block.threads / sm.warp_size)
        per_warp = int(_round_up(block.registers_per_thread * sm.warp_size,
                                 sm.register_unit))
        split = (f", {_figure(sm.registers // sm.register_partitions)} in each of its "
                 f"{sm.register_partitions} partitions" if sm.register_partitions > 1 else "")
        return (f"{block.registers_per_thread} registers per thread (the compiler's count) "
                f"for {block.threads:,} threads: {warps} warps of {per_warp:,} registers, "
                f"{warps * per_warp:,} in all, but the register file holds "
                f"{_figure(sm.registers)}{split}")
    return None


def shared_per_block(sm: SmResources) -> float:
    """The most shared memory one block may have on `sm`: its capacity less what the
    system reserves for every block, in whole allocation units (hopper: 233,472 B less
    1,024 B, 232,448 B). The rule of the refusal above and of `mcl tune`'s filter
    (mcl.tune.leaf_limits)."""
    if math.isinf(sm.shared_bytes):
        return math.inf
    return (sm.shared_bytes - sm.shared_reserved) // sm.shared_unit * sm.shared_unit


def _figure(value: float) -> str:
    return f"{int(value):,}"


# ----------------------------------------------------------------------------- from a kernel


@dataclass(frozen=True)
class Multiprocessor:
    """The execution unit a feedback function is attached to, read as a multiprocessor:
    its resources, the memory space its scratchpad holds, and the par_units involved."""

    resources: SmResources
    shared_space: str | None
    block_unit: str
    thread_unit: str
    count: float = 1  # multiprocessors of the device (15 SMs on fermi, 132 on hopper)
    max_threads: float = math.inf  # threads per block the par_groups allow


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
    count = node.copies()
    chain = hwd.group_chain(thread)
    first = next(k for k, g in enumerate(chain) if g.unit is not None and g.unit.name == block)
    max_threads = product_of_counts(g.count for g in chain[first + 1:])
    return Multiprocessor(resources, shared_space, block, thread, count, max_threads)


def kernel_usage(kernel: Any, sm: Multiprocessor) -> tuple[BlockUsage, Any]:
    """What one block of the kernel needs: threads per block, registers per thread (an
    estimate, returned second) and shared memory per block."""
    threads = kernel.context.units_per(sm.thread_unit, sm.block_unit)
    registers = kernel.context.registers_per_thread()
    shared = kernel.context.space_bytes(sm.shared_space) if sm.shared_space else 0
    return BlockUsage(threads, registers.value, shared), registers


def limiting_usage(usage: BlockUsage, registers: Any) -> BlockUsage:
    """What of a block's needs may limit its occupancy: all of `usage` where the registers
    per thread are the compiler's count (`registers.counted`); without the registers where
    they are an estimate, too uncertain to limit by (kernel_api.ESTIMATE_RANGE: the
    compiler used 0.5 to 6.5 times such estimates), so no message says "limited by
    registers" from it."""
    return usage if registers.counted else replace(usage, registers_per_thread=0)


# ----------------------------------------------------------------------------- advice

GRID = "the grid"


@dataclass(frozen=True)
class Change:
    """A change of one resource and the warps per multiprocessor it gives (more than now:
    `verdict` keeps no other)."""

    resource: str
    text: str
    usage: BlockUsage  # what one block needs after the change (the same for GRID)
    warps: int


@dataclass(frozen=True)
class Verdict:
    """Blocks per multiprocessor with the grid counted, what limits them, and the changes
    that would raise the warps per multiprocessor (each checked with `blocks_per_sm`)."""

    occupancy: Occupancy  # what the resources of one block allow
    blocks: int  # blocks per multiprocessor, at most what the grid gives each
    warps: int
    limiting: tuple[str, ...]  # resources that allow no more (GRID: too few blocks)
    changes: tuple[Change, ...]  # each raises the warps per multiprocessor
    multiprocessors: float
    grid_blocks: int | None = None  # blocks the kernel launches (None: not known)
    slots_in_use: float = 0  # when all thread (warp) slots are in use: their number

    @property
    def advice(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.text for c in self.changes))

    @property
    def full(self) -> bool:
        """Every thread (warp) slot is in use: no change raises occupancy."""
        return self.slots_in_use > 0


def verdict(sm: SmResources, block: BlockUsage, multiprocessors: float = math.inf,
            grid_blocks: int | None = None, max_threads: float = math.inf) -> Verdict:
    """The occupancy of `block` on `sm` and what to change (feedback.md, "Occupancy").

    Advice is only given for a change that raises the warps a multiprocessor runs at once
    (the paper's section 5.1: more blocks per SMP hide memory latency): none when every
    thread or warp slot is already in use; a grid of fewer blocks than the
    multiprocessors hold limits before any per-block resource does."""
    occ = blocks_per_sm(sm, block)
    if grid_blocks is not None and multiprocessors != math.inf:
        given = math.ceil(grid_blocks / multiprocessors)  # blocks the busiest one receives
        if given < occ.blocks:
            wanted = int(occ.blocks * multiprocessors)
            more = Change(GRID, f"launch at least {wanted:,} blocks, smaller ones if the work "
                          "is fixed", block, occ.warps)
            return Verdict(occ, given, given * occ.warps_per_block, (GRID,), (more,),
                           multiprocessors, grid_blocks)
    for name, slots, per_block in ((THREADS, sm.thread_slots, block.threads),
                                   (WARPS, sm.warp_slots, occ.warps_per_block)):
        if slots != math.inf and occ.blocks * per_block >= slots:
            return Verdict(occ, occ.blocks, occ.warps, (name,), (), multiprocessors,
                           grid_blocks, slots)
    limiting = tuple(name for name in occ.limiting if name != BLOCK_SLOTS) or \
        tuple(name for name in occ.limiting if name == BLOCK_SLOTS)
    changes = [c for name in occ.limiting
               for c in [_change(sm, block, occ, name, max_threads)] if c is not None]
    return Verdict(occ, occ.blocks, occ.warps, limiting, tuple(changes), multiprocessors,
                   grid_blocks)


def _change(sm: SmResources, block: BlockUsage, occ: Occupancy, name: str,
            max_threads: float) -> Change | None:
    """The change of resource `name` alone that raises the warps per multiprocessor the
    most (the least change among those); None when no change of it alone does."""
    def warps(usage: BlockUsage) -> int:
        return blocks_per_sm(sm, usage).warps

    if name == REGISTERS:
        for regs in range(block.registers_per_thread - 1, 0, -1):
            usage = BlockUsage(block.threads, regs, block.shared_bytes)
            if warps(usage) > occ.warps:
                return Change(name, "keep fewer values per thread in registers, at most "
                              f"{regs} registers per thread", usage, warps(usage))
        return None
    if name == SHARED_MEMORY:
        for more in range(occ.blocks + 1, int(min(occ.block_slots, 64)) + 1):
            per_block = sm.shared_bytes // more - sm.shared_reserved
            per_block = per_block // sm.shared_unit * sm.shared_unit
            usage = BlockUsage(block.threads, block.registers_per_thread, int(per_block))
            if 0 < per_block < block.shared_bytes and warps(usage) > occ.warps:
                return Change(name, "load/store shared memory in phases, at most "
                              f"{_bytes(per_block)} per block", usage, warps(usage))
        return None
    # threads, warps or block slots: another number of threads per block
    top = min(max_threads, sm.thread_slots)
    best: tuple[tuple[int, int], int] | None = None
    for threads in range(sm.warp_size, int(top if top != math.inf else 1024) + 1,
                         sm.warp_size):
        got = warps(BlockUsage(threads, block.registers_per_thread, block.shared_bytes))
        key = (got, -abs(threads - block.threads))  # most warps, nearest to the current
        if got > occ.warps and (best is None or key > best[0]):
            best = (key, threads)
    if best is None:
        return None
    (got, _), threads = best
    direction = "more" if threads > block.threads else "fewer"
    return Change(name, f"use {direction} threads per block: {threads} give {got} warps",
                  BlockUsage(threads, block.registers_per_thread, block.shared_bytes), got)


def _bytes(value: float) -> str:
    n = int(value)
    return f"{n // 1024} kB" if n >= 1024 and n % 1024 == 0 else f"{n:,} B"


# ----------------------------------------------------------------------------- messages


def verdict_for(kernel: Any, sm: Multiprocessor, usage: BlockUsage) -> Verdict:
    """`verdict` for a feedback function's kernel: the grid is the blocks the kernel
    launches when the values give them (else unknown, and the hint says so)."""
    from mcl.feedback.kernel_api import MissingValues

    group = next((g.name for g in kernel.facts.hwd.par_groups()
                  if g.unit is not None and g.unit.name == sm.block_unit), None)
    grid: int | None = None
    if group is not None:
        try:
            grid = kernel.context.units(group)
        except MissingValues:
            grid = None
    return verdict(sm.resources, usage, sm.count, grid, sm.max_threads)


def limit_phrase(v: Verdict, multiprocessors: str = "SMPs") -> str:
    """`shared memory limits`, `threads limit`, `threads and registers limit`: what allows
    no more blocks, with the verb agreeing (the paper: "shared memory limits"); the grid
    with its figures; full slots with the figure that shows nothing is left."""
    if v.limiting == (GRID,):
        return (f"the grid of {v.grid_blocks:,} blocks for {_count(v.multiprocessors)} "
                f"{multiprocessors} limits")
    plural = len(v.limiting) > 1 or v.limiting[0] not in (SHARED_MEMORY, GRID)
    text = f"{' and '.join(v.limiting)} limit{'' if plural else 's'}"
    if v.full:
        who = "the block already uses" if v.blocks == 1 else f"the {v.blocks} blocks already use"
        text += (f", but {who} all {_count(v.slots_in_use)} {v.limiting[0][:-1]} slots: "
                 "nothing to gain")
    return text


def figures(v: Verdict, usage: BlockUsage, counted: bool = False) -> dict[str, Any]:
    """The values of an occupancy message: what a block needs (the registers per thread
    the compiler's count where `counted`, else `registers_per_thread_estimate`), what each
    resource allows (`limit_*`) and the blocks the grid has when known."""
    registers = "registers_per_thread" if counted else "registers_per_thread_estimate"
    out: dict[str, Any] = {"threads_per_block": usage.threads,
                           "shared_bytes_per_block": usage.shared_bytes,
                           registers: usage.registers_per_thread}
    out.update({f"limit_{name.replace(' ', '_')}": limit
                for name, limit in v.occupancy.limits.items()
                if not (isinstance(limit, float) and math.isnan(limit))})  # no such slots
    if v.grid_blocks is not None:
        out["grid_blocks"] = v.grid_blocks
    return out


def occupancy_hint(v: Verdict, multiprocessor_name: str, basis: str) -> str:
    hint = (f"more warps per {multiprocessor_name} hide memory latency; each limit_* value is "
            f"the number of blocks one resource allows; registers per thread: {basis}")
    if v.grid_blocks is None and v.multiprocessors != math.inf:
        hint += (f"; a grid of fewer than {_count(v.blocks * v.multiprocessors)} blocks "
                 "would limit it further: give the sizes (-D) to check")
    if any("threads per block" in a for a in v.advice):
        hint += ("; another number of threads per block is counted with the same registers "
                 "per thread and shared memory per block")
    return hint


def _count(n: float) -> str:
    return f"{int(n):,}"


def occupancy_message(kernel: Any, sm: Multiprocessor, max_registers: int,
                      advise_resources: bool = True) -> OccupancyFinding | None:
    """The `occupancy` message of a GPU description's feedback function (hopper, fermi):
    blocks and warps per SM, what limits them, and a change that raises them (`verdict`);
    registers per thread capped at the architecture's `max_registers`. Without
    `advise_resources` only the grid gets advice (allocation rules that no measurement
    has checked: a fact, not a change that might slow the kernel)."""
    usage, registers = kernel_usage(kernel, sm)
    if usage.threads == 0:
        return None
    usage = replace(usage, registers_per_thread=min(usage.registers_per_thread, max_registers))
    counted = registers.counted
    v = verdict_for(kernel, sm, limiting_usage(usage, registers))
    if not advise_resources and v.limiting != (GRID,):
        v = replace(v, changes=())
    warp_slots = int(sm.resources.warp_slots)
    if v.limiting == (GRID,):
        limited = (f"the grid of {v.grid_blocks:,} blocks for {int(v.multiprocessors):,} "
                   "SMs")
    elif v.full:
        limited = (f"{v.limiting[0]}, all {int(v.slots_in_use):,} {v.limiting[0][:-1]} "
                   "slots in use")
    else:
        limited = " and ".join(v.limiting)
    register_figure = ("{registers_per_thread} registers per thread, the compiler's count"
                       if counted else "about {registers_per_thread_estimate} registers per "
                       "thread, an estimate that limits nothing")
    text = ("occupancy: {blocks_per_sm:block|blocks} per SM ({warps_per_sm} of "
            f"{{warp_slots}} warps, {100 * v.warps // warp_slots}%), limited by "
            f"{limited} ({{threads_per_block}} threads per block, "
            "{shared_bytes_per_block} B " + f"{sm.shared_space} memory per block and "
            f"{register_figure})")
    if v.advice:
        text += ": " + "; ".join(v.advice)
    values = {"blocks_per_sm": v.blocks, "warps_per_sm": v.warps, "warp_slots": warp_slots,
              **figures(v, usage, counted)}
    if not counted:
        estimated = blocks_per_sm(sm.resources, usage)
        if estimated.blocks < v.occupancy.blocks and v.limiting != (GRID,):
            values["blocks_per_sm_estimated_registers"] = estimated.blocks
            text += ("; with the estimated registers {blocks_per_sm_estimated_registers:"
                     "block|blocks} would fit, had the compiler used that many")
    if v.multiprocessors != math.inf:
        values["multiprocessors"] = int(v.multiprocessors)
    if v.changes:  # the most warps a change advised gives (the time model's "after")
        values["warps_per_sm_after"] = max(c.warps for c in v.changes)
    change = RaiseOccupancy(v.warps, max(c.warps for c in v.changes), v.limiting, v.advice) \
        if v.changes else None
    return OccupancyFinding(
        kernel.message(text, severity="suggestion" if v.advice else "info",
                       code=code_of(OccupancyFinding), values=values,
                       hint=occupancy_hint(v, "SM", registers.basis)),
        change=change, warps_per_sm=v.warps, warp_slots=warp_slots, blocks_per_sm=v.blocks,
        multiprocessors=None if v.multiprocessors == math.inf else int(v.multiprocessors),
        grid_blocks=v.grid_blocks, registers_per_thread=float(usage.registers_per_thread),
        block_limits=tuple((name, float(limit)) for name, limit in v.occupancy.limits.items()
                           if not (isinstance(limit, float) and math.isnan(limit))),
        refusal=refusal(sm.resources, limiting_usage(usage, registers), v.occupancy))
