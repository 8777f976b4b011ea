"""The time model: how long a kernel takes at a GPU leaf, from the figures the feedback
already states, and what each suggestion would save (docs/feedback.md, "Time estimate").

The roofline (section 8 of the paper's future work, mcl.feedback.analyses.roofline) says
how fast a kernel could be at best; a programmer choosing between suggestions needs the
model's estimate of how fast it is, and of how fast it would be after each change, in the
manner of Nsight Compute's "estimated speedup". Each phase of the kernel (below) takes
the largest of three limits, each built from figures of the feedback over figures of
the description:

- device memory: the compulsory bytes of each space the level's memory holds (the
  roofline's `bytes_<space>`) over its bandwidth times `ACHIEVED_BANDWIDTH`;
- the SM: compute (the floating-point operations over the arithmetic peak) plus on-chip
  memory (every byte the shared-memory accesses move, every byte the global accesses
  move through the L1, the roofline's `bytes_<space>_no_reuse`, and the transactions
  that bank conflicts and uncoalesced accesses add, their messages' `warp_executions` x
  extra transactions, over the banked memory's bandwidth: hopper's and fermi's L1 and
  shared memory are one SRAM). The two add: the same warp schedulers issue both;
- latency (Little's law, as Hong and Kim's MWP model, ISCA 2009): an SM completes at
  most `warps x loads in flight per warp` global loads per memory latency, so its
  warp-level global loads take `loads x latency / (warps x loads in flight)`; the warps
  per SM are the occupancy message's, the loads in flight per warp the global loads of
  the kernel's most frequent statement body, the latency the description's interconnect
  `latency` at the SM clock for the compulsory share of the bytes and the cache's
  `latency` (hopper's l2) for the share the caches serve. A loop around a barrier adds
  a floor: no warp of a block starts a pass's loads before every warp has passed the
  barrier of the pass before, and each pass waits for data no unit has loaded yet, so
  each pass that loads waits one device-memory latency, however much of its traffic the
  cache serves and however many loads a warp has in flight (a 2.5-D stencil marching
  through 254 planes, its halo from the cache: Little's law at the mean latency gave
  40% of the measured time). Each phase waits at least `passes x latency` for each
  round of blocks the busiest SM runs one after another, less what the other blocks
  of the SM issue meanwhile in the loop's other phases where they have two warps or
  more on each scheduler (`Figures.cover`: one block loads its tile while another
  multiplies).
- loaded latency, where the description states a `latency_knee` on its link to device
  memory: a phase whose waits come near its traffic takes longer than the larger of
  the two, as its loads queue in the busy memory (`loaded_seconds`).
- partial-sector writes: a store whose lanes touch more sectors than their bytes fill
  (a column of a row-major array, one 4 B element in each of 32 sectors) writes each of
  them in part, and the cache that holds device memory takes every such sector as a
  write of its own, where it merges a full sector's bytes at once; their bytes over the
  cache's `partial_write_bandwidth` (hopper's l2), where the description states one: a
  limit of the whole kernel, which the phases added are no less than (a warp does not
  wait for its stores; `Figures.partial_seconds`).

The warps of an SM overlap the three limits, but not across a barrier: it holds every
warp of a block until all arrive, and the blocks of a wave reach their barriers
together, so the work on either side of one does not overlap. The kernel is split at
its barriers into phases (the statements between two barriers in the source), each
with its share of the figures: its own statements' on-chip bytes, flops and loads, the
compulsory traffic of each array in the first phase that reads it and the first that
writes it, the extra transactions of each access in its own. The estimate is the sum
over the phases of each one's largest limit, no less than the partial-sector writes of
all of them; a kernel without barriers is one phase.

A grid that does not fill the SMs evenly runs the busiest one longer (its blocks over
the average), which scales the SM and latency terms. The SM terms and the latencies are
at the description's SM clock, or at the one the context gives (`mcl profile`: the clock
the profiler ran the kernel at, below the stated boost clock; docs/feedback.md, "The
clock"); device memory's bandwidth keeps its own clock. A kernel without arithmetic has
its memory roofs all the same (mcl.feedback.analyses.roofline, `flops` = 0).

Every suggestion the model can re-evaluate gets `estimated_seconds_after` and
`estimated_gain` (before over after), and its finding the `ModelGain`: the model reads
the change each finding proposes (mcl.feedback.findings), never a message's text or
figure names: the occupancy finding's `RaiseOccupancy` at its `warps_per_sm_after`, a
`CoalesceAccess` or `RemoveBankConflict` without its extra transactions, a warp-uniform
element kept in a register (`KeepInRegister`) without the loads it saves (its
`loads_saved` and their `bytes_saved` off the on-chip bytes of its phase, and off its
global loads when they go `through_cache`). A change the model does not
capture (a load moved to a faster space, more elements per unit, a privatised store,
balanced trip counts, fewer fetches again from a cache) states no gain: docs/feedback.md,
"Each suggestion's gain", says for each what the model lacks. Under `MIN_GAIN` a suggestion is a
fact. Without every figure (no peak, no latency, no occupancy, sizes missing) the model
says nothing.

This analysis runs last: it reads the findings of the analyses before it
(`AnalysisContext.earlier`), by record type, and returns them, revised, with its own
`TimeEstimate`.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import sympy

from mcl.diagnostics import Span
from mcl.feedback.analysis import AnalysisContext
from mcl.feedback.compiler_budget import NotCompiled
from mcl.feedback.compiler_instructions import Lines, compiler_instructions
from mcl.feedback.emit import Emitter, seconds_text
from mcl.feedback.facts.contention import is_atomic, store_contention
from mcl.feedback.facts.costs import (
    COMPUTATIONAL,
    DATA,
    decided_by_data,
    executions,
    function_costs,
    part_costs,
)
from mcl.feedback.facts.issue_counts import phase_instructions
from mcl.feedback.facts.kernel import IF
from mcl.feedback.facts.layout import element_count
from mcl.feedback.facts.sizes import parameter_bytes, space_and_size
from mcl.feedback.findings import (
    MIN_GAIN,
    BankConflictFinding,
    CoalesceAccess,
    DivergentBranch,
    Finding,
    KeepInRegister,
    ModelGain,
    OccupancyFinding,
    RooflineFinding,
    TimeEstimate,
    WarpAccessFinding,
    code_of,
    declaration,
    first,
    number,
)
from mcl.feedback.messages import FeedbackSeverity
from mcl.feedback.phrases import if_lines
from mcl.feedback.values import evaluate
from mcl.hdl.model import DEFAULT_CACHE_LINE, Quantity
from mcl.hdl.peak import Bandwidth, bandwidth, compute_peaks, peak_flops
from mcl.identity import Ref
from mcl.mcpl import ast

MESSAGE_CODES = (declaration(TimeEstimate),)
F = TypeVar("F", bound=Finding)

# The share of a memory's stated bandwidth a streaming kernel reaches; the stated figure
# is the memory's peak (docs/hdl.md, "Peak throughput": hopper.hdl's nominal one, as
# `mcl hwd detect` states it), not a measured copy, which would count the share twice.
# Calibrated on the calibration half of the validation cases (the odd positions of the
# recorded cases in name order; docs/validation.md "Time estimate"): the median, over
# those the model calls bound by device memory, of the compulsory traffic's time at the
# stated bandwidth over the measured time, at the SM clock measured: 0.794 over five cases
# from `benchmarks/validate_feedback.py --calibrate` on the base-clock H100 counters (raw
# benchmarks/results/2026-12-07-h100-timemodel-calibration-r12.json).
ACHIEVED_BANDWIDTH = 0.79

# What one kernel launch costs beyond its work where the description states no `latency`
# on its device (docs/hdl.md): an empty kernel of 1 to 1,056 blocks takes 2.2-3.2 us,
# median about 2.5 us, in Nsight Compute's gpu__time_duration on an H100 SXM (measured for
# this model; hopper.hdl states it, 4,000 cycles at ncu's locked clock). A nominal figure
# for an NVIDIA GPU: a kernel of a few microseconds is mostly this, and no change of its
# occupancy or accesses shortens it.
LAUNCH_SECONDS = 2.5e-6

DEVICE_MEMORY, ON_CHIP, COMPUTE, LATENCY = "device memory", "on-chip memory", "compute", \
    "latency"
ATOMICS = "atomic updates of one cache line"
PARTIAL_WRITES = "partial-sector writes"
INSTRUCTIONS = "instruction issue"
LAUNCH = "the launch"
# The longest constant trip count code generation asks to unroll fully (the mappings'
# `codegen.unroll` default, mcl.codegen.mapping.DEFAULT_UNROLL; not imported: the code
# generators bring numpy into every check; tests/feedback/test_timemodel_unseen.py holds
# the two equal).
UNROLLED_STEPS = 16
SM = "the SM (compute + on-chip memory)"
# The bytes an atomicAdd updates (an int or a float).
ATOMIC_BYTES = 4


@dataclass(frozen=True)
class Phase:
    """One part of the kernel between barriers (the whole kernel where it has none): what
    it asks of each limit, at the sizes given."""

    device_seconds: float  # its compulsory bytes over the stated bandwidth, every space
    on_chip_bytes: float  # shared bytes and global bytes through the L1
    flops: float
    loads_per_sm: float  # warp-level global loads of the busiest SM
    extra_bytes: float = 0.0  # the on-chip bytes conflicts and uncoalesced accesses add
    # how many times a block passes through the phase one pass after another, waiting for
    # a global load in each (`_barrier_passes`); 0 where no loop around a barrier holds one
    passes: float = 0.0
    # the atomic requests to the busiest line of each array in device memory, one after
    # another (`_atomic_updates`), times the cache's `atomic_interval`
    atomic_seconds: float = 0.0
    # the warp instructions of the compiler's machine code the phase issues, all SMs
    # (mcl.feedback.facts.issue_counts); 0 where no compiler counted them
    instructions: float = 0.0
    # the bytes of the sectors its stores write only in part (`_partial_bytes`)
    partial_bytes: float = 0.0


@dataclass(frozen=True)
class Figures:
    """What the model reads, at the sizes given: from the description, the roofline's and
    occupancy's findings and the operation counts, the kernel's parts split at its
    barriers."""

    multiprocessors: float
    clock_hz: float
    warps_per_sm: float
    peak_flops: float
    on_chip_bandwidth: float  # bytes/s, all SMs
    loads_in_flight: float  # per warp, on average
    latency_s: float
    phases: tuple[Phase, ...]
    wave_tail: float = 1.0  # blocks of the busiest SM over the average
    barriers: tuple[tuple[int, int], ...] = ()  # where they stand (`barrier_places`)
    stated_clock_hz: float = 0.0  # the description's SM clock (0: the one evaluated at)
    lanes_sms: float = 1.0  # the warp size times the SMs: thread-level loads per warp load
    # the executions of each global load, by its place (line, column), and the copies of
    # it the compiler makes by unrolling the constant-trip loops around it
    # (`unrolled_copies`): `loads_in_flight` comes from them (`in_flight`), and a change
    # that runs one less often redoes it
    load_runs: tuple[tuple[tuple[int, int], float, int], ...] = ()
    # what `latency_s` is made of; None where not known
    latency_mix: LatencyMix | None = None
    launch_s: float = 0.0  # what one launch costs beyond the work (`launch_seconds`)
    # the blocks the busiest SM runs one after another (its blocks over those resident)
    block_rounds: float = 1.0
    # what one pass of a loop around a barrier waits for its loads: device memory's
    # latency (each pass moves on to data no unit has loaded yet)
    chain_latency_s: float = 0.0
    # the warp schedulers of an SM (`issue_partitions`: hopper's 4 processing blocks),
    # each issuing one instruction of one of its warps per cycle
    schedulers: float = 1.0
    # the blocks an SM runs at once (the occupancy's, with the grid's limit)
    blocks_per_sm: float = 1.0
    # the phases each for-loop around barriers repeats, by index (`barrier_loops`)
    loops: tuple[tuple[int, ...], ...] = ()
    # the loads in flight the compiler's schedule gives each source line's global loads,
    # by line (`_scheduled`); empty where no compiler counted them
    scheduled: tuple[tuple[int, float], ...] = ()
    # bytes/s the cache that holds device memory takes sectors written only in part at
    # (its `partial_write_bandwidth`); 0 where the description states none: no such term
    partial_write_rate: float = 0.0
    # why the compiler's machine code was not analysed where it was asked for (a call
    # past its budget, mcl.feedback.compiler_budget); empty otherwise
    not_compiled: str = ""
    # how sharply the latency of device memory grows with its load (the interconnect's
    # `latency_knee`, `loaded_seconds`); 0 where the description states none: a phase
    # takes the larger of its traffic and its waits
    latency_knee: float = 0.0

    @property
    def clock_given(self) -> bool:
        """Evaluated at a clock other than the description's (mcl profile's measured one)."""
        return bool(self.stated_clock_hz) and self.clock_hz != self.stated_clock_hz

    def phase_terms(self, p: Phase) -> dict[str, float]:
        """Seconds each part of one phase needs alone (the atomic updates and the
        partial-sector writes only where the kernel makes some). The partial-sector
        writes are the cache's, which keeps its own clock, as device memory does."""
        atomics = {ATOMICS: p.atomic_seconds} if p.atomic_seconds else {}
        if p.partial_bytes and self.partial_write_rate:
            atomics[PARTIAL_WRITES] = p.partial_bytes / self.partial_write_rate
        if p.instructions:
            atomics[INSTRUCTIONS] = p.instructions / (
                self.multiprocessors * self.schedulers * self.clock_hz) * self.wave_tail
        return atomics | {
            DEVICE_MEMORY: p.device_seconds / ACHIEVED_BANDWIDTH,
            ON_CHIP: (p.on_chip_bytes + p.extra_bytes) / self.on_chip_bandwidth
            * self.wave_tail,
            COMPUTE: p.flops / self.peak_flops * self.wave_tail,
            LATENCY: max(self.waits(p)),
        }

    def waits(self, p: Phase) -> tuple[float, float]:
        """How long a warp of one phase waits for its loads: Little's law (its loads x
        latency over the loads in flight) and the floor of a loop around a barrier (a
        device-memory latency per pass, for each round of blocks)."""
        little = p.loads_per_sm * self.wave_tail * self.latency_s \
            / (self.warps_per_sm * self.loads_in_flight)
        return little, p.passes * self.block_rounds * self.chain_latency_s

    def issue(self, p: Phase) -> float:
        """The SM's issue time of one phase: its arithmetic and its on-chip accesses come
        from the same warp schedulers, so their times add; and no less than the
        schedulers take to issue every instruction of the compiler's machine code, one
        each per cycle, where it was counted (`INSTRUCTIONS`: the index arithmetic, the
        guards, the block index's divisions, which neither of the others counts)."""
        t = self.phase_terms(p)
        return max(t[COMPUTE] + t[ON_CHIP], t.get(INSTRUCTIONS, 0.0))

    def phase_limits(self, p: Phase, cover: float = 0.0) -> dict[str, float]:
        """The three limits of one phase: device memory, the SM's issue (`issue`) and
        latency (`latency_bound`, its floor less the `cover` other blocks issue during
        it); the warps of an SM overlap the three within the phase as far as there are
        enough of them."""
        t = self.phase_terms(p)
        atomics = {ATOMICS: t[ATOMICS]} if ATOMICS in t else {}
        issue = self.issue(p)
        device, latency = t[DEVICE_MEMORY], self.latency_bound(p, issue, cover)
        # Where the waits come near the traffic, the loads queue behind each other and
        # wait longer than the idle latency (`loaded_seconds`): the larger of the two
        # limits grows, and keeps its name.
        loaded = loaded_seconds(latency, device, self.latency_knee)
        if device >= latency:
            device = loaded
        else:
            latency = loaded
        return atomics | {DEVICE_MEMORY: device, SM: issue, LATENCY: latency}

    def cover(self, index: int) -> float:
        """How much of the floor of phase `index` (the device-memory latency each pass of
        a loop around a barrier waits, `waits`) the other blocks of an SM hide: while
        one block waits at the barrier for its tile, the others issue their own passes'
        work, in the loop's other phases. One block of matmul hopper_v1 (two of 8 warps
        per SM) loads its tiles while the other multiplies: an H200 measured 4.58 ms,
        its issue alone 4.50 ms, where the phases added give 5.02 ms.

        The others hide it only where they keep every scheduler issuing by themselves,
        at least two warps on each: a lone warp waits on its own loads (the shared-memory
        operands of its arithmetic) with no other warp to issue in its place
        (`latency_bound`'s criterion, with no other warp). With 4 warps a block, one per
        scheduler, hopper_v1 measured 4.76 ms: its issue (3.97 ms) and its loads' floor
        added. Per pass of the loop, the SM takes the longer of all its blocks' issue
        and one block's waits plus its own issue: the cover is the others' share,
        (blocks - 1) / blocks, of the issue of the loop's other phases (Hong and Kim's
        MWP-CWP model, ISCA 2009, across the blocks of an SM; the MCL paper's section
        5.1 counts the blocks an SMP runs at once for that reason)."""
        blocks = self.blocks_per_sm
        if blocks < 2 or not self.phases[index].passes:
            return 0.0
        if (blocks - 1) * self.warps_per_sm / blocks / self.schedulers < 2:
            return 0.0
        group = min((g for g in self.loops if index in g), key=len, default=())
        others = sum(self.issue(self.phases[q]) for q in group if q != index)
        return others * (blocks - 1) / blocks

    def latency_bound(self, p: Phase, issue: float, cover: float = 0.0) -> float:
        """How long a phase takes where its warps are too few to hide their waits behind
        each other's work: Hong and Kim's "not enough warps" case (ISCA 2009, the
        MWP-CWP model; Volkov's thesis, "Understanding latency hiding on GPUs", 2016,
        finds the same at low occupancy), each warp's waits plus its own issue, which no
        other warp overlaps while it waits.

        A warp issues its scheduler's share of the SM's `issue` time over the warps that
        share the scheduler (`issue x schedulers / warps`), so a warp waiting Little's
        law's time is hidden only where the other warps of its scheduler issue as long,
        `(warps / schedulers - 1) x issue interval >= latency` (the MCL paper's section
        2: GPU threads execute in warps "in a pipelined manner to overcome memory
        latency"; section 5.1 counts the blocks an SMP runs at once for the same reason).
        The waits a barrier aligns (the floor: each pass waits for all the block's loads)
        are hidden only by the other blocks of the SM, so the floor adds a block's own
        issue, the SM's over its blocks, and no less than its warps can issue: one block
        per SM waits and works in turn (matmul hopper_v2, 8 warps in one block: 5.77 ms
        measured on an H200, 4.58 ms estimated with the two overlapped, 5.83 ms now)."""
        little, floor = self.waits(p)
        floor = max(0.0, floor - cover)
        per_warp = issue * self.schedulers / max(1.0, self.warps_per_sm)
        per_block = max(issue / max(1.0, self.blocks_per_sm), per_warp)
        return max(little, floor, little + per_warp if little else 0.0,
                   floor + per_block if floor else 0.0)

    @property
    def terms(self) -> dict[str, float]:
        """Seconds each part needs alone, over every phase."""
        return _sums(self.phase_terms(p) for p in self.phases)

    def hidden(self) -> float:
        """The waits at barriers the other blocks' work hides (`cover`), over the phases."""
        return sum(min(self.waits(p)[1], self.cover(i)) for i, p in enumerate(self.phases))

    def each_phase_limits(self) -> list[dict[str, float]]:
        """The limits of each phase (`phase_limits`), its floor less its `cover`."""
        return [self.phase_limits(p, self.cover(i)) for i, p in enumerate(self.phases)]

    @property
    def limits(self) -> dict[str, float]:
        """Each limit over every phase."""
        return _sums(self.each_phase_limits())

    @property
    def overlapped(self) -> bool:
        """Do the other blocks of an SM issue while one block waits at its barriers? A
        barrier holds only its own block: with two blocks or more resident, and the
        others keeping at least two warps on each scheduler (`cover`'s criterion), the
        blocks drift apart, and a phase that only issues (`only_issues`) runs while
        other blocks wait in theirs (the MCL paper's section 5.1 counts the blocks an
        SMP runs at once for that reason)."""
        blocks = self.blocks_per_sm
        return len(self.phases) > 1 and blocks >= 2 \
            and (blocks - 1) * self.warps_per_sm / blocks / self.schedulers >= 2

    def only_issues(self, p: Phase) -> bool:
        """Does phase `p` only issue instructions: no device-memory traffic, no global
        load to wait for, no atomic update, and more instructions than its arithmetic
        and on-chip accesses take (a reduction tree's levels over a few live warps)? A
        phase bound by its on-chip accesses (a scan's levels, a tile's multiply) keeps
        its place: the idiom corpus's scan and batched GEMM measure their phases added
        (108 and 66.5 us; 117 and 66 us added, 77 and 52 us with them overlapped too),
        as does a phase whose instructions feed its own loads (stencil3d_halo's block
        index divisions: 105 us measured, 101 us added, 86 us overlapped)."""
        t = self.phase_terms(p)
        return not (t[DEVICE_MEMORY] or t[LATENCY] or t.get(ATOMICS)) \
            and t.get(INSTRUCTIONS, 0.0) > t[COMPUTE] + t[ON_CHIP]

    def _overlap_sums(self) -> tuple[float, float]:
        """Where the blocks overlap (`overlapped`): the phases that do not only issue,
        each as long as its largest limit, added; and the SM's issue of every phase."""
        rest = issued = 0.0
        for p, limits in zip(self.phases, self.each_phase_limits(), strict=True):
            issued += limits[SM]
            if not self.only_issues(p):
                rest += max(limits.values())
        return rest, issued

    def phase_seconds(self) -> float:
        """The phases one after the other, each as long as its largest limit; where the
        blocks overlap (`overlapped`), the phases that only issue run during the others'
        waits: the others added, and no less than the SM's issue of all the phases.
        softmax of the idiom corpus, eight blocks an SM: its phases added are 76 us,
        its five reduction-tree phases 14 us of them, measured 58.6 us; 62 us now.
        No less than the cache's partial-sector writes of all the phases
        (`partial_seconds`)."""
        if not self.overlapped:
            phases = sum(max(limits.values()) for limits in self.each_phase_limits())
        else:
            phases = max(self._overlap_sums())
        return max(phases, self.partial_seconds)

    @property
    def partial_seconds(self) -> float:
        """How long the cache takes to write the sectors every phase's stores write in
        part. A limit of the whole kernel, not of a phase: a warp does not wait for its
        stores, so the cache writes them while the SMs go on through the later phases
        (convolution hopper_v2's micro-tile stores, 4.2 M such sectors in its last phase:
        per phase the estimate would be 320 us, 268 us without them, 177 us measured)."""
        return sum(self.phase_terms(p).get(PARTIAL_WRITES, 0.0) for p in self.phases)

    @property
    def seconds(self) -> float:
        """The phases one after the other (`phase_seconds`): a barrier holds the warps of
        a block until all arrive, so the work on either side of it does not overlap
        within the block (docs/feedback.md, "Time estimate"); the launch before them."""
        return self.launch_s + self.phase_seconds()

    @property
    def limit(self) -> str:
        """The limit of the phases that take most of the time (the launch where it costs
        more than all of them); where the blocks overlap (`phase_seconds`), the SM's
        where its issue over all the phases is the longer, else that of the phases that
        do not only issue."""
        spent: dict[str, float] = {LAUNCH: self.launch_s}
        if self.partial_seconds and self.partial_seconds >= self.phase_seconds():
            return PARTIAL_WRITES
        if self.overlapped:
            rest, issued = self._overlap_sums()
            if issued >= rest:
                return SM if issued >= self.launch_s else LAUNCH
        for p, limits in zip(self.phases, self.each_phase_limits(), strict=True):
            if self.overlapped and self.only_issues(p):
                continue
            name = max(limits, key=lambda k: limits[k])
            spent[name] = spent.get(name, 0.0) + limits[name]
        return max(spent, key=lambda k: spent[k])


