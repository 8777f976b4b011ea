"""What mcl's feedback predicts for one function at its leaf, read from the feedback's
findings (the typed records of mcl.feedback.findings, as `mcl check --feedback` finds
them) and the roofline of mcl.report.attained. Nothing here re-derives a figure, so a
better analysis shows up in `mcl profile` without a change here.

Which record gives which figure (docs/profile.md, "What is compared"):

- time: the least time the roofs allow (roofline), and the time model's estimate
  (`TimeEstimate`);
- DRAM traffic: `TransferTotals` (bytes in: every byte the kernel reads must come from
  device memory once; bytes out: every byte it writes must go there once);
- coalescing: `UncoalescedAccess` (lines x line bytes per warp request, per access) or
  `OptimalMemoryAccess` (all coalesced);
- bank conflicts: `BankConflictFinding` (its wavefronts over the ideal per access, over every
  request; the worst degree where only that is known) or `OptimalMemoryAccess`;
- occupancy: `OccupancyFinding` (warps per SM of the warp slots; registers per thread);
- divergence: `DivergentBranch` (lane efficiency per branch);
- suggestions: every suggestion, with the time model's gain (the estimate before over the
  estimate after its change, `ModelGain`) where it states one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from mcl.feedback.findings import (
    BankConflictFinding,
    DivergentBranch,
    Finding,
    OccupancyFinding,
    OptimalMemoryAccess,
    TimeEstimate,
    TransferTotals,
    UncoalescedAccess,
    WarpAccessUnknown,
    number,
)
from mcl.feedback.messages import FeedbackSeverity
from mcl.feedback.occupancy import BLOCK_SLOTS, REGISTERS, SHARED_MEMORY, THREADS, WARPS

SECTOR_BYTES = 32  # the unit of a global memory request on NVIDIA GPUs since Fermi's L1


@dataclass
class AccessPrediction:
    """A figure the feedback states for one access (one MCPL line)."""

    line: int
    text: str
    value: float
    excess: float | None = None  # for a coalescing figure: lines over minimum lines
    store: bool | None = None  # for a coalescing figure: a store (None: not stated)


@dataclass
class Suggestion:
    line: int
    code: str
    message: str
    # the time model's speed-up factor (estimate before over after), where it states one
    estimated_gain: float | None
    estimated_seconds_after: float | None = None


@dataclass
class Prediction:
    """The feedback's figures for one function; None where it states none."""

    function: str
    bound_seconds: float | None = None
    bound_by: str | None = None
    estimated_seconds: float | None = None
    # where the model cannot decide an `if`: the estimate with its smaller branch
    # (`estimated_seconds` is the one with the larger)
    estimated_least_seconds: float | None = None
    dram_read_bytes: float | None = None
    dram_write_bytes: float | None = None
    all_coalesced: bool | None = None  # memory-access-optimal said so
    sectors_per_request: list[AccessPrediction] = field(default_factory=list)
    conflict_free: bool | None = None
    conflict_degree: list[AccessPrediction] = field(default_factory=list)
    theoretical_occupancy_pct: float | None = None  # what the resources allow
    occupancy_pct: float | None = None  # with the grid's waves: what a run can reach
    registers_per_thread: float | None = None
    grid_blocks: int | None = None  # blocks the kernel launches, where known
    model_clock_hz: float | None = None  # the SM clock of the estimate, where not stated
    branch_efficiency: list[AccessPrediction] = field(default_factory=list)
    suggestions: list[Suggestion] = field(default_factory=list)


# The resources whose limits make the theoretical occupancy (blocks per SM each allows);
# the grid's limit is left out, as CUDA's occupancy calculator and Nsight Compute's
# "theoretical occupancy" leave it out (the occupancy finding keeps it apart).
RESOURCE_LIMITS = (BLOCK_SLOTS, THREADS, WARPS, REGISTERS, SHARED_MEMORY)


