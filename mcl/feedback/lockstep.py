"""What the units of one lock-step group (a warp) do together, for the feedback functions
of the GPU descriptions (the paper's section 6.5: "coalesced memory access for threads and
the number of bank conflicts for threads"; fermi's `load_store_optimality`).

The evaluator steps through the units of a block the way the hardware groups them: the
foreach statements over the lock-step par_group and over the par_groups between it and
the par_unit that declares memory (fermi: warps x threads inside a block) form one space,
innermost dimension fastest, cut into lock-step groups of the group's size (the first 32
units are the first warp). Every other unit and every for-loop stays at its first index,
except the for-loops a branch's conditions (divergence) or a shared-memory access's
address (the bank-conflict survey) depend on: those are followed iteration by iteration.
A shared-memory access that no unit of the first block runs is surveyed in the last
block (`last_block`: a grid's tail).

A statement under an `if` runs only for the lanes whose guards hold ("active lanes"):
a halo load under `if (ty == 0 && tx < 8)` is 8 lanes of the first warp, and a last-row
load under `if (ty == BH - 1)` is the last warp's. The guards are decided lane by lane
with the values of `-D` (exact enumeration); a guard that depends on data leaves the
lane active (the hardware may run it). Only the lock-step groups with active lanes count,
and of those the one that costs most is reported.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import sympy

from mcl.feedback.budget import fallen_back
from mcl.feedback.compiler_vectors import Copies, wide_copies
from mcl.feedback.conflict_classes import IterationClasses
from mcl.feedback.data_conflicts import DataRequest, data_index, data_request, layout_of
from mcl.feedback.facts.costs import executions
from mcl.feedback.facts.kept_results import KeptResults
from mcl.feedback.facts.kernel import Guard, Item, Loop
from mcl.feedback.facts.layout import flat_index
from mcl.feedback.facts.stable_dummies import made, make_again, reusing
from mcl.feedback.findings import (
    AccessPlace,
    BankConflictFinding,
    CoalesceAccess,
    DivergentBranch,
    Finding,
    OptimalMemoryAccess,
    RemoveBankConflict,
    UncoalescedAccess,
    WarpAccessFinding,
    WarpAccessUnknown,
    code_of,
    declaration,
)
from mcl.feedback.issued_accesses import Twin, reloaded, twins
from mcl.feedback.kernel_api import (
    Kernel,
    MemoryInstruction,
    MissingValues,
    NotStatic,
    Number,
    NumericEvaluator,
    UnitCursor,
)
from mcl.feedback.loop_points import LoopPoints
from mcl.feedback.messages import FeedbackSeverity
from mcl.feedback.values import evaluate
from mcl.feedback.warp_access import BankConflict, Coalescing, bank_conflict, coalescing
from mcl.hdl.model import HardwareDescription, ParGroup, ParUnit
from mcl.mcpl import ast
from mcl.mcpl.symbolic_values import forget_with_per_process

# The codes of the findings built here for the descriptions' feedback functions, as their
# record types declare them (mcl.feedback.findings; the catalogue is docs/feedback.md).
MESSAGE_CODES = tuple(declaration(kind) for kind in (
    OptimalMemoryAccess, UncoalescedAccess, BankConflictFinding, WarpAccessUnknown,
    DivergentBranch))


# A block has at most 32 warps on every NVIDIA GPU we describe (1024 threads); beyond
# this many lock-step groups the rest of a block is not examined.
MAX_GROUPS = 64


def block_groups(hwd: HardwareDescription, lockstep: ParGroup) -> set[str]:
    """The lock-step par_group and those around it up to the par_unit that declares a
    memory space (the block, with its shared memory): the units stepped through to find
    every lock-step group of one block."""
    chain = hwd.par_groups()
    names = {lockstep.name}
    for group in reversed(chain[:chain.index(lockstep)]):
        if group.unit is None or group.unit.spaces:
            break
        names.add(group.name)
    return names


@dataclass(frozen=True)
class Lanes:
    """One lock-step group: its number in the block, its size, and the positions (0-based,
    in the group) of the lanes that run the statement."""

    group: int
    size: int
    active: tuple[int, ...]

    @property
    def partial(self) -> bool:
        return len(self.active) < self.size


class LockstepWalk:
    """Steps the evaluator through the lock-step groups of one block around `loops`."""

    def __init__(self, kernel: Kernel, lockstep: ParGroup, loops: Sequence[Loop]):
        self.kernel = kernel
        self.size = int(lockstep.count)
        groups = block_groups(kernel.hwd.description, lockstep)
        chosen = [loop for loop in loops if loop.kind == "foreach" and loop.group in groups]
        self.cursor = UnitCursor(kernel.evaluator, lockstep.name, chosen)

    def groups(self, every: bool) -> Iterator[tuple[int, range]]:
        """(group number, unit positions) of the first lock-step group, or of every one
        of the block (at most MAX_GROUPS)."""
        count = self.cursor.count
        total = min(math.ceil(count / self.size), MAX_GROUPS) if every else min(1, count)
        for g in range(total):
            yield g, range(g * self.size, min((g + 1) * self.size, count))

    def lanes(self, guards: Sequence[Guard], every: bool) -> Iterator[Lanes]:
        """The lock-step groups with at least one lane that runs under `guards`; the
        evaluator is left at the last active lane of each when it is yielded."""
        try:
            for g, positions in self.groups(every):
                decided = self.kernel.evaluator.holds_each(self.cursor, positions, guards)
                active = [k for k, holds in enumerate(decided) if holds is not False]
                if positions:
                    self.cursor.seek(positions[-1])
                if active:
                    yield Lanes(g, len(positions), tuple(active))
        finally:
            self.cursor.reset()

    def units(self, lanes: Lanes) -> list[int]:
        """The cursor positions of the active lanes of one lock-step group."""
        return [lanes.group * self.size + lane for lane in lanes.active]

    def holds(self, lanes: Lanes, guards: Sequence[Guard]) -> list[bool | None]:
        """`NumericEvaluator.holds(guards)` at each active lane of one lock-step group, the
        evaluator back at the walk's start after."""
        try:
            return self.kernel.evaluator.holds_each(self.cursor, self.units(lanes), guards)
        finally:
            self.reset()

    def at(self, lanes: Lanes, lane: int) -> None:
        """Move the evaluator to one lane of a lock-step group."""
        self.cursor.seek(lanes.group * self.size + lane)

    def reset(self) -> None:
        self.cursor.reset()


def most_active_lanes(kernel: Kernel, item: Item) -> tuple[int, ...] | None:
    """The positions (in its group) of the lanes of the lock-step group of the first
    block with the most lanes that run `item`, its guards decided lane by lane at the
    kernel's values (a halo column under `if (w == 0 && l < 8)`: lanes 0 to 7 of the
    first warp); None where the description has no lock-step group, the values do not
    decide every figure, or no lane runs it."""
    description = kernel.hwd.description
    warp = description.lockstep(description.executing_unit().name)
    if warp is None:
        return None
    if not (kept_surveys.enabled and reusing()):
        return _most_active_lanes(kernel, warp, item)
    from mcl.feedback.survey_inputs import item_key  # (as in `_kept_walk`)
    groups = frozenset(block_groups(description, warp))
    found: tuple[int, ...] | None = _kept(
        lambda: item_key(kernel, warp, groups, item, (), ("most active lanes",)),
        item.loops, lambda: _most_active_lanes(kernel, warp, item))
    return found


def _most_active_lanes(kernel: Kernel, warp: ParGroup, item: Item
                       ) -> tuple[int, ...] | None:
    walk = LockstepWalk(kernel, warp, item.loops)
    try:
        found = list(walk.lanes(item.guards, every=True))
    except (MissingValues, NotStatic):
        return None
    return max((lanes.active for lanes in found), key=len, default=None)


