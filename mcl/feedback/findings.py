"""Findings: what an analysis found, as typed records (docs/feedback.md, "Findings").

An analysis returns `Finding`s. Each carries the `Message` rendered for text, JSON and
the editor (its text, code, severity, place and figures: the `Value`s), and a record type
states in typed fields what another analysis, `mcl profile` or a rewrite of the kernel
needs: the figures as numbers, the model's terms, and for a finding that proposes a
change of the kernel a `ProposedChange` that says which array, access or loop (by name
and span) and the parameters of the change. The time model reads the occupancy
finding's `RaiseOccupancy`, a `CoalesceAccess`, a `RemoveBankConflict` or a
`KeepInRegister`; nothing reads a message's code or a figure by its name.

Each record type that others read declares its message code (`CODE`, a `MessageCode`):
the analysis that makes the record emits its message under that code, and the catalogue
(mcl.feedback.codes) lists it; `LoopLineFetches`, whose messages take the code of their
verdict, is the one exception (the cache analysis declares its codes). A finding of a
code without a record type of its own (the facts only a reader of the report uses, a
description's own feedback function) is a plain `Finding`.

This module is at the bottom of the package (docs/architecture.md, "Feedback in
layers"): it imports only the message types, so every analysis and reader can import it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from mcl.diagnostics import Span
from mcl.feedback.message_code import LEFT_OUT, SILENT_WHEN_UNCHANGED, MessageCode
from mcl.feedback.messages import FeedbackSeverity, Message, Value

if TYPE_CHECKING:
    from mcl.feedback.facts.kernel import Access, Loop

F = TypeVar("F", bound="Finding")

# The sections of docs/feedback.md the codes declared here are catalogued in (the
# analyses that emit them declare their other codes in the same sections).
OPSTATS_DOCS = "operation-statistics-opstats-paper-62"
FUNCTIONS_DOCS = "performance-feedback-functions-functions-paper-65"
MEMORY_DOCS = "faster-memory-memory-paper-63"
TRANSFERS_DOCS = "transfers-transfers-levels-with-a-host"
ELEMENTS_DOCS = "several-elements-per-unit-elements"
IRREGULAR_DOCS = "irregular-access-irregular"
ROOFLINE_DOCS = "roofline-roofline-levels-with-a-peak"
TIMEMODEL_DOCS = "time-estimate-timemodel"


# ----------------------------------------------------------------------------- places


@dataclass(frozen=True)
class LoopPlace:
    """A loop of the kernel as its source names it: `foreach (int t in threads)` is
    `t` over par_group `threads`, `for (int k = ...)` is `k`."""

    name: str  # the loop variable
    kind: str  # "foreach" or "for"
    group: str | None  # the par_group of a foreach
    span: Span | None

    @classmethod
    def of(cls, loop: Loop) -> LoopPlace:
        return cls(loop.name, loop.kind, loop.group, loop.span)


@dataclass(frozen=True)
class AccessPlace:
    """One load or store of the kernel: the array (the root of a view), the access as
    written, where it stands, and the loops around it (outermost first)."""

    array: str
    text: str  # e.g. "b[k, j]"
    span: Span | None
    kind: str  # "load" or "store"
    space: str | None
    loops: tuple[LoopPlace, ...] = ()

    @classmethod
    def of(cls, access: Access, text: str, kind: str) -> AccessPlace:
        """The place of a fact-level access (`text` as the analysis prints it)."""
        return cls(access.binding.root.name, text, access.node.span, kind, access.space,
                   tuple(LoopPlace.of(loop) for loop in access.item.loops))


# ----------------------------------------------------------------------------- changes


@dataclass(frozen=True)
class ProposedChange:
    """A change of the kernel a suggestion proposes, precise enough to be made by a
    rewrite: the subclasses name what changes (array, access, loop) and how."""


@dataclass(frozen=True)
class RaiseOccupancy(ProposedChange):
    """More warps per SM: `warps_per_sm` now, `warps_per_sm_after` with the change
    advised that gives most (`advice` says each in words: a smaller block, fewer
    registers, a larger grid), where `limits` (the resources that bind) allow."""

    warps_per_sm: int
    warps_per_sm_after: int
    limits: tuple[str, ...]
    advice: tuple[str, ...]


@dataclass(frozen=True)
class CoalesceAccess(ProposedChange):
    """Let consecutive lanes of a warp touch consecutive elements in `access`: per warp
    execution it touches `lines` lines (or sectors) of `line_bytes` where
    `minimum_lines` would do; a warp issues it `warp_executions` times (None without
    the sizes)."""

    access: AccessPlace
    lines: int
    minimum_lines: int
    line_bytes: int
    warp_executions: float | None
    # The cache lines of `wavefront_bytes` the access touches beyond the fewest, per warp
    # execution, where `lines` counts sectors (0 where it counts whole lines already).
    extra_wavefronts: int = 0
    wavefront_bytes: int = 0

    @property
    def extra_bytes(self) -> float | None:
        """What the lines beyond the fewest cost the on-chip memory, in bytes of its
        bandwidth, over every warp execution: the bytes of the extra sectors, or, where
        more, one whole cache line's width per extra line touched. The L1 serves a warp's
        request one cache line per cycle (a wavefront, in Nsight Compute's terms), however
        few of the line's sectors it uses: lanes that each touch their own line take 32
        cycles of a 128 B/cycle memory for 32 sectors of 32 B."""
        if self.warp_executions is None:
            return None
        sectors = (self.lines - self.minimum_lines) * self.line_bytes
        wavefronts = self.extra_wavefronts * self.wavefront_bytes
        return self.warp_executions * max(sectors, wavefronts)


@dataclass(frozen=True)
class RemoveBankConflict(ProposedChange):
    """Pad the array of `access` or change its index so that a warp's lanes use
    distinct banks: `degree` accesses to one bank of `banks` banks of `word_bytes` now
    run one after another in the worst request, `extra_passes` more than the fewest on
    average (`wavefronts` times the fewest), `warp_executions` times (None without the
    sizes)."""

    access: AccessPlace
    degree: int
    banks: int
    word_bytes: int
    warp_executions: float | None
    # Passes over the banks beyond the fewest, per request on average over every request
    # (a scan's levels conflict differently; `degree` is the worst); None: `degree` - 1.
    extra_passes: float | None = None
    # Wavefronts over the fewest, over every request of this access; None: `degree`.
    wavefronts: float | None = None
    # The same over every shared access the compiler issues at the access's line, a
    # 64-bit pair counted at the access that issues it (Nsight Compute's `L1 Wavefronts
    # Shared` over `L1 Wavefronts Shared Ideal` of the line); None: not surveyed.
    line_wavefronts: float | None = None
    # Where the data decide the index (mcl.feedback.data_conflicts): how many elements it
    # can reach. No layout of the array moves such lanes apart: a cost, not a change.
    data_spread: int | None = None

    @property
    def extra_bytes(self) -> float | None:
        """The passes over the banks beyond the fewest, in bytes, over every execution."""
        if self.warp_executions is None:
            return None
        extra = self.extra_passes if self.extra_passes is not None else self.degree - 1
        return self.warp_executions * extra * self.banks * self.word_bytes


@dataclass(frozen=True)
class KeepInRegister(ProposedChange):
    """Load the warp-uniform element of `access` into a local variable before the
    outermost of `loops` (the for-loops that load it again and that it does not depend
    on) and use that: `iterations` loads become one, `loads_saved` loads and their
    `bytes_saved` bytes fewer in all; `through_cache`: the loads go through a cache to
    device memory (their latency counts)."""

    access: AccessPlace
    loops: tuple[LoopPlace, ...]
    iterations: Value
    loads_saved: Value
    bytes_saved: Value
    through_cache: bool


@dataclass(frozen=True)
class ShareInFasterMemory(ProposedChange):
    """Declare an array in `space` for the elements of `access` that the units of
    `sharers` (loops over par_groups, innermost last) load, fill it together (one element
    per unit), barrier, and read it there instead of in `current`."""

    access: AccessPlace
    space: str
    current: str | None
    sharers: tuple[LoopPlace, ...]
    units: Value


@dataclass(frozen=True)
class ComputeSeveralElements(ProposedChange):
    """Let each unit of the foreach `loop` compute several elements of the output
    `array` (its store `store`) in a for-loop, and launch fewer units, but no fewer than
    `resident` (the units the description keeps resident): now `units` units compute
    one element each."""

    array: str
    store: AccessPlace
    loop: LoopPlace
    units: Value
    resident: Value


@dataclass(frozen=True)
class PrivatiseArray(ProposedChange):
    """Give each unit of the `owners` loops (the outer of the sharing loops; none: one
    copy for the kernel) a copy of the contended `array` in `space` (`faster`: a faster
    space than its own) of `copy_bytes`, shared by the units of the `sharers` loops, that
    `store` updates with atomicAdd; after a barrier, add the `copies` copies into
    `array`."""

    array: str
    store: AccessPlace
    space: str
    faster: bool
    owners: tuple[LoopPlace, ...]
    sharers: tuple[LoopPlace, ...]
    copies: Value
    copy_bytes: Value


# ----------------------------------------------------------------------------- findings


# A change whose estimated gain is below this factor is a fact, not a suggestion (as
# Nsight Compute's rules stay quiet below a small estimated speedup); the time model
# (mcl.feedback.analyses.timemodel) and the default view's rule read it.
MIN_GAIN = 1.03


@dataclass(frozen=True)
class ModelGain:
    """The time model's estimate of a proposed change (mcl.feedback.analyses.timemodel):
    the kernel's time before and after it, and their ratio."""

    seconds_before: float
    seconds_after: float

    @property
    def factor(self) -> float:
        return self.seconds_before / self.seconds_after if self.seconds_after > 0 else 1.0


@dataclass(frozen=True)
class Finding:
    """What an analysis found: its `message` (for text, JSON and the editor: text, code,
    severity, span, function, loops, figures), the `change` it proposes where it proposes
    one, and the time model's `gain` for that change where the model weighs it."""

    message: Message
    change: ProposedChange | None = None
    gain: ModelGain | None = None

    # The code a record type's message is emitted under (None: the message's own).
    CODE: ClassVar[MessageCode | None] = None

    @property
    def code(self) -> str:
        return self.message.code

    @property
    def severity(self) -> FeedbackSeverity:
        return self.message.severity

    @property
    def span(self) -> Span | None:
        return self.message.span

    @property
    def function(self) -> str:
        return self.message.function

    @property
    def loops(self) -> tuple[str, ...]:
        return self.message.loops

    @property
    def figures(self) -> tuple[tuple[str, Value], ...]:
        return self.message.values

    def revised(self: F, **changes: Any) -> F:
        """The same finding with its message changed (`approximate=True`, a new text)."""
        return replace(self, message=replace(self.message, **changes))


def finding_of(item: Message | Finding) -> Finding:
    """A message (of a description's feedback function, or an installed analysis that
    returns messages) as a plain finding; a finding as it is."""
    return item if isinstance(item, Finding) else Finding(item)


def every(findings: Sequence[Finding], kind: type[F], function: str | None = None
          ) -> list[F]:
    """The findings of record type `kind` (of `function` where given), in order."""
    return [f for f in findings if isinstance(f, kind)
            and (function is None or f.function == function)]


def first(findings: Sequence[Finding], kind: type[F], function: str | None = None
          ) -> F | None:
    """The first finding of record type `kind` (of `function` where given)."""
    return next((f for f in findings if isinstance(f, kind)
                 and (function is None or f.function == function)), None)


def number(v: Value | None) -> float | None:
    """The number of a figure, None where it is symbolic or missing."""
    return None if v is None or v.numeric is None else float(v.numeric)


# The records other analyses read, each with the code its message has.


@dataclass(frozen=True, kw_only=True)
class OperationCounts(Finding):
    """A function's operation counts (mcl.feedback.analyses.opstats, paper 6.2): its
    computational instructions and its data accesses (loads and stores of memory), the
    two figures Table II states per version."""

    computational: Value
    data_accesses: Value

    CODE: ClassVar[MessageCode | None] = MessageCode(
        "opstats-summary", "operation counts", (FeedbackSeverity.INFO,), OPSTATS_DOCS,
        headline=True)


@dataclass(frozen=True, kw_only=True)
class LoopLineFetches(Finding):
    """Section 6.4's verdict on one access in one loop (mcl.feedback.analyses.cache): the
    cache lines the loop fetches for it in the best case (`best_lines`). Its code is the
    verdict's (`cache-benefits`, `cache-may-benefit`, `cache-no-benefit`), which the cache
    analysis declares. `loop` is the loop whose iterations the verdict is about (the
    message's "in loop vi"), None where the record was made without it."""

    best_lines: Value
    loop: LoopPlace | None = None


@dataclass(frozen=True)
class SpaceTraffic:
    """The bytes of one memory space the roofline counts: the compulsory traffic (each
    array moved once) and the bytes every access moves without reuse (what passes the
    L1), None where it states none for the space."""

    space: str
    compulsory: Value
    no_reuse: Value | None


@dataclass(frozen=True, kw_only=True)
class RooflineFinding(Finding):
    """The roofline's bound (mcl.feedback.analyses.roofline): the floating-point
    operations and each space's traffic; where `if`s the counts cannot decide hold work
    (their lines `undecided`), those are upper bounds, and `least_flops` and
    `least_traffic` the figures of the lower counts (each such `if` at its smaller
    branch)."""

    flops: Value
    traffic: tuple[SpaceTraffic, ...]
    least_flops: Value | None = None
    least_traffic: tuple[SpaceTraffic, ...] | None = None
    undecided: tuple[int, ...] = ()

    CODE: ClassVar[MessageCode | None] = MessageCode(
        "roofline", "the bound and the attainable performance (roofline)",
        (FeedbackSeverity.INFO,), ROOFLINE_DOCS, headline=True,
        column=LEFT_OUT)


@dataclass(frozen=True, kw_only=True)
class OccupancyFinding(Finding):
    """Blocks and warps per SM and what limits them (mcl.feedback.occupancy); `change`
    is a `RaiseOccupancy` where a change is advised. `block_limits`: the blocks per SM
    each resource allows (`block slots`, `threads`, `warps`, `registers`, `shared
    memory`; the grid's own limit apart, as `grid_blocks`)."""

    warps_per_sm: int
    warp_slots: int
    blocks_per_sm: int
    multiprocessors: int | None
    grid_blocks: int | None
    registers_per_thread: float
    block_limits: tuple[tuple[str, float], ...]
    refusal: str | None = None  # why no block fits at all (mcl.feedback.block_refusal)

    CODE: ClassVar[MessageCode | None] = MessageCode(
        "occupancy", "occupancy below 100%",
        (FeedbackSeverity.INFO, FeedbackSeverity.SUGGESTION), FUNCTIONS_DOCS, headline=True)

    @property
    def raise_occupancy(self) -> RaiseOccupancy | None:
        return self.change if isinstance(self.change, RaiseOccupancy) else None


@dataclass(frozen=True, kw_only=True)
class WarpAccessFinding(Finding):
    """A load or store a warp makes with more transactions than it needs; `change` says
    how to remove them, `transactions_saved` the share of the space's transactions that
    saves (None without the sizes)."""

    access: AccessPlace
    active_lanes: int
    transactions_saved: float | None = None

    @property
    def extra_bytes(self) -> float | None:
        change = self.change
        if isinstance(change, (CoalesceAccess, RemoveBankConflict)):
            return change.extra_bytes
        return None


@dataclass(frozen=True, kw_only=True)
class UncoalescedAccess(WarpAccessFinding):
    """A global load or store whose lanes touch more lines than their bytes need
    (mcl.feedback.lockstep); `change` is a `CoalesceAccess`."""

    CODE: ClassVar[MessageCode | None] = MessageCode(
        "uncoalesced", "uncoalesced global memory access",
        (FeedbackSeverity.SUGGESTION, FeedbackSeverity.INFO), FUNCTIONS_DOCS)

    @property
    def coalesce(self) -> CoalesceAccess:
        assert isinstance(self.change, CoalesceAccess)
        return self.change


@dataclass(frozen=True, kw_only=True)
class BankConflictFinding(WarpAccessFinding):
    """A shared-memory access whose lanes hit one bank several times
    (mcl.feedback.lockstep); `change` is a `RemoveBankConflict`."""

    CODE: ClassVar[MessageCode | None] = MessageCode(
        "bank-conflict", "shared-memory bank conflict",
        (FeedbackSeverity.SUGGESTION, FeedbackSeverity.INFO), FUNCTIONS_DOCS)

    @property
    def conflict(self) -> RemoveBankConflict:
        assert isinstance(self.change, RemoveBankConflict)
        return self.change


@dataclass(frozen=True, kw_only=True)
class OptimalMemoryAccess(Finding):
    """Every examined global access coalesced (`coalesced` of them) and no bank conflict
    in the `conflict_free` shared-memory accesses (mcl.feedback.lockstep)."""

    coalesced: int
    conflict_free: int

    CODE: ClassVar[MessageCode | None] = MessageCode(
        "memory-access-optimal", "coalescing and bank conflicts",
        (FeedbackSeverity.INFO,), FUNCTIONS_DOCS, headline=True)


@dataclass(frozen=True, kw_only=True)
class WarpAccessUnknown(Finding):
    """An access whose pattern over a warp the lock-step analysis could not tell (a
    warning), or whose bank conflicts it decided only in some loop iterations (info)."""

    access: AccessPlace

    CODE: ClassVar[MessageCode | None] = MessageCode(
        "warp-access-unknown", "access pattern of a warp unknown",
        (FeedbackSeverity.WARNING, FeedbackSeverity.INFO), FUNCTIONS_DOCS)


@dataclass(frozen=True, kw_only=True)
class DivergentBranch(Finding):
    """A branch the lanes of a warp take different ways (mcl.feedback.lockstep):
    `lane_efficiency`, the share of the lanes' issue slots that do work."""

    lane_efficiency: float

    CODE: ClassVar[MessageCode | None] = MessageCode(
        "divergence", "divergent branch",
        (FeedbackSeverity.SUGGESTION, FeedbackSeverity.INFO), FUNCTIONS_DOCS)


@dataclass(frozen=True, kw_only=True)
class TransferTotals(Finding):
    """The bytes the kernel moves between host and device memory
    (mcl.feedback.analyses.transfers): every byte it reads in, every byte it writes
    out, once."""

    bytes_in: Value
    bytes_out: Value

    CODE: ClassVar[MessageCode | None] = MessageCode(
        "transfers-total", "host <-> device transfers", (FeedbackSeverity.INFO,),
        TRANSFERS_DOCS, headline=True,
        column=SILENT_WHEN_UNCHANGED)


@dataclass(frozen=True, kw_only=True)
class RegisterReload(Finding):
    """A warp-uniform element loaded again in for-loops it does not depend on
    (mcl.feedback.analyses.memory); `change` is a `KeepInRegister`."""

    CODE: ClassVar[MessageCode | None] = MessageCode(
        "memory-register", "keep a warp-uniform element in a register",
        (FeedbackSeverity.SUGGESTION, FeedbackSeverity.INFO), MEMORY_DOCS)

    @property
    def keep(self) -> KeepInRegister:
        assert isinstance(self.change, KeepInRegister)
        return self.change


@dataclass(frozen=True, kw_only=True)
class FasterMemoryProposal(Finding):
    """Reused data the units of some loops could share in a faster memory space
    (mcl.feedback.analyses.memory); `change` is a `ShareInFasterMemory`."""

    CODE: ClassVar[MessageCode | None] = MessageCode(
        "memory-faster-space", "share reused data in a faster memory",
        (FeedbackSeverity.SUGGESTION,), MEMORY_DOCS)


@dataclass(frozen=True, kw_only=True)
class SeveralElementsProposal(Finding):
    """Units that compute one output element each, more than the device keeps resident
    (mcl.feedback.analyses.elements); `change` is a `ComputeSeveralElements`."""

    CODE: ClassVar[MessageCode | None] = MessageCode(
        "elements-several-per-unit", "compute several elements per unit",
        (FeedbackSeverity.INFO,), ELEMENTS_DOCS)


@dataclass(frozen=True, kw_only=True)
class PrivatisationProposal(Finding):
    """A contended array that copies per group of units would relieve
    (mcl.feedback.analyses.irregular); `change` is a `PrivatiseArray`."""

    CODE: ClassVar[MessageCode | None] = MessageCode(
        "store-privatise", "privatise a contended array", (FeedbackSeverity.SUGGESTION,),
        IRREGULAR_DOCS)


@dataclass(frozen=True, kw_only=True)
class TimeEstimate(Finding):
    """The time model's estimate (mcl.feedback.analyses.timemodel): `seconds`, the
    limit of the phases that take most of it, the seconds each term needs alone
    (`terms`: device memory, on-chip memory, compute, latency), the SM clock it is
    evaluated at where it is not the description's (`clock_hz`), and the warps and
    loads in flight it assumes. Where the counts cannot decide an `if`, `seconds` is the
    estimate with its larger branch in every unit and `least_seconds` the one with its
    smaller: the model cannot tell which, and says so."""

    seconds: float
    limit: str
    terms: tuple[tuple[str, float], ...]
    clock_hz: float | None
    warps_per_sm: float
    loads_in_flight: float
    latency_seconds: float
    least_seconds: float | None = None

    CODE: ClassVar[MessageCode | None] = MessageCode(
        "time-estimate", "the model's time estimate", (FeedbackSeverity.INFO,),
        TIMEMODEL_DOCS, headline=True, column=LEFT_OUT)


def declaration(kind: type[Finding]) -> MessageCode:
    """The code a record type declares (for the catalogue, mcl.feedback.codes)."""
    assert kind.CODE is not None, f"{kind.__name__} declares no code"
    return kind.CODE


def code_of(kind: type[Finding]) -> str:
    """The message code of a record type: the one its findings' messages have."""
    return declaration(kind).code