def occupancy(p: Prediction, found: OccupancyFinding) -> None:
    warps, slots, blocks = found.warps_per_sm, found.warp_slots, found.blocks_per_sm
    p.registers_per_thread = float(found.registers_per_thread)
    p.grid_blocks = found.grid_blocks
    if not slots:
        return
    p.occupancy_pct = p.theoretical_occupancy_pct = 100.0 * warps / slots
    limits = [limit for name, limit in found.block_limits if name in RESOURCE_LIMITS]
    if limits and blocks:
        p.theoretical_occupancy_pct = 100.0 * min(limits) * (warps / blocks) / slots
        waves = wave_occupancy(found.grid_blocks, found.multiprocessors, min(limits),
                               warps / blocks, slots)
        if waves is not None:
            p.occupancy_pct = waves


def wave_occupancy(grid: float | None, sms: float | None, per_sm: float,
                   warps_per_block: float, slots: float) -> float | None:
    """The achieved occupancy (percent of the warp slots) of the launch's grid in waves,
    where every block takes as long: full waves of `per_sm` blocks (what the resources
    allow) on every SM, then the last wave's remaining blocks, one an SM; averaged as
    Nsight Compute averages achieved occupancy, over the cycles an SM has work (an SM
    without a block in the last wave is idle, not counted). A grid smaller than one wave
    is its last wave. Blocks that finish unevenly only lower it: it is what the grid
    allows, not a bound the device must reach. None where the grid (`grid` blocks on
    `sms` SMs) is not known."""
    if not grid or not sms or per_sm <= 0:
        return None
    full, rest = divmod(grid, per_sm * sms)
    busy = full * sms + min(rest, sms)  # SM-waves with a block
    return 100.0 * grid * warps_per_block / (busy * slots)


def predict(function: str, findings: Iterable[Finding]) -> Prediction:
    """The figures of `function` in the feedback's findings."""
    p = Prediction(function)
    unknown = conflicts = uncoalesced = False
    for f in findings:
        if f.function != function:
            continue
        line = f.span.line if f.span is not None else 0
        text = f.message.text
        match f:
            case TransferTotals():
                p.dram_read_bytes = number(f.bytes_in)
                p.dram_write_bytes = number(f.bytes_out)
            case OccupancyFinding():
                occupancy(p, f)
            case OptimalMemoryAccess():
                p.all_coalesced = bool(f.coalesced)
                p.conflict_free = bool(f.conflict_free)
            case UncoalescedAccess():
                uncoalesced = True
                change = f.coalesce
                p.all_coalesced = False
                p.sectors_per_request.append(AccessPrediction(
                    line, text, change.lines * change.line_bytes / SECTOR_BYTES,
                    change.lines / (change.minimum_lines or 1), change.access.kind == "store"))
            case BankConflictFinding():
                conflicts = True
                p.conflict_free = False
                # (wavefronts over the ideal over every request of the line, as Nsight
                # Compute counts them; the worst request's degree where that is all)
                ratio = f.conflict.line_wavefronts or f.conflict.wavefronts
                p.conflict_degree.append(AccessPrediction(
                    line, text, float(ratio if ratio is not None else f.conflict.degree)))
            case DivergentBranch():
                p.branch_efficiency.append(AccessPrediction(line, text,
                                                            100.0 * f.lane_efficiency))
            case WarpAccessUnknown():
                unknown = True
            case TimeEstimate():
                p.estimated_seconds = f.seconds
                p.estimated_least_seconds = f.least_seconds
                p.model_clock_hz = f.clock_hz
        # a suggestion, or one the time model weighed at under 3% (a fact since)
        if f.severity == FeedbackSeverity.SUGGESTION or f.gain is not None:
            p.suggestions.append(Suggestion(
                line, f.code, text, None if f.gain is None else f.gain.factor,
                None if f.gain is None else f.gain.seconds_after))
    silent_means_optimal(p, unknown, conflicts, uncoalesced)
    return p


def silent_means_optimal(p: Prediction, unknown: bool, conflicts: bool, uncoalesced: bool
                         ) -> None:
    """The lock-step analysis states its "optimal memory access" fact only where it has
    nothing to report. Where it reported a bank conflict but no uncoalesced access (or
    the other way round) and examined every access (no `warp-access-unknown`), the other
    kind of access is optimal all the same."""
    if unknown:
        return
    if p.all_coalesced is None and conflicts:
        p.all_coalesced = True
    if p.conflict_free is None and uncoalesced:
        p.conflict_free = True