def instruction_lanes(kernel: Kernel, lockstep: ParGroup, instruction: MemoryInstruction
                      ) -> Iterator[tuple[Lanes, list[int]]]:
    """For each lock-step group of one block that runs `instruction`, its active lanes
    and the byte addresses they touch. Every group is examined, not only the first (as
    the paper's function does): in a row of 126 floats the second warp's row straddles
    two lines although the first warp's does not."""
    guards = instruction.access.item.guards
    walk = LockstepWalk(kernel, lockstep, instruction.access.item.loops)
    for lanes in list(walk.lanes(guards, every=True)):
        try:
            addresses = kernel.evaluator.addresses_each(walk.cursor, walk.units(lanes),
                                                        instruction)
        finally:
            walk.reset()
        yield lanes, addresses


# A for-loop of at most this many iterations, inside the units, whose variable moves a
# unit's address (a thread's VEC neighbouring elements, `for (v = 0; v < VEC; v++)`)
# is followed through all its iterations when deciding whether a load is coalesced.
MAX_FILL_TRIPS = 16


def fill_loops(kernel: Kernel, instruction: MemoryInstruction) -> list[Loop]:
    """The for-loops inside the units around `instruction` with few, constant iterations:
    the warp's accesses over all their iterations (the elements each thread handles one
    after another) fill the lines that one iteration leaves part-used."""
    loops = instruction.access.item.loops
    inner = max((k for k, x in enumerate(loops) if x.kind == "foreach"), default=-1)
    out = []
    for loop in loops[inner + 1:]:
        try:
            trips = kernel.evaluator.trips(loop)
        except (MissingValues, NotStatic):
            continue
        if loop.kind == "for" and 1 < trips <= MAX_FILL_TRIPS:
            out.append(loop)
    return out


def filled_addresses(kernel: Kernel, lockstep: ParGroup, instruction: MemoryInstruction,
                     lanes: Lanes, loops: Sequence[Loop]) -> list[int]:
    """The addresses the active lanes of one lock-step group touch over every iteration
    of `loops` (guards decided at each), the lanes of an iteration together
    (`NumericEvaluator.holds_each`, `addresses_each`: a warp's 32 lanes times each iteration
    of a thread's VEC and UNROLL loops, lane by lane, were a fifth of gesummv
    hopper_v5's feedback)."""
    return [address for _, address in _filled(kernel, lockstep, instruction, lanes, loops)]


def filled_by_lane(kernel: Kernel, lockstep: ParGroup, instruction: MemoryInstruction,
                   lanes: Lanes, loops: Sequence[Loop]) -> dict[int, list[int]]:
    """`filled_addresses` of each active lane on its own (lane -> its addresses over the
    iterations of `loops`; a lane that runs in none has none), from one walk of the
    iterations with the lanes together: one lane at a time, the wide-access check made
    32 walks per warp, three quarters of matmul hopper (v2)'s feedback."""
    found: dict[int, list[int]] = {lane: [] for lane in lanes.active}
    for lane, address in _filled(kernel, lockstep, instruction, lanes, loops):
        found[lane].append(address)
    return found


def _filled(kernel: Kernel, lockstep: ParGroup, instruction: MemoryInstruction,
            lanes: Lanes, loops: Sequence[Loop]) -> Iterator[tuple[int, int]]:
    """(lane, address) of the active lanes that run `instruction` in each iteration of
    `loops` in turn, the lanes of an iteration in order."""
    walk = LockstepWalk(kernel, lockstep, instruction.access.item.loops)
    ev = kernel.evaluator
    units = walk.units(lanes)
    found: list[tuple[int, int]] = []
    try:
        for _ in fill_iterations(ev, loops):
            decided = ev.holds_each(walk.cursor, units, instruction.access.item.guards)
            running = [(lane, unit) for lane, unit, holds
                       in zip(lanes.active, units, decided, strict=True) if holds is not False]
            addresses = ev.addresses_each(walk.cursor, [unit for _, unit in running],
                                          instruction)
            found += zip((lane for lane, _ in running), addresses, strict=True)
    finally:
        walk.reset()
    return iter(found)


def fill_iterations(ev: NumericEvaluator, loops: Sequence[Loop]) -> Iterator[None]:
    """Places `ev` at every combination of the iterations of `loops` in turn, the first
    loop fastest, and back at their first iterations after."""
    counts = [ev.trips(loop) for loop in loops]
    try:
        for combination in range(math.prod(counts)):
            for loop, count in zip(loops, counts, strict=True):
                combination, here = divmod(combination, count)
                ev.set_position(loop, here)
            yield
    finally:
        for loop in loops:
            ev.set_position(loop, 0)


@contextmanager
def last_block(kernel: Kernel, lockstep: ParGroup, instruction: MemoryInstruction
               ) -> Iterator[None]:
    """The evaluator at the last unit of every foreach around `instruction` outside the
    lock-step space (the last block of the grid), and back at the first after. An access
    no unit of the first block runs may be one of the grid's tail (the zeros stored
    past n under `else` of `if (i < n)`): its lanes are those of the last block, whose
    requests the device serves like any other."""
    groups = block_groups(kernel.hwd.description, lockstep)
    outer = [loop for loop in instruction.access.item.loops
             if loop.kind == "foreach" and loop.group not in groups]
    ev = kernel.evaluator
    try:
        for loop in outer:
            ev.set_position(loop, max(ev.trips(loop) - 1, 0))
        yield
    finally:
        for loop in outer:
            ev.set_position(loop, 0)


# Widths of one access to banked memory that the hardware serves in parts of the warp
# (CUDA C++ Programming Guide, "Shared Memory", compute capability 5.x and later: a
# 64-bit access is split into half-warp requests, a 128-bit one into quarter-warps).
WIDE_ACCESS_BYTES = (8, 16)


@dataclass(frozen=True)
class RequestCost:
    """What one warp's request to banked memory costs: its wavefronts (passes over the
    banks) against the fewest its lanes' words need (`ideal`: one per part of the warp
    the hardware serves at a time, Nsight Compute's ideal wavefronts), and the worst
    part's conflict."""

    wavefronts: float
    ideal: float
    worst: BankConflict


def request_cost(lanes: Lanes, addresses: Sequence[int], width: int, banks: int
                 ) -> RequestCost:
    """The cost of one request whose lanes each access `width` bytes from their address:
    a 4-byte access is served for the whole warp at once; a 64-bit one a half warp at a
    time and a 128-bit one a quarter warp at a time (CUDA C++ Programming Guide, "Shared
    Memory", compute capability 5.x and later), so neighbouring doubles of 32 lanes (two
    banks each) are no conflict. Each part costs its worst bank's distinct words."""
    if width not in WIDE_ACCESS_BYTES:
        worst = bank_conflict(addresses, banks, BANK_WORD_BYTES)
        return RequestCost(float(worst.degree), 1.0, worst)
    part = lanes.size * BANK_WORD_BYTES // width
    words = width // BANK_WORD_BYTES
    phases: dict[int, list[int]] = {}
    for lane, address in zip(lanes.active, addresses, strict=True):
        phases.setdefault(lane // part, []).extend(
            address + BANK_WORD_BYTES * k for k in range(words))
    conflicts = [bank_conflict(phase, banks, BANK_WORD_BYTES) for phase in phases.values()]
    worst = max(conflicts, key=lambda c: c.degree)
    return RequestCost(float(sum(c.degree for c in conflicts)), float(len(conflicts)), worst)