def _sums(parts: Iterable[dict[str, float]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for part in parts:
        for k, v in part.items():
            out[k] = out.get(k, 0.0) + v
    return out


# ----------------------------------------------------------------------------- figures


def _on_chip(hwd: Any) -> Bandwidth | None:
    """The banked memory of the SM (shared memory) and its bandwidth, all SMs."""
    for m in hwd.memories():
        if m.nr_banks and m.addressable and m.spaces:
            return bandwidth(hwd, m.spaces[0])
    return None


def _seconds(latency: Any, clock_hz: float) -> float | None:
    """A `latency` property in seconds (cycles at the SM clock); None where not stated."""
    if not isinstance(latency, Quantity) or not latency.value:
        return None
    value = float(latency.value)
    return value if latency.unit == "s" else value / clock_hz


def issue_partitions(hwd: Any) -> float:
    """The warp schedulers of one SM: the SM's warp slots split among the innermost
    execution blocks that hold several warps each (hopper.hdl: 64 over 4 processing
    blocks of 16, the H100's four schedulers); 1 where no such block is stated (fermi:
    the SM holds its 48 warps itself)."""
    lockstep = hwd.lockstep(hwd.executing_unit().name)
    warp = next((u.name for u in hwd.par_units() if lockstep is not None
                 and u.inner is lockstep), None)
    if warp is None:
        return 1.0
    holders = [u for u in hwd.execution_units_for(warp) if u.slots > 1]
    if len(holders) < 2 or not holders[0].nr_units:
        return 1.0
    return float(holders[-1].nr_units / holders[0].nr_units)


def launch_seconds(hwd: Any, clock_hz: float) -> float:
    """What one kernel launch costs beyond its work: the `latency` its device states
    (cycles at the SM clock, or seconds), else `LAUNCH_SECONDS`."""
    stated = _seconds(hwd.device.values.get("latency"), clock_hz)
    return LAUNCH_SECONDS if stated is None else stated


def loaded_seconds(waits: float, traffic: float, knee: float) -> float:
    """How long a phase whose loads wait `waits` (Little's law at the idle latency) and
    whose traffic takes `traffic` at the memory's achievable rate lasts with the latency
    loaded; the larger of the two where `knee` is 0 (no such term) or either is 0.

    Where the two come near each other the loads queue in the memory's controllers
    while it is busy, and a warp waits longer than the idle latency: the loaded-latency
    curves of memory-hierarchy microbenchmarks (flat at low load, rising steeply as the
    demanded bandwidth nears the peak), and the closed queueing network of warps and
    memory, whose throughput stays below both of its asymptotes near their knee
    (Lazowska et al., *Quantitative System Performance*, 1984, ch. 5). The curve here
    has one constant, its sharpness `knee` k (the interconnect's `latency_knee`,
    docs/hdl.md): at a utilisation rho of the memory's achievable rate a load waits
    L(rho) = L0 / (1 - rho^k)^(1/k), flat while rho^k is small, without bound as rho
    nears 1. With rho = the traffic's time over the phase's and the waits of Little's
    law at L(rho), the phase takes the k-norm of its two limits, (waits^k +
    traffic^k)^(1/k): the larger where the other is far below it, their sum at k = 1.
    No bundled description states a knee: fitted on the calibration halves it made a
    neutral change (a warp-uniform load hoisted out of a loop) look slower, since the
    waits of Little's law take one mean latency over loads in flight together
    (docs/validation.md, "The loaded latency")."""
    big, small = max(waits, traffic), min(waits, traffic)
    if knee <= 0 or small <= 0:
        return big
    return big * (1.0 + (small / big) ** knee) ** (1.0 / knee)


def latency_knee(link: Any) -> float:
    """The `latency_knee` the interconnect `link` states (mcl.hdl.model.Link); 0 where it
    states none or no link is given: no loaded-latency term."""
    if link is None:
        return 0.0
    value = link.node.values.get("latency_knee")
    value = getattr(value, "value", value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return 0.0
    return float(value)


def _latencies(hwd: Any, space: str, clock_hz: float) -> tuple[float, float] | None:
    """The latency of a global load from device memory (the link's to the memory holding
    `space`) and through a cache that states one (hopper's l2; the link's again where
    none does); None where the link states none."""
    held = hwd.memories_for(space)
    link = hwd.link(held[0].node.path) if held else None
    memory = _seconds(link.latency if link is not None else None, clock_hz)
    if memory is None:
        return None
    cached = [t for c in hwd.caches() if space in c.spaces
              if (t := _seconds(c.node.values.get("latency"), clock_hz)) is not None]
    return memory, max(cached) if cached else memory


@dataclass(frozen=True)
class LatencyMix:
    """What the mean latency of a global load is made of: device memory's latency and the
    cache's (`_latencies`), the compulsory bytes and the bytes through the cache."""

    memory_s: float
    cache_s: float
    compulsory_bytes: float
    through_cache_bytes: float

    @property
    def mean_s(self) -> float:
        """Device memory's latency for the compulsory share of the bytes through the cache
        (those must come from device memory), the cache's for the rest."""
        through = self.through_cache_bytes
        share = self.compulsory_bytes / through if through else 1.0
        share = min(1.0, max(0.0, share))
        return self.memory_s * share + self.cache_s * (1.0 - share)


def figures_of(ctx: AnalysisContext, findings: Sequence[Finding], least: bool = False
               ) -> Figures | None:
    """The figures of the model for one function, or None where one is missing. Where
    the counts cannot decide an `if` (the roofline's `undecided`) they are upper bounds,
    every such branch taken; with `least`, the figures of the lower counts, each such
    `if` at its smaller branch (mcl.feedback.facts.costs.function_costs)."""
    roof, occupancy = first(findings, RooflineFinding), first(findings, OccupancyFinding)
    hwd = ctx.hwd
    peaks = compute_peaks(hwd)
    shared = _on_chip(hwd)
    if roof is None or occupancy is None or not peaks or shared is None:
        return None
    stated = max(peaks, key=lambda p: p.flops).clock_hz
    # At another SM clock (the profiler's, AnalysisContext.clock_hz) the SM's rates scale
    # with it (the arithmetic peak, the banked memory's bytes per cycle) and latencies in
    # cycles are read at it; device memory states bytes per second on a clock of its own.
    clock = ctx.clock_hz or stated
    scale = clock / stated
    traffic = roof.traffic
    flops, peak = number(roof.flops), peak_flops(hwd)
    if least:
        if roof.least_traffic is None:
            return None
        traffic, flops = roof.least_traffic, number(roof.least_flops)
    warps, sms = occupancy.warps_per_sm, occupancy.multiprocessors
    cached = sorted({s for c in hwd.caches() for s in c.spaces})
    if flops is None or peak is None or not warps or not sms or not cached:
        return None
    device = on_chip = compulsory = through_cache = 0.0
    for space_traffic in traffic:
        space, v = space_traffic.space, space_traffic.compulsory
        rate = bandwidth(hwd, space)
        if rate is None or v.numeric is None:
            return None
        through_l1 = (space_traffic.no_reuse or v).numeric or 0.0
        if rate.source == shared.source:
            on_chip += float(v.numeric)
        else:
            device += float(v.numeric) / rate.bytes_per_s
            if space in cached:
                on_chip += float(through_l1)
                compulsory += float(v.numeric)
                through_cache += float(through_l1)
    latencies = _latencies(hwd, cached[0], clock)
    if latencies is None:
        return None
    held = hwd.memories_for(cached[0])
    knee = latency_knee(hwd.link(held[0].node.path) if held else None)
    mix = LatencyMix(*latencies, compulsory, through_cache)
    lanes = _warp_size(hwd)
    whole = Phase(device, on_chip, float(flops or 0.0), 0.0)
    barriers = tuple(barrier_places(ctx.function))
    phases = _phases(ctx, barriers, whole, cached, shared.source, findings, lanes * sms, clock,
                     least)
    if phases is None:
        return None
    grid = occupancy.grid_blocks
    compiled = compiler_instructions(ctx.facts)
    not_compiled = compiled.reason if isinstance(compiled, NotCompiled) else ""
    code = None if isinstance(compiled, NotCompiled) else compiled
    issued = _issued(ctx, code, barriers, len(phases), lanes, occupancy, cached, shared.source,
                     least)
    if issued is not None:
        phases = tuple(replace(p, instructions=n) for p, n in zip(phases, issued, strict=True))
    tail = math.ceil(grid / sms) / (grid / sms) if grid else 1.0
    resident = max(1, occupancy.blocks_per_sm)
    rounds = float(math.ceil(math.ceil(grid / sms) / resident)) if grid else 1.0
    runs = _load_runs(ctx, cached, least)
    scheduled = _scheduled(code)
    return Figures(float(sms), clock, float(warps), float(peak or 1.0) * scale,
                   shared.bytes_per_s * scale, flying(runs, scheduled), mix.mean_s,
                   phases, tail, barriers, stated, lanes_sms=float(lanes * sms),
                   load_runs=tuple(runs),
                   latency_mix=mix, launch_s=launch_seconds(hwd, clock), block_rounds=rounds,
                   chain_latency_s=latencies[0], schedulers=issue_partitions(hwd),
                   blocks_per_sm=float(resident),
                   loops=barrier_loops(ctx.function, barriers, len(phases)),
                   scheduled=scheduled,
                   partial_write_rate=partial_write_rate(hwd, cached[0]),
                   not_compiled=not_compiled, latency_knee=knee)


def _issued(ctx: AnalysisContext, code: Lines | None, barriers: Sequence[tuple[int, int]],
            count: int, lanes: int, occupancy: OccupancyFinding, cached: Sequence[str],
            shared: Any, least: bool) -> list[float] | None:
    """The warp instructions of each phase from the compiler's machine code `code`
    (mcl.feedback.facts.issue_counts), or None where no compiler counted it (the
    editor's checks: mcl.feedback.compiler_instructions) or a count is missing."""
    if not code or not occupancy.grid_blocks or not occupancy.blocks_per_sm:
        return None
    warps = occupancy.grid_blocks * occupancy.warps_per_sm / occupancy.blocks_per_sm
    hwd = ctx.hwd

    def moves(a: Any) -> bool:
        rate = bandwidth(hwd, a.space) if a.space else None
        return a.space in cached or (rate is not None and rate.source == shared)

    skipped = {Ref(g.node) for g in function_costs(ctx.facts, ctx.values).undecided()} \
        if least else set()
    return phase_instructions(ctx, code, count, lambda line: bisect.bisect_left(
        barriers, (line, 0)), lanes, warps, moves, skipped)


# ----------------------------------------------------------------------------- phases


def barrier_places(function: ast.Function) -> list[tuple[int, int]]:
    """Where the function's barriers stand, (line, column), in source order."""
    return sorted((n.span.line, n.span.column) for n in ast.walk(function)
                  if isinstance(n, ast.Barrier) and n.span is not None)


def barrier_loops(function: ast.Function, barriers: Sequence[tuple[int, int]], count: int
                  ) -> tuple[tuple[int, ...], ...]:
    """The phases each for-loop around barriers repeats, by index (of `count`): from the
    one that ends at its first barrier to the one that starts at its last (`phase_of`
    numbers the phases by the barriers before them in the source)."""
    loops = []
    for node in ast.walk(function):
        if not isinstance(node, ast.For):
            continue
        inside = [phase_of(n.span, barriers) for n in ast.walk(node)
                  if isinstance(n, ast.Barrier) and n.span is not None]
        if inside:
            loops.append(tuple(range(min(inside), min(max(inside) + 2, count))))
    return tuple(loops)


def phase_of(span: Span | None, barriers: Sequence[tuple[int, int]]) -> int:
    """The phase a statement at `span` belongs to: the barriers before it in the source.
    A loop around barriers repeats its phases; the counts of each are its statements'
    over every iteration, so the loop's share of each phase is still its own."""
    if span is None:
        return 0
    return bisect.bisect_left(barriers, (span.line, span.column))


def _phases(ctx: AnalysisContext, barriers: Sequence[tuple[int, int]], whole: Phase,
            cached: Sequence[str], shared: Any, findings: Sequence[Finding],
            lanes_sms: float, clock_hz: float, least: bool = False
            ) -> tuple[Phase, ...] | None:
    """The kernel's phases between `barriers`: each its share of the whole kernel's
    figures (so the phases add up to them), the compulsory traffic of a parameter in the
    phase that first moves it in each direction, the accesses' conflicts in theirs; the
    warp-level loads of the busiest SM (thread-level loads over `lanes_sms`, the warp
    size times the SMs)."""
    facts = ctx.facts
    count = len(barriers) + 1
    by_phase: list[set[Any]] = [set() for _ in range(count)]
    for item in facts.items:
        by_phase[phase_of(item.span, barriers)].add(item)
    parts = [_part(ctx, items, cached, shared, least) for items in by_phase]
    if any(part is None for part in parts):
        return None
    counted = [part for part in parts if part is not None]
    totals = [sum(part[i] for part in counted) for i in range(2)]
    device = _device_shares(ctx, barriers, cached)
    extra = [0.0] * count
    partial = [0.0] * count
    skipped = _undecided_places(ctx) if least else set()
    for f in findings:
        if isinstance(f, WarpAccessFinding) and f.extra_bytes is not None \
                and _place(f.span) not in skipped:
            at = min(phase_of(f.span, barriers), count - 1)
            extra[at] += f.extra_bytes
            partial[at] += _partial_bytes(f, cached)
    idle = _divergent_paths(ctx, barriers, findings, cached, shared)
    if idle is None:
        return None
    passes = _barrier_passes(ctx, barriers, cached, least)
    interval = _atomic_interval(ctx.hwd, cached[0], clock_hz)
    atomics = _atomic_updates(ctx, barriers, cached, _warp_size(ctx.hwd)) \
        if interval else [0.0] * count
    phases = []
    for i, (on_chip, flops, part_loads) in enumerate(counted):
        phases.append(Phase(whole.device_seconds * device[i],
                            whole.on_chip_bytes * _share(on_chip, totals[0], i)
                            + idle[i][0],
                            whole.flops * _share(flops, totals[1], i) + idle[i][1],
                            (part_loads + idle[i][2]) / lanes_sms, extra[i], passes[i],
                            atomics[i] * (interval or 0.0), partial_bytes=partial[i]))
    return tuple(phases)


def _partial_bytes(finding: WarpAccessFinding, cached: Sequence[str]) -> float:
    """The bytes of the sectors an uncoalesced store to a cached space writes only in
    part, over every warp execution: where its lanes touch more sectors than their bytes
    fill (`lines` over `minimum_lines`), none of them is full (the lanes' elements stand
    a stride apart: transpose perfect's column, 4 B in each of 32 sectors). The device
    writes each through to the L2 on its own (docs/validation.md: the stored bytes of
    the micro-tile stores and of transpose perfect's column, 2-8x the data); a store
    that fills its sectors (hopper_v1's rows) makes none."""
    change = finding.change
    if not isinstance(change, CoalesceAccess) or change.warp_executions is None \
            or change.access.kind != "store" or change.access.space not in cached \
            or change.lines <= change.minimum_lines:
        return 0.0
    return change.warp_executions * change.lines * change.line_bytes


def _atomic_updates(ctx: AnalysisContext, barriers: Sequence[tuple[int, int]],
                    cached: Sequence[str], lanes: int) -> list[float]:
    """Per phase, the atomic requests the busiest cache line of each array in device
    memory receives, added over the arrays. The L2 applies one warp's atomic request to
    one line at a time, and the requests to one line one after another. A warp's
    `lanes` updates make one request per line they touch:
    - at an index the data decides, a request may touch every line of the array (up to
      one per lane), so each line receives about every request;
    - at an index that differs from lane to lane (`hist[tid]`), the lanes update
      distinct elements: some element gets the updates over the elements or more (the
      average), each update of it in a request of its own;
    - at an index every lane of a warp shares, one request carries the warp's updates.
    An array whose size or updates the sizes do not give adds none."""
    facts = ctx.facts
    line = _line_bytes(ctx.hwd, cached[0])
    updates = [0.0] * (len(barriers) + 1)
    for a in facts.accesses:
        if not (a.writes and a.space in cached and a.binding.root.kind == "param"
                and is_atomic(a)):
            continue
        count = evaluate(executions(facts, a.item)[0], ctx.values).numeric
        elements = evaluate(element_count(facts, a.binding.root), ctx.values).numeric
        if not count or not elements:
            continue
        if store_contention(facts, a, ctx.values) is not None:  # decided by the data
            lines = max(1.0, math.ceil(float(elements) * ATOMIC_BYTES / line))
            requests = float(count) / lanes * min(lines, lanes) / lines
        elif _varies_by_lane(facts, a):
            requests = float(count) / float(elements)
        else:
            requests = float(count) / lanes / float(elements)
        at = min(phase_of(a.item.span, barriers), len(updates) - 1)
        updates[at] += requests
    return updates


def _varies_by_lane(facts: Any, a: Any) -> bool:
    """Does the index of `a` differ between the lanes of a warp: does it depend on the
    innermost foreach around it (the units that run in lockstep)?"""
    units = [loop for loop in a.item.loops if loop.kind == "foreach"]
    if not units:
        return False
    scope = a.item.scope
    return any(units[-1] in facts.evaluator.deps(index, scope) for index in a.indices)


def _cache_value(hwd: Any, space: str, name: str) -> Quantity | None:
    """Property `name` of the first cache that holds `space` and states it."""
    for c in hwd.caches():
        value = c.node.values.get(name) if space in c.spaces else None
        if isinstance(value, Quantity) and value.value:
            return value
    return None


def _atomic_interval(hwd: Any, space: str, clock_hz: float) -> float | None:
    """How long one atomic request to a line of the cache that holds `space` holds the
    next to the same line (its `atomic_interval`, docs/hdl.md), in seconds; None where
    the description states none (the model then has no term for atomic updates)."""
    return _seconds(_cache_value(hwd, space, "atomic_interval"), clock_hz)


def partial_write_rate(hwd: Any, space: str) -> float:
    """The bytes per second the cache that holds `space` takes sectors written only in
    part at (its `partial_write_bandwidth`, docs/hdl.md; stated in bits per second);
    0 where the description states none (the model then has no such term)."""
    rate = _cache_value(hwd, space, "partial_write_bandwidth")
    return float(rate.value) / 8 if rate is not None else 0.0


def _line_bytes(hwd: Any, space: str) -> float:
    """The line of the cache that holds `space` (hopper's l2: 128 B; a description that
    states none gets the loader's default, docs/hdl.md)."""
    size = _cache_value(hwd, space, "cache_line_size")
    return float(size.value) if size is not None else float(DEFAULT_CACHE_LINE)


def _barrier_passes(ctx: AnalysisContext, barriers: Sequence[tuple[int, int]],
                    cached: Sequence[str], least: bool = False) -> list[float]:
    """Per phase, how many times one unit passes through it waiting for a global load:
    the product of the trip counts of the for-loops around a load of a parameter in the
    phase that hold a barrier (each pass starts only once the whole block has passed the
    barrier of the one before), the most over the phase's loads; 0 for a phase no such
    loop runs. A loop whose count the sizes do not give is left out (it adds no floor)."""
    facts = ctx.facts
    passes = [0.0] * (len(barriers) + 1)
    holds: dict[Any, bool] = {}
    for a in _parameter_loads(ctx, cached, least):
        count = 1.0
        looped = False
        for loop in a.item.loops:
            if loop.kind != "for":
                continue
            if loop not in holds:
                holds[loop] = any(isinstance(n, ast.Barrier) for n in ast.walk(loop.node))
            if not holds[loop]:
                continue
            trips = evaluate(facts.evaluator.trips(loop), ctx.values).numeric
            if trips is None:
                break
            count *= float(trips)
            looped = True
        else:
            if looped:
                at = min(phase_of(a.item.span, barriers), len(passes) - 1)
                passes[at] = max(passes[at], count)
    return passes


def _divergent_paths(ctx: AnalysisContext, barriers: Sequence[tuple[int, int]],
                     findings: Sequence[Finding], cached: Sequence[str], shared: Any
                     ) -> list[tuple[float, float, float]] | None:
    """What the lanes that wait cost, per phase: (on-chip bytes, flops, thread-level
    loads). A warp whose lanes take both paths of a branch runs each path with all its
    lanes, the others disabled (CUDA C Programming Guide, SIMT architecture), so a path
    taken by `taken` of `active` lanes costs the issue of `active / taken` times the
    per-lane counts. Only for a `DivergentBranch` (the description's divergence function)
    whose condition splits every warp alike: it reads the lane index and for-loop
    counters alone (`t % 2 == 0`, `tid < s` in a halving loop), so the split the function
    found in one warp is that of all; a condition on the warp's or block's index splits
    few warps (`tid < n` at the end of the data), and is left out."""
    count = len(barriers) + 1
    out = [(0.0, 0.0, 0.0)] * count
    facts = ctx.facts
    for f in findings:
        if not isinstance(f, DivergentBranch) or f.span is None:
            continue
        lanes = {k: number(v) for k, v in f.message.values
                 if k in ("lanes_then", "lanes_else")}
        taken, skipped = lanes.get("lanes_then"), lanes.get("lanes_else")
        node = next((i.node for i in facts.items if i.kind == IF
                     and i.node.span == f.span), None)
        if not taken or not skipped or node is None or not _splits_every_warp(ctx, node):
            continue
        active = taken + skipped
        for then, share in ((True, taken), (False, skipped if node.orelse else 0.0)):
            if not share:
                continue
            items = {i for i in facts.items if any(
                g.node is node and g.then == then for g in i.guards)}
            part = _part(ctx, items, cached, shared)
            if part is None:
                return None
            factor = active / share - 1.0
            at = min(phase_of(f.span, barriers), count - 1)
            bytes_, flops, loads = out[at]
            out[at] = (bytes_ + part[0] * factor, flops + part[1] * factor,
                       loads + part[2] * factor)
    return out


def _splits_every_warp(ctx: AnalysisContext, node: ast.If) -> bool:
    """Does the condition of `node` read the lane index (the foreach over the lock-step
    group) and otherwise only for-loop counters, so that every warp splits alike?"""
    facts = ctx.facts
    ev = facts.evaluator
    item = next(i for i in facts.items if i.kind == IF and i.node is node)
    lockstep = ctx.hwd.lockstep(ctx.hwd.executing_unit().name)
    if lockstep is None:
        return False
    condition = ev.sym(node.cond, item.scope)
    if condition is None:
        return False
    lanes = {ev.counter(x) for x in item.loops if x.kind == "foreach"
             and x.group == lockstep.name}
    serial = {ev.counter(x) for x in item.loops if x.kind == "for"}
    free = sympy.sympify(condition).free_symbols
    return bool(free & lanes) and free <= lanes | serial


def _share(part: float, total: float, index: int) -> float:
    """A phase's share of a figure; where nothing is counted, the whole in the first."""
    if total > 0:
        return part / total
    return 1.0 if index == 0 else 0.0


def _undecided_places(ctx: AnalysisContext) -> set[tuple[int, int]]:
    """Where the accesses under an `if` the counts cannot decide at the sizes given
    stand, (line, column): the lower counts skip them."""
    facts = ctx.facts
    undecided = {Ref(g.node) for g in function_costs(facts, ctx.values).undecided()}
    return {(a.node.span.line, a.node.span.column) for a in facts.accesses
            if a.node.span is not None and any(Ref(g.node) in undecided for g in a.item.guards)}


def _place(span: Span | None) -> tuple[int, int]:
    return (span.line, span.column) if span else (0, 0)


def _part(ctx: AnalysisContext, items: set[Any], cached: Sequence[str], shared: Any,
          least: bool = False) -> tuple[float, float, float] | None:
    """The on-chip bytes, flops and thread-level global loads of some statements."""
    facts = ctx.facts
    costs = part_costs(facts, ctx.values, items, least)
    hwd = ctx.hwd
    on_chip = loads = 0.0
    for (cat, kind, _unit, key), count in costs.entries.items():
        if cat != DATA or key is None:
            continue
        number = evaluate(count, ctx.values).numeric
        if number is None:
            return None
        space, size = space_and_size(facts, key)
        rate = bandwidth(hwd, space)
        element = evaluate(size, ctx.values).numeric
        if rate is None or element is None:
            continue
        if rate.source == shared or space in cached:
            on_chip += float(number) * float(element)
        if kind == "load" and space in cached:
            loads += float(number)
    flops = evaluate(costs.total(COMPUTATIONAL), ctx.values).numeric
    if flops is None:
        return None
    return on_chip, float(flops), loads


def _device_shares(ctx: AnalysisContext, barriers: Sequence[tuple[int, int]],
                   cached: Sequence[str]) -> list[float]:
    """Each phase's share of the compulsory traffic: every array parameter's bytes, once
    per direction, in the first phase that reads it and the first that writes it (the
    roofline's compulsory traffic, each array moved once)."""
    facts = ctx.facts
    count = len(barriers) + 1
    first: dict[tuple[str, str], int] = {}
    for a in facts.accesses:
        root = a.binding.root
        if root.kind != "param" or a.space not in cached:
            continue
        phase = phase_of(a.item.span, barriers)
        for direction in ("r" if a.reads else "") + ("w" if a.writes else ""):
            key = (root.name, direction)
            first[key] = min(first.get(key, phase), phase)
    sizes = {name: evaluate(size, ctx.values).numeric
             for name, _mode, size in parameter_bytes(facts)}
    weights = [0.0] * count
    for (name, _direction), phase in first.items():
        weights[phase] += float(sizes.get(name) or 0.0)
    total = sum(weights)
    return [w / total for w in weights] if total > 0 else [1.0] + [0.0] * (count - 1)


def _warp_size(hwd: Any) -> int:
    lockstep = hwd.lockstep(hwd.executing_unit().name)
    return int(lockstep.count) if lockstep is not None else 1


def _load_runs(ctx: AnalysisContext, cached: Sequence[str], least: bool = False
               ) -> list[tuple[tuple[int, int], float, int]]:
    """The executions of each global load of a parameter, by its place in the source, and
    the copies unrolling makes of it (`unrolled_copies`); with `least`, none of those
    under an `if` the counts cannot decide."""
    facts = ctx.facts
    out = []
    for a in _parameter_loads(ctx, cached, least):
        number = evaluate(executions(facts, a.item)[0], ctx.values).numeric
        if number is not None:
            out.append((_place(a.node.span), float(number),
                        unrolled_copies(facts, a.item.loops)))
    return out


def _parameter_loads(ctx: AnalysisContext, cached: Sequence[str], least: bool = False
                     ) -> list[Any]:
    """The loads of array parameters in the cached spaces (device memory's global
    loads); with `least`, none of those under an `if` the counts cannot decide."""
    skipped = _undecided_places(ctx) if least else set()
    return [a for a in ctx.facts.accesses
            if a.reads and a.space in cached and a.binding.root.kind == "param"
            and _place(a.node.span) not in skipped]


def unrolled_copies(facts: Any, loops: Sequence[Any]) -> int:
    """The copies of a statement inside `loops` that the compiler makes by unrolling: the
    product of the trip counts of the innermost for-loops whose count is a constant of
    2 to `UNROLLED_STEPS` steps (code generation asks for their full unrolling,
    mcl.codegen.unroll, and the copies of a load do not wait for each other); a loop
    of another count stops the product (what is outside it is not unrolled into it)."""
    copies = 1
    for loop in reversed(loops):
        if loop.kind != "for":
            break
        trips = facts.evaluator.trips(loop)
        if not (isinstance(trips, sympy.Integer) and 1 < int(trips) <= UNROLLED_STEPS):
            break
        copies *= int(trips)
    return copies


def flying(runs: Sequence[tuple[tuple[int, int], float, int]],
           scheduled: Sequence[tuple[int, float]] = ()) -> float:
    """The global loads one warp has in flight, Little's law's average over all its
    loads: each load's wait of one latency is shared by the loads in flight at its use,
    so the waits add up as each load's executions over its count in flight, and the
    average is the executions over that sum (a mean weighted by the executions,
    harmonic). A load's count: where the compiler's schedule is known (`scheduled`, by
    line), its line's mean over its uses (a loop NVVM unrolls by 16 has 16 loads out
    before it uses the first, 15 before the second, ..., 8.5 on average; 8 guarded copies
    of a load interleaved with their uses, 2.5); else the copies of the loads of its loop
    body, which do not wait for each other (`unrolled_copies`). convolution hopper_v1's
    81 filter loads, unrolled, fly 3.3 at a time in the schedule while its tile copy, a
    loop of 21 guarded loads, flies one: the filter's loads wait a third as long each,
    which the most frequent body's count alone (the tile copy's 1) did not see."""
    if not runs:
        return 1.0
    given = dict(scheduled)
    waits = 0.0
    for (line, _), count, copies in runs:
        waits += count / (given.get(line) or _body_in_flight(runs, count / max(copies, 1)))
    total = sum(count for _, count, _ in runs)
    return total / waits if waits else 1.0


def _body_in_flight(runs: Sequence[tuple[tuple[int, int], float, int]], body: float
                    ) -> int:
    """The loads in flight of the loop body that runs `body` times: the copies of every
    load that runs as often (one body, unrolled: each load once per copy)."""
    return max(1, sum(c for _, r, c in runs
                      if math.isclose(r / max(c, 1), body, rel_tol=0.01)))


def _scheduled(code: Lines | None) -> tuple[tuple[int, float], ...]:
    """The loads in flight of each line's global loads in the compiler's schedule
    (mcl.feedback.compiler_instructions), at the line's deepest loop: the code that
    runs most often."""
    if not code:
        return ()
    out = []
    for line, parts in sorted(code.items()):
        loads = [c for c in parts if c.global_loads]
        if loads:
            out.append((line, max(loads, key=lambda c: c.depth).in_flight))
    return tuple(out)


def after(f: Figures, finding: Finding) -> Figures | None:
    """The figures once the change `finding` proposes is made; None where the model does
    not capture the change (or the finding proposes none)."""
    occupancy = finding.raise_occupancy if isinstance(finding, OccupancyFinding) else None
    if occupancy is not None:
        warps = occupancy.warps_per_sm_after
        if not warps:
            return None
        # blocks of the same size: the blocks per SM grow with the warps
        return replace(f, warps_per_sm=float(warps),
                       blocks_per_sm=f.blocks_per_sm * warps / f.warps_per_sm)
    if isinstance(finding, WarpAccessFinding) and finding.extra_bytes is not None:
        at = min(phase_of(finding.span, f.barriers), len(f.phases) - 1)
        phases = list(f.phases)
        cached = (finding.access.space,) if finding.access.space else ()
        phases[at] = replace(phases[at], extra_bytes=max(
            0.0, phases[at].extra_bytes - finding.extra_bytes), partial_bytes=max(
            0.0, phases[at].partial_bytes - _partial_bytes(finding, cached)))
        return replace(f, phases=tuple(phases))
    if isinstance(finding.change, KeepInRegister):
        return _without_reloads(f, finding.change)
    return None


def _without_reloads(f: Figures, change: KeepInRegister) -> Figures | None:
    """The figures once a warp-uniform element is loaded once instead of again in each
    iteration: its phase without the saved loads' on-chip bytes and, for loads through a
    cache, without their warp-level loads (the latency term)."""
    saved, size, again = (number(v) for v in (
        change.loads_saved, change.bytes_saved, change.iterations))
    cached = change.through_cache
    if saved is None or size is None or not again:
        return None
    span = change.access.span
    at = min(phase_of(span, f.barriers), len(f.phases) - 1)
    phases = list(f.phases)
    p = phases[at]
    loads = saved / f.lanes_sms if cached else 0.0
    phases[at] = replace(p, on_chip_bytes=max(0.0, p.on_chip_bytes - size),
                         loads_per_sm=max(0.0, p.loads_per_sm - loads))
    # the load runs `again` times less often: it may leave the loads a warp has in flight
    place = (span.line, span.column) if span else None
    runs = tuple((k, r / again if k == place else r, c) for k, r, c in f.load_runs)
    flies = flying(runs, f.scheduled) if runs else f.loads_in_flight
    latency, mix = f.latency_s, f.latency_mix
    if cached and mix is not None:  # fewer bytes through the cache: more compulsory share
        mix = replace(mix, through_cache_bytes=max(0.0, mix.through_cache_bytes - size))
        latency = mix.mean_s
    return replace(f, phases=tuple(phases), load_runs=runs, loads_in_flight=flies,
                   latency_s=latency, latency_mix=mix)


# ----------------------------------------------------------------------------- messages


def time_model(ctx: AnalysisContext) -> list[Finding]:
    """The earlier findings, each suggestion with the gain the model estimates, and the
    time-estimate fact; the earlier findings unchanged where the model lacks a figure."""
    earlier = list(ctx.earlier)
    f = figures_of(ctx, earlier)
    if f is None:
        return earlier
    roof = first(earlier, RooflineFinding)
    least = figures_of(ctx, earlier, least=True) if roof and roof.undecided else None
    if least is not None and (least.seconds >= 0.99 * f.seconds or not any(
            decided_by_data(ctx.facts, g)
            for g in function_costs(ctx.facts, ctx.values).undecided())):
        # One estimate where the undecided branches hardly matter, or where none depends
        # on data: an edge guard the counts cannot collapse (`i < nx - 1` with i split by
        # `%`) passes for nearly every unit, and its upper count is the estimate.
        least = None
    undecided = roof.undecided if roof is not None and least is not None else ()
    return [with_gain(m, f) for m in earlier] + [_fact(ctx, f, least, undecided)]


def with_gain(finding: F, f: Figures) -> F:
    """`finding` with the model's gain (`ModelGain`; its message states it, with the
    figures `estimated_seconds_after` and `estimated_gain`) where the model captures its
    change; a suggestion under MIN_GAIN becomes a fact. An uncoalesced access or a bank
    conflict that its own analysis already made a fact is weighed all the same."""
    if finding.severity != FeedbackSeverity.SUGGESTION and \
            not isinstance(finding, WarpAccessFinding) or _data_decided(finding):
        return finding
    changed = after(f, finding)
    if changed is None:
        return finding
    estimate = ModelGain(f.seconds, changed.seconds)
    before, later, gain = estimate.seconds_before, estimate.seconds_after, estimate.factor
    m = finding.message
    text = (f"{m.text}; the time model estimates {seconds_text(before)} -> "
            f"{seconds_text(later)} ({gain:.2f}x)")
    if gain < MIN_GAIN:
        text += f", limited by {f.limit} either way"
    severity = FeedbackSeverity.INFO if gain < MIN_GAIN else m.severity
    return replace(finding.revised(text=text, severity=severity, values=(
        *m.values, ("estimated_seconds_after", evaluate(later, {})),
        ("estimated_gain", evaluate(gain, {})))), gain=estimate)


def _data_decided(finding: Finding) -> bool:
    """A bank conflict the data decide (mcl.feedback.data_conflicts): its cost is in the
    estimate, but no change of the array removes it, so it states no gain."""
    return isinstance(finding, BankConflictFinding) and finding.conflict.data_spread is not None


def _fact(ctx: AnalysisContext, f: Figures, least: Figures | None = None,
          undecided: Sequence[int] = ()) -> TimeEstimate:
    """The estimate; where the counts cannot decide an `if` (its lines `undecided`),
    the estimate with its smaller branch in every unit (`least`) and with the larger
    (`f`), never one of them as if it were the estimate."""
    terms = f.terms
    working = sum(any(v > 0 for v in f.phase_limits(p).values()) for p in f.phases)
    figures: dict[str, Any] = {"estimated_seconds": f.seconds,
                               **{"seconds_" + k.replace(" ", "_").replace("-", "_"): v
                                  for k, v in terms.items()},
                               "seconds_launch": f.launch_s,
                               "phases": working,
                               "warps_per_sm": f.warps_per_sm,
                               "loads_in_flight": f.loads_in_flight,
                               "latency_seconds": f.latency_s}
    limits = f.limits
    phases = (f" over {working} phases between barriers, each as long as its largest limit"
              if working > 1 else "")
    if working > 1 and f.overlapped and any(f.only_issues(p) for p in f.phases):
        phases += (" (those that only issue during the other blocks' waits, the SM's issue "
                   "of all no less)")
    clock = ""
    if f.clock_given:
        figures |= {"clock_hz": f.clock_hz, "stated_clock_hz": f.stated_clock_hz}
        clock = (f" at an SM clock of {f.clock_hz / 1e9:.3g} GHz (the description's "
                 f"{f.stated_clock_hz / 1e9:.3g} GHz scaled)")
    estimate = seconds_text(f.seconds)
    if least is not None:
        figures["estimated_seconds_least"] = least.seconds
        ifs = if_lines(undecided)
        estimate = (f"cannot decide {ifs} (the counts cannot tell which branch "
                    f"{'its' if len(undecided) == 1 else 'their'} units take): "
                    f"{seconds_text(least.seconds)} with the smaller branch in every unit, "
                    f"limited by {least.limit}; {estimate} with the larger")
    text = (f"time estimate{clock}: {estimate}{phases}, limited by {f.limit}: "
            f"the launch {seconds_text(f.launch_s)} before the work, device memory "
            f"{seconds_text(limits[DEVICE_MEMORY])}, the SM "
            f"{seconds_text(limits[SM])} (compute {seconds_text(terms[COMPUTE])} + on-chip "
            f"memory {seconds_text(terms[ON_CHIP])}{_issued_text(terms, f)}), latency "
            f"{seconds_text(limits[LATENCY])} ({_unhidden(f, terms[LATENCY], limits[LATENCY])}"
            f"{int(f.warps_per_sm)} warps per SM{_in_blocks(f, terms[LATENCY], limits[LATENCY])}, "
            f"{f.loads_in_flight:.3g} global load{'s' if f.loads_in_flight != 1 else ''} in "
            "flight per warp)"
            + (f", atomic updates of one cache line {seconds_text(limits[ATOMICS])}"
               if ATOMICS in limits else "")
            + (f", {PARTIAL_WRITES} to the cache {seconds_text(terms[PARTIAL_WRITES])}"
               if PARTIAL_WRITES in terms else ""))
    emit = Emitter(ctx.facts, "timemodel", ctx.values)
    message = emit.message(
        code_of(TimeEstimate), FeedbackSeverity.INFO, text, ctx.function.span, figures,
        hint="the largest of the three limits is the estimate, or, where barriers split "
        "the kernel, the sum over its phases of each one's largest (docs/feedback.md, "
        "\"Time estimate\"); each suggestion the model can weigh states the estimate after "
        "its change")
    return TimeEstimate(message, seconds=f.seconds, limit=f.limit, terms=tuple(terms.items()),
                        clock_hz=f.clock_hz if f.clock_given else None,
                        warps_per_sm=f.warps_per_sm, loads_in_flight=f.loads_in_flight,
                        latency_seconds=f.latency_s,
                        least_seconds=least.seconds if least is not None else None)


def _issued_text(terms: dict[str, float], f: Figures) -> str:
    """The instruction issue the SM's limit is no less than, where it was counted; where
    the compiler was asked and ran past its budget, that it was not analysed."""
    if f.not_compiled:
        return f"; the compiler's instructions not analysed: {f.not_compiled}"
    if INSTRUCTIONS not in terms:
        return ""
    return f"; the issue of the compiler's instructions {seconds_text(terms[INSTRUCTIONS])}"


def _unhidden(f: Figures, waits: float, bound: float) -> str:
    """Where the latency limit is more than the waits (`Figures.latency_bound`), what
    it adds: the issue of the warps that wait, which the others do not overlap; where
    other blocks hide waits at barriers (`Figures.cover`), how much."""
    hidden = f.hidden()
    if hidden:
        return (f"{seconds_text(waits)} of waits, of which {seconds_text(hidden)} at "
                "barriers hidden behind the other blocks' work; ")
    if bound <= waits * 1.001 or not waits:
        return ""
    return (f"{seconds_text(waits)} of waits and the issue of the warps that wait, which "
            "the others do not hide; ")


def _in_blocks(f: Figures, waits: float, bound: float) -> str:
    """The blocks the warps of an SM form, where the latency limit adds their issue."""
    if not _unhidden(f, waits, bound):
        return ""
    return f" in {f.blocks_per_sm:g} block{'s' if f.blocks_per_sm != 1 else ''}"


def has_time_model(hwd: Any) -> bool:
    """A leaf with an arithmetic peak and a banked on-chip memory with a bandwidth (hopper,
    fermi); the analysis itself checks the figures it reads."""
    return peak_flops(hwd) is not None and _on_chip(hwd) is not None