def wide_conflict(kernel: Kernel, lockstep: ParGroup, instruction: MemoryInstruction,
                  lanes: Lanes, banks: int) -> RequestCost | None:
    """The cost, per 4-byte access, when each lane's accesses over the innermost loop, a
    fill loop, are neighbouring 4-byte words that the compiler reads in 64- or 128-bit
    accesses: the widest that divides the loop's bytes and every lane's first word
    (hopper (v2)'s `l_b[..][tj * VEC + v]`, one 128-bit load; convolution hopper_v2's
    ten words `l_a[..][COLS * tx + k]` from an even word, five 64-bit loads, as Nsight
    Compute's access sizes show, docs/validation.md). Each wide access is judged on its
    own words and for its part of the warp (`request_cost`); the worst of them. None
    when the accesses are not of that form."""
    loop = innermost_fill_loop(kernel, instruction)
    if loop is None or instruction.element_bytes != BANK_WORD_BYTES:
        return None
    span = kernel.evaluator.trips(loop) * BANK_WORD_BYTES
    per_lane = contiguous_lanes(kernel, lockstep, instruction, lanes, loop)
    if per_lane is None:
        return None
    width = next((w for w in sorted(WIDE_ACCESS_BYTES, reverse=True)
                  if span % w == 0 and all(words[0] % w == 0 for _, words in per_lane)),
                 None)
    if width is None:
        return None
    step = width // BANK_WORD_BYTES
    costs = [request_cost(lanes, [words[first] for _, words in per_lane], width, banks)
             for first in range(0, span // BANK_WORD_BYTES, step)]  # one wide access a step
    worst = max((c.worst for c in costs), key=lambda c: c.degree)
    # per 4-byte access of the source: the wide accesses' wavefronts over their ideal
    return RequestCost(sum(c.wavefronts for c in costs) / sum(c.ideal for c in costs), 1.0,
                       worst)


def innermost_fill_loop(kernel: Kernel, instruction: MemoryInstruction) -> Loop | None:
    """The loop right around `instruction` where it is a fill loop (`fill_loops`): the
    loop a compiler may issue as wider accesses, or code generation as one vector copy."""
    innermost = instruction.access.item.loops[-1:]
    return next((x for x in fill_loops(kernel, instruction) if x in innermost), None)


def contiguous_lanes(kernel: Kernel, lockstep: ParGroup, instruction: MemoryInstruction,
                     lanes: Lanes, loop: Loop) -> list[tuple[int, list[int]]] | None:
    """Each active lane with its addresses over the iterations of `loop`, where every
    lane's are neighbouring elements in order, one an iteration (a thread's VEC
    consecutive words: what one wide access of the loop's bytes holds); else None."""
    element = instruction.element_bytes or BANK_WORD_BYTES
    span = kernel.evaluator.trips(loop) * element
    per_lane = []
    for lane, words in filled_by_lane(kernel, lockstep, instruction, lanes, [loop]).items():
        if not words or words != list(range(words[0], words[0] + span, element)):
            return None
        per_lane.append((lane, words))
    return per_lane


# The iterations of the for-loops around a shared-memory access, inside the units, that
# the bank-conflict survey follows one by one (a work-efficient scan's `ai = off * (2 * t
# + 1) - 1` conflicts 2-, 4-, 8-, 16-way on successive levels of off); beyond this many
# (of the loops together) it says which loops it did not follow.
MAX_CONFLICT_ITERATIONS = 256


@dataclass(frozen=True)
class ConflictSurvey:
    """The bank conflicts of one access over the lock-step groups of a block and the
    iterations of `loops` (the for-loops its address or guards depend on, followed one by
    one): the worst request (its group, its conflict and the loops' values there), and
    over every request the wavefronts against the ideal, the requests and the active
    lanes they served. `unfollowed`: loops the address depends on whose iterations were
    not followed (their first one stands for all: the figures are not decided)."""

    lanes: Lanes
    worst: BankConflict
    at: tuple[int, ...]
    loops: tuple[Loop, ...]
    iterations: int
    wavefronts: float
    ideal: float
    requests: int
    lane_runs: int
    unfollowed: tuple[Loop, ...]
    # The wavefronts and their ideal as the device counts them at this access's line: a
    # 64-bit pair's at the access that issues it, none at its twin
    # (mcl.feedback.issued_accesses)
    issued_wavefronts: float = 0.0
    issued_ideal: float = 0.0
    # Where the data decide the index (mcl.feedback.data_conflicts): how many elements it
    # can reach; `worst` is then the worst the data can make, the wavefronts the expected
    spread: int | None = None

    @property
    def average(self) -> float:
        """Wavefronts per ideal wavefront over every request (Nsight Compute's
        `L1 Wavefronts Shared` over `L1 Wavefronts Shared Ideal` for the line)."""
        return self.wavefronts / self.ideal if self.ideal else 1.0

    @property
    def passes(self) -> float:
        """Passes over the banks per request, on average."""
        return self.wavefronts / self.requests if self.requests else 1.0

    @property
    def extra_passes(self) -> float:
        """Passes per request beyond the fewest its lanes' words need, on average (a
        64-bit request needs two)."""
        return (self.wavefronts - self.ideal) / self.requests if self.requests else 0.0

    @property
    def uniform(self) -> bool:
        """Every request as bad as the worst."""
        return math.isclose(self.average, self.worst.degree)


def conflict_survey(kernel: Kernel, lockstep: ParGroup, instruction: MemoryInstruction,
                    banks: int) -> ConflictSurvey | None:
    """The bank conflicts of `instruction` over every lock-step group of a block and every
    iteration of the for-loops inside the units that its address or guards depend on
    (`_address_loops`, up to MAX_CONFLICT_ITERATIONS together); None when no unit of the
    block runs it. A loop that moves every lane's address alike only rotates the banks: a
    4-byte request conflicts alike in each of its iterations, and the first stands for all,
    unless a request conflicts and is read as part of a wider access (a 64-bit pair,
    mcl.feedback.issued_accesses; `wide_conflict`), whose alignment the shift may change;
    then those loops are followed too. Raises MissingValues and NotStatic as `instruction_lanes`."""
    survey, reshaped = _survey(kernel, lockstep, instruction, banks, shifts=False)
    if reshaped:
        survey, _ = _survey(kernel, lockstep, instruction, banks, shifts=True)
    return survey


# Results kept across the worker's analyses, per access: a kernel has a few dozen
# accesses, and the worker sees one kernel at a time.
MAX_KEPT_SURVEYS = 256


@dataclass(frozen=True)
class _KeptWalk:
    """A result of the walk for one access, with its loops named by their places among
    the loops around the access (the next analysis's loops are other objects), and the
    dummies it made (stand-ins for data in the formulas it asked for) by name and
    assumptions, made again where the kept result is used."""

    result: ConflictSurvey | list[tuple[Lanes, list[int]]] | tuple[int, ...] | None
    loops: tuple[int, ...]
    unfollowed: tuple[int, ...]
    dummies: tuple[dict[Any, int], dict[Any, int]]

    @classmethod
    def of(cls, result: ConflictSurvey | list[tuple[Lanes, list[int]]] | tuple[int, ...] | None,
           around: Sequence[Loop], dummies: tuple[dict[Any, int], dict[Any, int]]
           ) -> _KeptWalk:
        def places(loops: Sequence[Loop]) -> tuple[int, ...]:
            return tuple(next(k for k, x in enumerate(around) if x is loop) for loop in loops)
        if not isinstance(result, ConflictSurvey):
            return cls(result, (), (), dummies)
        return cls(replace(result, loops=(), unfollowed=()), places(result.loops),
                   places(result.unfollowed), dummies)

    def at(self, around: Sequence[Loop]) -> Any:
        if not isinstance(self.result, ConflictSurvey):
            return self.result
        return replace(self.result, loops=tuple(around[k] for k in self.loops),
                       unfollowed=tuple(around[k] for k in self.unfollowed))


kept_surveys: KeptResults[_KeptWalk] = KeptResults(MAX_KEPT_SURVEYS)
forget_with_per_process(kept_surveys)


def _kept_walk(kernel: Kernel, lockstep: ParGroup, instruction: MemoryInstruction,
               banks: int, walk: Callable[[], Any]) -> Any:
    """`walk()` for one access (the survey of a shared access, `banks` banks; the lanes
    of a global one, 0), kept across the worker's analyses by everything it reads
    (mcl.feedback.survey_inputs): an edit that leaves the access's address, guards and
    loops as they were finds its result, the warps not walked again."""
    if not (kept_surveys.enabled and reusing()):
        return walk()
    # (only the editor's worker keeps walks: a check does not import the key's module)
    from mcl.feedback.survey_inputs import survey_key

    def key() -> Hashable | None:
        groups = frozenset(block_groups(kernel.hwd.description, lockstep))
        pairs = twins(kernel, instruction, fill_loops(kernel, instruction)) if banks else []
        return survey_key(kernel, lockstep, groups, banks, instruction, pairs)

    return _kept(key, instruction.access.item.loops, walk)


def _kept(key_of: Callable[[], Hashable | None], around: Sequence[Loop],
          walk: Callable[[], Any]) -> Any:
    """`walk()`, kept under `key_of()` (None: not kept) unless its budget fell back;
    the loops of its result named by their places in `around`."""
    try:
        key = key_of()
    except (MissingValues, NotStatic):
        key = None  # (the walk says which values, as without the key)
    if key is None:
        return walk()
    found = kept_surveys.get(key)
    if found is not None:
        make_again(*found.dummies)
        return found.at(around)
    before = made()
    result = walk()
    if not fallen_back():
        kept_surveys.put(key, _KeptWalk.of(result, around, (before, made())))
    return result


def _banked_survey(kernel: Kernel, lockstep: ParGroup, instruction: MemoryInstruction,
                   banks: int) -> ConflictSurvey | None:
    """`_walked_survey`, kept per access (`_kept_walk`)."""
    survey: ConflictSurvey | None = _kept_walk(
        kernel, lockstep, instruction, banks,
        lambda: _walked_survey(kernel, lockstep, instruction, banks))
    return survey


def _kept_lanes(kernel: Kernel, lockstep: ParGroup, instruction: MemoryInstruction
                ) -> list[tuple[Lanes, list[int]]]:
    """`instruction_lanes` of a global access, kept per access (`_kept_walk`); the
    addresses a copy of the kept ones."""
    found: list[tuple[Lanes, list[int]]] = _kept_walk(
        kernel, lockstep, instruction, 0,
        lambda: list(instruction_lanes(kernel, lockstep, instruction)))
    return [(lanes, list(addresses)) for lanes, addresses in found]


def _walked_survey(kernel: Kernel, lockstep: ParGroup, instruction: MemoryInstruction,
                   banks: int) -> ConflictSurvey | None:
    """`_block_survey` of the first block, or where no unit of it runs the access, of the
    last (`last_block`: a tail's branch, the `else` of `if (i < n)`)."""
    survey = _block_survey(kernel, lockstep, instruction, banks)
    if survey is None:
        with last_block(kernel, lockstep, instruction):
            survey = _block_survey(kernel, lockstep, instruction, banks)
    return survey


def _block_survey(kernel: Kernel, lockstep: ParGroup, instruction: MemoryInstruction,
                  banks: int) -> ConflictSurvey | None:
    """`conflict_survey`, or where the data decide the address, `data_survey`; raises
    the survey's NotStatic where neither can judge the access."""
    try:
        return conflict_survey(kernel, lockstep, instruction, banks)
    except NotStatic:
        survey = data_survey(kernel, lockstep, instruction, banks)
        if survey is None:
            raise
        return survey


def data_survey(kernel: Kernel, lockstep: ParGroup, instruction: MemoryInstruction,
                banks: int) -> ConflictSurvey | None:
    """The bank conflicts of a 4-byte access whose index the data decide
    (mcl.feedback.data_conflicts) over the lock-step groups of a block: each request's
    worst case and its expected wavefronts where the data spread the lanes evenly over
    the subscript's values. The loops inside the units stand at their first iteration
    (named `unfollowed` where the other subscripts move with them). None where the
    split is not known; raises NotStatic where the other subscripts or the guards are."""
    index, layout = data_index(kernel, instruction), layout_of(kernel, instruction)
    if index is None or layout is None or instruction.element_bytes != BANK_WORD_BYTES:
        return None
    record, offset = layout
    known = sympy.sympify(index.known)
    ev = kernel.evaluator
    loops, unfollowed = _address_loops(kernel, instruction, shifts=False)
    walk = LockstepWalk(kernel, lockstep, instruction.access.item.loops)
    best: tuple[Lanes, BankConflict, tuple[int, ...]] | None = None
    wavefronts = 0.0
    requests = lane_runs = 0
    costs: dict[tuple[int, ...], DataRequest] = {}  # by the lanes' offsets
    with LoopPoints(ev, loops) as points:
        for _ in points:
            values = points.values(kernel)
            for lanes in list(walk.lanes(instruction.access.item.guards, every=True)):
                try:
                    offsets = ev.values_each(walk.cursor, walk.units(lanes), known)
                finally:
                    walk.reset()
                key = tuple(int(v) * record + offset for v in offsets)
                if key not in costs:
                    costs[key] = data_request(key, index, record, BANK_WORD_BYTES, banks)
                request = costs[key]
                wavefronts += request.wavefronts
                requests += 1
                lane_runs += len(lanes.active)
                if best is None or request.worst.degree > best[1].degree:
                    best = (lanes, request.worst, values)
    if best is None:
        return None
    return ConflictSurvey(best[0], best[1], best[2], tuple(loops), len(points), wavefronts,
                          float(requests), requests, lane_runs, tuple(unfollowed), wavefronts,
                          float(requests), spread=index.values if index.spread else None)


def _survey(kernel: Kernel, lockstep: ParGroup, instruction: MemoryInstruction, banks: int,
            shifts: bool) -> tuple[ConflictSurvey | None, bool]:
    """`conflict_survey` over the loops `_address_loops` chooses, and whether a conflicting
    request was read as part of a wider access."""
    ev = kernel.evaluator
    loops, unfollowed = _address_loops(kernel, instruction, shifts)
    costing = _RequestCosts(kernel, lockstep, instruction, banks, loops)
    best: tuple[Lanes, BankConflict, tuple[int, ...]] | None = None
    wavefronts = ideal = issued_wavefronts = issued_ideal = 0.0
    requests = lane_runs = 0
    # The requests of each class of iterations that cost alike, computed once
    # (mcl.feedback.conflict_classes); every iteration still counts. A twin one word
    # apart in some iterations only tells every iteration apart.
    classes = None if any(t.step.free_symbols for t in costing.twins) else \
        IterationClasses.of(kernel, instruction, loops, banks, BANK_WORD_BYTES)
    known: dict[Hashable, list[tuple[Lanes, RequestCost, tuple[float, float]]]] = {}
    with LoopPoints(ev, loops) as points:
        for point in points:
            values = points.values(kernel)
            key = None if classes is None else \
                classes.key(kernel, dict(zip(loops, point, strict=True)))
            if key is None:
                here = costing.at(point)
            elif key in known:
                here = known[key]
            else:
                here = known[key] = costing.at(point)
            for lanes, cost, issued in here:
                wavefronts += cost.wavefronts
                ideal += cost.ideal
                issued_wavefronts += issued[0]
                issued_ideal += issued[1]
                requests += 1
                lane_runs += len(lanes.active)
                if best is None or cost.worst.degree > best[1].degree:
                    best = (lanes, cost.worst, values)
    if best is None:
        return None, costing.reshaped
    return ConflictSurvey(best[0], best[1], best[2], tuple(loops), len(points), wavefronts,
                          ideal, requests, lane_runs, tuple(unfollowed), issued_wavefronts,
                          issued_ideal), costing.reshaped


class _RequestCosts:
    """The requests of one access at the survey's iterations, each with its cost: as 4-byte
    accesses, as a merged 64-bit pair (mcl.feedback.issued_accesses) or as the wide
    accesses a lane's neighbouring words make (`wide_conflict`); and the wavefronts and
    ideal the device counts at the access's line (a pair's at the access that issues it).
    `reshaped`: a conflicting request was read as part of a wider access."""

    def __init__(self, kernel: Kernel, lockstep: ParGroup, instruction: MemoryInstruction,
                 banks: int, loops: Sequence[Loop]):
        self.kernel, self.lockstep, self.instruction = kernel, lockstep, instruction
        self.banks, self.loops = banks, loops
        self.twins = twins(kernel, instruction, fill_loops(kernel, instruction))
        self.width = instruction.element_bytes or BANK_WORD_BYTES
        # A wide access covers every iteration of the innermost loop: one answer per group
        # and iteration of the other loops.
        self.innermost = instruction.access.item.loops[-1:]
        self.wide: dict[tuple[object, ...], RequestCost | None] = {}
        self.reshaped = False

    def _pair(self) -> tuple[Twin, int] | None:
        """The twin one word apart at the current iteration, and the offset to the lower
        word."""
        for twin in self.twins:
            offset = twin.offset(self.kernel)
            if offset is not None:
                return twin, offset
        return None

    def at(self, point: tuple[int, ...]
           ) -> list[tuple[Lanes, RequestCost, tuple[float, float]]]:
        """The requests of the lock-step groups at iteration `point` of the loops (where
        the evaluator is), with their costs and the (wavefronts, ideal) the device counts
        at the access's line."""
        kernel, instruction, banks = self.kernel, self.instruction, self.banks
        found = []
        pair = self._pair()
        for lanes, addresses in list(instruction_lanes(kernel, self.lockstep, instruction)):
            cost = request_cost(lanes, addresses, self.width, banks)
            issued = (cost.wavefronts, cost.ideal)
            if pair is not None and cost.worst.conflict:
                twin, offset = pair
                lower = [a + offset for a in addresses]
                self.reshaped = True
                if all(a % (2 * BANK_WORD_BYTES) == 0 for a in lower):
                    both = request_cost(lanes, lower, 2 * BANK_WORD_BYTES, banks)
                    # (one 64-bit request for two 4-byte accesses: per access, its
                    # passes over the fewest; the device counts it at one of the two)
                    cost = RequestCost(both.wavefronts / both.ideal, 1.0, both.worst)
                    issued = (both.wavefronts, both.ideal) if twin.carries else (0.0, 0.0)
            if cost.worst.conflict and self.width == BANK_WORD_BYTES:
                key = (lanes, tuple(p for loop, p in zip(self.loops, point, strict=True)
                                    if loop not in self.innermost))
                if key not in self.wide:
                    self.wide[key] = wide_conflict(kernel, self.lockstep, instruction, lanes,
                                                   banks)
                    for loop, position in zip(self.loops, point, strict=True):
                        kernel.evaluator.set_position(loop, position)  # (the fill loop went back)
                wide = self.wide[key]
                if wide is not None:
                    cost, issued = wide, (wide.wavefronts, wide.ideal)
                self.reshaped = True
            found.append((lanes, cost, issued))
        return found


def _shifts_every_lane_alike(address: sympy.Expr, counter: sympy.Symbol,
                             units: set[sympy.Basic]) -> bool:
    """Does the loop's counter move every lane's address by the same number of elements?
    Shifting all words of a request alike only rotates the banks (matmul fermi (v1)'s
    `l_a[ei][k2]`, one word for the warp in every k2)."""
    if not address.is_polynomial(counter):
        return False
    slope = sympy.diff(address, counter)
    return not slope.free_symbols & (units | {counter})


def _address_loops(kernel: Kernel, instruction: MemoryInstruction, shifts: bool
                   ) -> tuple[list[Loop], list[Loop]]:
    """The for-loops inside the units whose counters the guards of `instruction` read or
    its address, unless they move every lane alike (`shifts` False): those the survey
    follows (constant trip counts, the same for every unit, MAX_CONFLICT_ITERATIONS
    together, outermost first) and those it cannot."""
    item = instruction.access.item
    symbolic = kernel.facts.evaluator
    address = sympy.sympify(flat_index(kernel.facts, instruction.access))
    guarded: set[sympy.Basic] = set()
    for guard in item.guards:
        condition = symbolic.sym(guard.cond, guard.scope)
        if condition is not None:
            guarded |= sympy.sympify(condition).free_symbols
    inner = max((k for k, x in enumerate(item.loops) if x.kind == "foreach"), default=-1)
    units = {symbolic.counter(loop) for loop in item.loops[:inner + 1]}
    counters = {symbolic.counter(loop) for loop in kernel.facts.loops}
    followed: list[Loop] = []
    unfollowed: list[Loop] = []
    total = 1
    for loop in reversed(item.loops[inner + 1:]):
        shape = symbolic.shape(loop)
        if loop.kind != "for" or shape.counter not in guarded and (
                shape.counter not in address.free_symbols or (
                    not shifts and _shifts_every_lane_alike(address, shape.counter, units))):
            continue
        trips = None
        if shape.exact and not sympy.sympify(shape.trips).free_symbols & counters:
            try:
                trips = kernel.evaluator.trips(loop)
            except NotStatic:
                trips = None
        if trips is None or total * max(trips, 1) > MAX_CONFLICT_ITERATIONS:
            unfollowed.insert(0, loop)
        elif trips > 1:
            followed.insert(0, loop)
            total *= trips
    return followed, unfollowed


def lanes_phrase(lanes: Lanes, lockstep: ParGroup) -> str:
    """'the 32 threads of a warp', or 'the 8 active threads of warp 0' (the names of the
    description's lock-step par_group and the par_unit around it)."""
    units = lockstep.unit.name + "s" if lockstep.unit is not None else lockstep.name
    parent = lockstep.parent
    group = parent.name if isinstance(parent, ParUnit) else "lock-step group"
    if lanes.partial:
        return f"the {len(lanes.active)} active {units} of {group} {lanes.group}"
    return f"the {lanes.size} {units} of a {group}"


# Fermi tuning guide / CUDA C Programming Guide 2.x and 9.0: banks are 32 bits wide. HDL
# states the number of banks (nr_banks) but not their width.
BANK_WORD_BYTES = 4


def memory_access_messages(kernel: Kernel, transaction_bytes: int | None = None
                           ) -> list[Finding]:
    """Coalescing of loads/stores in cached spaces and bank conflicts of accesses to banked
    memory, for the active lanes of each lock-step group of a block (the paper's section
    5.1, fermi: "the memory access patterns of a, b, and c are optimal, and [...] there
    are no bank conflicts in the access of shared memory"). A global access moves whole
    lines of the innermost cache, or, where the architecture moves less (`transaction_bytes`:
    hopper's 32 B sectors), units of that size."""
    hwd = kernel.hwd.description
    thread = hwd.executing_unit().name
    warp = hwd.lockstep(thread)
    if warp is None:
        return []
    messages: list[Finding] = []
    # (space, warp executions, transactions per execution, the fewest that would do)
    costs: list[tuple[str, Number | None, float, int]] = []
    pending: list[tuple[str, Number | None, float, WarpAccessFinding]] = []
    coalesced = conflict_free = 0
    missing: set[str] = set()
    issued: dict[int, list[float]] = {}  # by line: the device's wavefronts and ideal
    copies = wide_copies(kernel.facts)
    for instruction in kernel.instructions:
        if instruction.unit != thread or not instruction.indices:
            continue
        memories = hwd.memories_for(instruction.space)
        caches = [m for m in memories if m.is_cache and m.line_size]
        banked = [m for m in memories if not m.is_cache and m.nr_banks]
        if not caches and not banked:
            continue
        banks = int(banked[0].nr_banks or 0) if banked else 0  # nonzero where banked
        try:
            if banked:
                survey = _banked_survey(kernel, warp, instruction, banks)
            else:
                groups = _kept_lanes(kernel, warp, instruction)
        except MissingValues as exc:  # collect every name, then ask for all at once
            missing.update(exc.names)
            missing.update(_address_needs(kernel, instruction))
            continue
        except NotStatic as exc:
            messages.append(WarpAccessUnknown(kernel.message(
                f"{instruction.kind} of {instruction.text}: cannot tell whether it is "
                f"optimal for a warp: {exc}", span=instruction.span, severity="warning",
                code=code_of(WarpAccessUnknown)), access=_place(instruction)))
            continue
        if banked:
            if survey is None:
                continue  # no unit of the examined block runs it
            runs = _survey_runs(kernel, instruction, survey)
            costs.append((instruction.space, runs, survey.passes, 1))
            _add_issued(kernel, instruction, survey, issued)
            if survey.worst.conflict:
                pending.append((instruction.space, runs, survey.extra_passes,
                                _conflict_finding(kernel, warp, instruction, survey, banks)))
            elif survey.unfollowed:
                messages.append(_conflicts_undecided(kernel, instruction, survey))
            else:
                conflict_free += 1
        elif groups:  # (none: no unit of the examined block runs it)
            element = instruction.element_bytes or BANK_WORD_BYTES
            line = transaction_bytes or int(caches[0].line_size or 0)  # nonzero: filtered
            unit = "line" if transaction_bytes is None else "sector"
            lanes, touched, result, runs, decided = _judged_request(
                kernel, warp, instruction, groups, line, copies)
            # Only a load's lines fill up over a thread's iterations: the L1 keeps them
            # for the next. A store is written through to the L2 request by request, each
            # with its own part-used sectors (Nsight Compute's L2 write sectors of such
            # stores, docs/validation.md), so it is judged per request.
            filling = fill_loops(kernel, instruction) \
                if not result.optimal and instruction.kind == "load" else []
            if result.optimal or (filling and coalescing(
                    filled_addresses(kernel, warp, instruction, lanes, filling), element,
                    line).optimal):
                coalesced += 1  # (over the iterations of `filling`, the lines fill up)
                costs.append((instruction.space, runs, result.minimum, result.minimum))
            else:
                costs.append((instruction.space, runs, result.lines, result.minimum))
                whole = int(caches[0].line_size or 0) if caches else 0
                wavefronts = coalescing(touched, element, whole) \
                    if unit == "sector" and whole > line else None
                coalesce = CoalesceAccess(
                    _place(instruction), result.lines, result.minimum, line, None,
                    extra_wavefronts=0 if wavefronts is None
                    else wavefronts.lines - wavefronts.minimum, wavefront_bytes=whole)
                pending.append((instruction.space, runs if decided else None,
                                result.lines - result.minimum, UncoalescedAccess(kernel.message(
                    f"{instruction.kind} of {instruction.text} is not coalesced: "
                    + lanes_phrase(lanes, warp) + f" touch {{lines:{unit}|{unit}s}} of "
                    "{line_bytes} B where {minimum_lines} would do, so the warp moves more "
                    "memory than it uses" + ("" if decided else _UNDECIDED_COPY),
                    span=instruction.span, code=code_of(UncoalescedAccess),
                    severity="suggestion" if decided else "info", values={
                        "lines": result.lines, "minimum_lines": result.minimum,
                        "line_bytes": line, "active_lanes": len(lanes.active),
                        "store": int(instruction.kind == "store")},
                    hint="let consecutive threads access consecutive elements"),
                    change=coalesce, access=coalesce.access,
                    active_lanes=len(lanes.active))))
    if missing:
        raise MissingValues(missing)
    messages += [_with_gain(_with_line(finding, issued), runs, extra, costs, space)
                 for space, runs, extra, finding in pending]
    if not messages and (coalesced or conflict_free):
        parts = []
        if coalesced:
            parts.append("all {coalesced} global loads/stores are coalesced")
        parts.append("no bank conflicts in the {conflict_free} shared-memory accesses"
                     if conflict_free else "no shared-memory accesses")
        messages.append(OptimalMemoryAccess(kernel.message(
            "optimal memory access: " + ", ".join(parts), severity="info",
            code=code_of(OptimalMemoryAccess),
            values={"coalesced": coalesced, "conflict_free": conflict_free}),
            coalesced=coalesced, conflict_free=conflict_free))
    return messages


# What an access in the shape of a vector copy says where nothing tells whether code
# generation issues its loop as one wide access (mcl.feedback.compiler_vectors).
_UNDECIDED_COPY = (" in each iteration of its loop; whether the code generator issues the "
                   "loop as one wide access per thread (coalesced where the lanes' bytes "
                   "over all its iterations are) is not known here, so no gain is stated")


def _judged_request(kernel: Kernel, warp: ParGroup, instruction: MemoryInstruction,
                    groups: list[tuple[Lanes, list[int]]], line: int, copies: Copies | None
                    ) -> tuple[Lanes, list[int], Coalescing, Number | None, bool]:
    """The request of a global access that is judged: of the lock-step groups that run
    it (`groups`: their lanes and addresses in one iteration), the one that touches the
    most `line`-byte units beyond the fewest, with its addresses and their coalescing;
    how often a group issues it; and whether that is the request the hardware sees
    (`_copy_loop`). Where the generated code makes its loop one wide access, the request
    holds the lanes' bytes over all the loop's iterations, once a pass of the loop."""
    element = instruction.element_bytes or BANK_WORD_BYTES
    wide, decided = _copy_loop(kernel, warp, instruction, groups[0][0], copies)
    if wide is not None:
        groups = [(lanes, filled_addresses(kernel, warp, instruction, lanes, [wide]))
                  for lanes, _ in groups]
    lines = [(lanes, addresses, coalescing(addresses, element, line))
             for lanes, addresses in groups]
    lanes, touched, result = max(lines, key=lambda c: c[2].lines - c[2].minimum)
    runs = _warp_runs(kernel, instruction, groups[0][0])
    if wide is not None and runs is not None:
        runs /= kernel.evaluator.trips(wide)
    return lanes, touched, result, runs, decided


def _copy_loop(kernel: Kernel, warp: ParGroup, instruction: MemoryInstruction, lanes: Lanes,
               copies: Copies | None) -> tuple[Loop | None, bool]:
    """The loop around a global access that the generated code issues as one wide access
    per unit (a vector copy, `copies`), and whether that is known: the hardware sees one
    request holding each lane's bytes over all the loop's iterations (a 128-bit store of
    4 floats per thread), so that request is what is judged. Where nothing tells
    (`copies` None), an access whose lanes each walk neighbouring elements through the
    loop (the shape of such a copy) is undecided."""
    loop = innermost_fill_loop(kernel, instruction)
    if loop is None:
        return None, True
    if copies is not None:
        return (loop if loop.span in copies else None), True
    return None, contiguous_lanes(kernel, warp, instruction, lanes, loop) is None


# A change that saves less than this share of a space's transactions is a fact, not a
# suggestion (as Nsight Compute's rules stay quiet below a small estimated speedup).
MIN_GAIN = 0.03


def _warp_runs(kernel: Kernel, instruction: MemoryInstruction, lanes: Lanes
               ) -> Number | None:
    """How often one lock-step group issues `instruction` in the kernel: its executions
    (opstats, per unit) over the active units of a group; None without the sizes."""
    count, _, _ = executions(kernel.facts, instruction.access.item)
    value = evaluate(count, kernel.values).numeric
    return None if value is None else value / max(len(lanes.active), 1)


def _survey_runs(kernel: Kernel, instruction: MemoryInstruction, survey: ConflictSurvey
                 ) -> Number | None:
    """How often the lock-step groups issue `instruction` in the kernel: its executions
    (opstats, per unit) over the active lanes of an average request of the survey."""
    count, _, _ = executions(kernel.facts, instruction.access.item)
    value = evaluate(count, kernel.values).numeric
    if value is None:
        return None
    return value * survey.requests / max(survey.lane_runs, 1)


def _conflict_finding(kernel: Kernel, warp: ParGroup, instruction: MemoryInstruction,
                      survey: ConflictSurvey, banks: int) -> BankConflictFinding:
    """The bank-conflict message of one access: its worst request's degree, and where the
    requests differ (a scan's levels), the iteration of the worst and the wavefronts per
    request over all of them, which the time model costs."""
    conflict, lanes = survey.worst, survey.lanes
    change = RemoveBankConflict(_place(instruction), conflict.degree, banks, BANK_WORD_BYTES,
                                None, survey.extra_passes, survey.average,
                                data_spread=survey.spread)
    values: dict[str, object] = {"conflict_degree": conflict.degree, "banks": banks,
                                 "active_lanes": len(lanes.active)}
    where = ""
    if survey.loops and not survey.uniform:
        names = ", ".join(f"'{loop.name}'" for loop in survey.loops)
        at = ", ".join(f"{loop.name} = {v}" for loop, v in zip(survey.loops, survey.at,
                                                                 strict=True))
        where = (f" at {at} (the worst of the {{iterations}} iterations of "
                 f"loop{'s' if len(survey.loops) > 1 else ''} {names}; "
                 "{wavefronts_per_request} wavefronts per request over all of them)")
        values |= {"iterations": survey.iterations,
                   "wavefronts_per_request": round(survey.average, 2)}
    elif not survey.uniform:
        where = " ({wavefronts_per_request} wavefronts per request over the block's warps)"
        values["wavefronts_per_request"] = round(survey.average, 2)
    if survey.spread is not None:
        where = (" at most, the data deciding which of {spread} elements each lane "
                 "touches; {wavefronts_per_request} wavefronts per request where the data "
                 "spread them evenly")
        values |= {"spread": survey.spread,
                   "wavefronts_per_request": round(survey.average, 4)}
    if survey.unfollowed:
        where += " in the iterations examined (" + _unfollowed_phrase(survey) + ")"
    # (the data choose the banks: no padding moves the lanes apart, so it is a fact)
    data = survey.spread is not None
    return BankConflictFinding(kernel.message(
        f"{instruction.kind} of {instruction.text} in {instruction.space} memory: "
        "{conflict_degree}-way bank conflict for " + lanes_phrase(lanes, warp) + where
        + ": the accesses to one bank run one after another ("
        f"{banks} banks of {BANK_WORD_BYTES} B; bank {conflict.bank} is hit most)",
        span=instruction.span, code=code_of(BankConflictFinding), values=values,
        severity="info" if data else "suggestion",
        hint="the data decide the banks: padding the array does not move the lanes apart"
        if data else "pad the array or change the index so that consecutive threads "
                     "use consecutive words"), change=change, access=change.access,
        active_lanes=len(lanes.active))


def _add_issued(kernel: Kernel, instruction: MemoryInstruction, survey: ConflictSurvey,
                issued: dict[int, list[float]]) -> None:
    """Add the wavefronts and ideal the device counts for `instruction` to its line's,
    unless the compiler issues no load for it (mcl.feedback.issued_accesses)."""
    if instruction.span is None or reloaded(kernel, instruction,
                                            fill_loops(kernel, instruction)):
        return
    totals = issued.setdefault(instruction.span.line, [0.0, 0.0])
    totals[0] += survey.issued_wavefronts
    totals[1] += survey.issued_ideal


def _with_line(finding: WarpAccessFinding, issued: dict[int, list[float]]
               ) -> WarpAccessFinding:
    """A bank-conflict finding with its line's wavefronts over their ideal, over the
    accesses the compiler issues there (Nsight Compute's figure for the line)."""
    if not isinstance(finding, BankConflictFinding) or finding.span is None:
        return finding
    wavefronts, ideal = issued.get(finding.span.line, (0.0, 0.0))
    if not ideal:
        return finding
    return replace(finding, change=replace(finding.conflict, line_wavefronts=wavefronts / ideal))


def _unfollowed_phrase(survey: ConflictSurvey) -> str:
    names = ", ".join(f"'{loop.name}'" for loop in survey.unfollowed)
    return (f"only the first iteration of loop{'s' if len(survey.unfollowed) > 1 else ''} "
            f"{names}: too many iterations, or a count that is not known or differs "
            "between units, so the others are not decided")


def _conflicts_undecided(kernel: Kernel, instruction: MemoryInstruction,
                         survey: ConflictSurvey) -> WarpAccessUnknown:
    """No conflict in the iterations examined, but the address depends on loops whose
    other iterations were not: neither a conflict nor the promise of none."""
    return WarpAccessUnknown(kernel.message(
        f"{instruction.kind} of {instruction.text} in {instruction.space} memory: no bank "
        "conflict in the iterations examined, " + _unfollowed_phrase(survey),
        span=instruction.span, severity="info", code=code_of(WarpAccessUnknown)),
        access=_place(instruction))


def _place(instruction: MemoryInstruction) -> AccessPlace:
    return AccessPlace.of(instruction.access, instruction.text, instruction.kind)


def _with_gain(finding: WarpAccessFinding, runs: Number | None, extra: float,
               costs: list[tuple[str, Number | None, float, int]], space: str
               ) -> WarpAccessFinding:
    """The estimated gain of removing `extra` transactions per execution: the share of
    all transactions of the space the kernel issues (at the sizes given) that it saves.
    Under MIN_GAIN the message is a fact. The change gets its warp executions here: only
    where every access of the space has them does the time model weigh it."""
    if runs is None or any(r is None for s, r, _, _ in costs if s == space):
        return finding
    message = finding.message
    total = sum(r * cost for s, r, cost, _ in costs if s == space and r is not None)
    gain = runs * extra / total if total else 0.0
    saves = "its conflicts are" if isinstance(finding.change, RemoveBankConflict) \
        and finding.change.data_spread is not None else "fixing it saves"
    text = message.text + (f"; {saves} about {gain:.0%} of the kernel's {space} "
                           "memory transactions" if gain >= 0.01 else
                           f"; {saves} under 1% of the kernel's {space} memory "
                           "transactions")
    # `transactions_saved` is the share; the time it saves, `estimated_gain`, is the time
    # model's (mcl.feedback.analyses.timemodel), which reads the change's warp executions.
    assert isinstance(finding.change, (CoalesceAccess, RemoveBankConflict))
    return replace(finding.revised(text=text, severity=(
        message.severity if gain >= MIN_GAIN else FeedbackSeverity.INFO),
        values=(*message.values, ("transactions_saved", evaluate(gain, {})),
                ("warp_executions", evaluate(runs, {})))), transactions_saved=float(gain),
        change=replace(finding.change, warp_executions=float(runs)))


def _address_needs(kernel: Kernel, instruction: MemoryInstruction) -> set[str]:
    """The names the address of `instruction` needs besides those of the unit counts."""
    try:
        kernel.evaluator.address(instruction)
    except MissingValues as exc:
        return set(exc.names)
    except NotStatic:
        pass
    return set()


# The iterations of the for-loops around a branch, inside the units, that the walk
# follows one by one: a tree reduction's `if (t < s)` splits a warp only in its steps
# with s below the warp's size, which the first iteration does not show. Beyond this many
# iterations (of the loops together), the outer loops stay at their first iteration.
MAX_ITERATIONS = 64


@dataclass(frozen=True)
class _Divergence:
    """How one branch splits the lanes of the lock-step groups over the iterations the
    walk follows: the group that splits most evenly (`taken` of its active lanes take the
    then-branch), in how many of the `iterations` some group splits, and the lane slots
    that wait while a path they do not take runs (summed over those groups and
    iterations), with the loop variables' values in each divergent iteration."""

    lanes: Lanes
    taken: int
    divergent: int
    iterations: int
    idle: int
    at: tuple[tuple[int, ...], ...]


def divergence_messages(kernel: Kernel) -> list[Finding]:
    """Branches whose condition differs between the active lanes of one lock-step group
    (the paper's section 2: a simd_group "executes in lock-step"; CUDA C Programming
    Guide, SIMT architecture: "if threads of a warp diverge via a data-dependent
    conditional branch, the warp executes each branch path taken, disabling threads that
    are not on that path"). An if/else taken both ways runs both paths one after the
    other (a suggestion); an if that only some lanes take leaves the others idle while
    it runs (a fact). The figure is the lanes on each path of the group that diverges
    most; the conditions are decided lane by lane, in each iteration of the for-loops
    around the branch whose trip count is the same for every unit (up to MAX_ITERATIONS),
    other loops at their first iteration. Where such loops are followed, the message
    says in which iterations the lanes diverge and the lane slots that wait."""
    warp = kernel.hwd.description.lockstep(kernel.hwd.description.executing_unit().name)
    if warp is None:  # no lock-step group: every unit runs its own path
        return []
    messages: list[Finding] = []
    missing: set[str] = set()
    reaching: dict[tuple[object, ...], list[Lanes]] = {}
    for item in kernel.facts.items:
        if item.kind != "if" or item.on_host:
            continue
        node = item.node
        walk = LockstepWalk(kernel, warp, item.loops)
        guard = Guard(node, True, item.scope)
        loops = _iterated_loops(kernel, item.loops, (*item.guards, guard))
        try:
            found = _diverge(kernel, walk, tuple(item.guards), guard, loops, reaching,
                             both=node.orelse is not None)
        except MissingValues as exc:
            missing.update(exc.names)
            continue
        if found is not None:
            messages.append(_divergence_message(kernel, warp, node, found, loops))
    if missing:
        raise MissingValues(missing)
    return messages


def _divergence_message(kernel: Kernel, warp: ParGroup, node: ast.If, found: _Divergence,
                        loops: Sequence[Loop]) -> DivergentBranch:
    lanes, taken = found.lanes, found.taken
    active = len(lanes.active)
    both = node.orelse is not None
    text = ("divergent branch: " + lanes_phrase(lanes, warp)
            + " take different paths ({lanes_then} the "
            "then-branch, {lanes_else} " + ("the else-branch" if both else "skip it") + ")")
    values: dict[str, object] = {"lanes_then": taken, "lanes_else": active - taken}
    if loops:
        names = ", ".join(f"'{loop.name}'" for loop in loops)
        if len(loops) == 1:  # (`s = 16, 8, 4`; of several loops, `i = 0, j = 1; ...`)
            at = f"{loops[0].name} = " + ", ".join(str(v) for (v,) in found.at)
        else:
            at = "; ".join(", ".join(f"{loop.name} = {v}" for loop, v in zip(
                loops, point, strict=True)) for point in found.at)
        text += (" in {divergent_iterations} of the {iterations:iteration|iterations} of "
                 f"loop{'s' if len(loops) > 1 else ''} {names} ({at}), "
                 "{idle_lanes:lane slot|lane slots} idle")
        values |= {"divergent_iterations": found.divergent, "iterations": found.iterations,
                   "idle_lanes": found.idle}
    text += ": " + ("the warp runs both paths one after the other, each with only part of "
                    "its lanes" if both else "the other lanes wait while the then-branch runs")
    # The cost: of the lane slots the group issues for the branch (one pass of `size`
    # lanes per path it runs), the share that does work.
    efficiency = sympy.Rational(active if both else taken, (2 if both else 1) * lanes.size)
    values["lane_efficiency"] = efficiency
    return DivergentBranch(kernel.message(
        text, span=node.span, severity="suggestion" if both else "info",
        code=code_of(DivergentBranch), values=values,
        hint="let the lanes of one warp take the same path: branch on a value that is the "
             "same for a whole warp (e.g. the warp's index), or give each path to other "
             "warps" if both else None), lane_efficiency=float(efficiency))


def _iterated_loops(kernel: Kernel, loops: Sequence[Loop], guards: Sequence[Guard]
                    ) -> list[Loop]:
    """The for-loops inside the units around a branch whose iterations the walk follows:
    those that `guards` (the branch's condition and those around it) depend on, with a
    trip count known from the values and the same for every unit and every iteration
    around (no loop counter in it), innermost first while their iterations together stay
    within MAX_ITERATIONS; outermost first. (A loop the conditions do not depend on
    splits the lanes alike in every iteration: its first one stands for all.)"""
    inner = max((k for k, x in enumerate(loops) if x.kind == "foreach"), default=-1)
    symbolic = kernel.facts.evaluator
    counters = {symbolic.counter(loop) for loop in kernel.facts.loops}
    read: set[sympy.Symbol] = set()
    for guard in guards:
        condition = symbolic.sym(guard.cond, guard.scope)
        if condition is not None:
            read |= sympy.sympify(condition).free_symbols
    chosen: list[Loop] = []
    total = 1
    for loop in reversed(loops[inner + 1:]):
        shape = symbolic.shape(loop)
        if loop.kind != "for" or not shape.exact or shape.counter not in read or \
                sympy.sympify(shape.trips).free_symbols & counters:
            continue
        try:
            trips = kernel.evaluator.trips(loop)
        except (MissingValues, NotStatic):
            continue  # (stays at its first iteration, as without the values)
        if trips < 2:
            continue
        if total * trips > MAX_ITERATIONS:
            break
        chosen.insert(0, loop)
        total *= trips
    return chosen


def _diverge(kernel: Kernel, walk: LockstepWalk, guards: tuple[Guard, ...], guard: Guard,
             loops: Sequence[Loop], reaching: dict[tuple[object, ...], list[Lanes]],
             both: bool) -> _Divergence | None:
    """How `guard` splits the lock-step groups in each iteration of `loops`; None when no
    group splits in any (or a lane cannot be decided)."""
    ev = kernel.evaluator
    best: tuple[Lanes, int] | None = None
    divergent = idle = 0
    at: list[tuple[int, ...]] = []
    with LoopPoints(ev, loops) as points:
        for _ in points:
            splits = _splits(walk, _active_lanes(kernel, walk, guards, reaching),
                             guard)
            if splits is None:
                return None
            if not splits:
                continue
            divergent += 1
            at.append(points.values(kernel))
            idle += sum(len(lanes.active) if both else len(lanes.active) - taken
                        for lanes, taken in splits)
            for lanes, taken in splits:
                if best is None or _evenness(lanes, taken) > _evenness(*best):
                    best = (lanes, taken)
    if best is None:
        return None
    return _Divergence(best[0], best[1], divergent, len(points), idle, tuple(at))


def _evenness(lanes: Lanes, taken: int) -> int:
    return min(taken, len(lanes.active) - taken)


def _active_lanes(kernel: Kernel, walk: LockstepWalk, guards: tuple[Guard, ...],
                  known: dict[tuple[object, ...], list[Lanes]]
                  ) -> list[Lanes]:
    """`walk.lanes(guards, every=True)`, from the lanes active under all guards but the
    last (`known`, by loops and guards): the `if`s of a nest share the guards around
    them, so each lane decides each condition once, not once per `if` inside it."""
    # (and the iteration the walk is at: it follows some loops iteration by iteration)
    key = (tuple(walk.cursor.loops), guards, kernel.evaluator.moved())
    if key not in known:
        if not guards:
            known[key] = list(walk.lanes((), every=True))
        else:
            found = []
            for lanes in _active_lanes(kernel, walk, guards[:-1], known):
                decided = walk.holds(lanes, guards[-1:])
                kept = [lane for lane, holds in zip(lanes.active, decided, strict=True)
                        if holds is not False]
                if kept:
                    found.append(Lanes(lanes.group, lanes.size, tuple(kept)))
            known[key] = found
    return known[key]


def _splits(walk: LockstepWalk, active: list[Lanes], guard: Guard
            ) -> list[tuple[Lanes, int]] | None:
    """The lock-step groups whose `active` lanes split on `guard`, each with the number
    that take it; None when a lane cannot be decided."""
    found = []
    for lanes in active:
        decided = walk.holds(lanes, (guard,))
        if None in decided:
            return None
        taken = decided.count(True)
        if 0 < taken < len(lanes.active):
            found.append((lanes, taken))
    return found
