"""Proposing faster memories (paper section 6.3; feedback.md analysis 4).

"For a variable that has data-reuse, the compiler retrieves the memory space it is
declared in. As above there are two cases: the variable is independent from specific
foreach statements, or the variable depends on all of them but there is still data-reuse.
In the first case, the compiler retrieves all memory-spaces that are available in the
scope of this foreach [...] and compares these memory spaces with the memory space of the
variable to determine whether there is a memory space that is faster. In the second case,
the compiler performs the same analysis, but on each pair of loops for each dimension."

The spaces available to the units of a foreach over par_group G are those visible inside
G: declared in G or around it, so every unit of G sees the same copy (gpu: `local`, in
`block`, for a foreach over `threads`). "Faster" is the description's judgement
(`HardwareDescription.is_faster`: interconnect bandwidth/latency, then proximity to the
execution units, then capacity). Read-only spaces are not proposed: the kernel could not
fill them.

Not proposed either (a hint that would slow a kernel down is worse than none):
moving an element out of a read-only space that a cache of its own holds (fermi's
`constant` and its constant cache) when the units of a lock-step group all read the same
element at once. The cache broadcasts one element to the whole warp in one access; a
copy in `shared` costs a store, a barrier and the same broadcast load. Convolution fermi
(v1) moved its filter into `constant` for this reason (paper section 7, Table III); the
message `memory-broadcast` says so instead.

Two more cases where a copy in `shared` would not pay (measured on an H100 with
hand-written CUDA copies of translated kernels: docs/feedback.md, "Faster memory"):

- A warp-uniform load (`memory-register`): the element does not depend on any foreach
  over the lanes of the lock-step group (every thread of a warp reads the same one), so
  the warp loads it in one transaction, a broadcast, from `global` through the L1 as
  from `shared`: a copy in `shared` adds a store and a barrier and saves no transaction.
  What costs is loading it again: when the innermost loops around the read are
  for-loops it does not depend on (`weight[r]` inside `for k`), every thread loads the
  same element in each of their iterations, and loading it once into a local variable
  before the outermost of them keeps it in a register for all of them. Only those
  loops: a dependent loop inside one (`for k { for r { w[r] } }`) changes the element
  between two reuses, and keeping all of them would need an array in registers.
  Without such loops (each thread reads the element once) the `shared` proposal stays,
  subject to the next case.
- Overlap the cache already serves (`memory-cache-serves`): at a level whose
  description has a cache in front of the current space (hopper's l1 for `global`),
  the units of one block reuse each other's elements through that cache as long as the
  lines the block touches in its run fit it (`footprint_bytes`, an upper bound): a
  FIR filter's `x[i + k]`, 256 + taps - 1 floats per block, or its `w[k]`. A copy in
  `shared` then moves the same bytes once more and adds a barrier (20% slower for the
  FIR filter). The proposal becomes that fact. A block whose elements do not fit
  (matmul's rows of `a` over the whole loop over k, the paper's tiles) keeps it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sympy

from mcl.feedback.analysis import AnalysisContext
from mcl.feedback.emit import Emitter, conjunction, expr_text, loop_text
from mcl.feedback.facts.contention import product
from mcl.feedback.facts.costs import executions
from mcl.feedback.facts.hardware import cached_spaces, faster_space, lockstep_group
from mcl.feedback.facts.kernel import Access, Loop
from mcl.feedback.facts.layout import element_layout
from mcl.feedback.facts.reuse import (
    LoopReuse,
    RatioReuse,
    ReuseFacts,
    Unpredictable,
    footprint_bytes,
    register_hint,
    unknown_finding,
)
from mcl.feedback.facts.strides import compare
from mcl.feedback.facts.symbolic import identical
from mcl.feedback.findings import (
    MEMORY_DOCS,
    AccessPlace,
    FasterMemoryProposal,
    Finding,
    KeepInRegister,
    LoopPlace,
    RegisterReload,
    ShareInFasterMemory,
    code_of,
    declaration,
)
from mcl.feedback.message_code import MessageCode
from mcl.feedback.messages import FeedbackSeverity, Message
from mcl.hdl.model import UNLIMITED, ParGroup, ParUnit

if TYPE_CHECKING:
    from mcl.hdl.model import HardwareDescription


# The codes of this analysis (mcl.feedback.codes; the catalogue is docs/feedback.md).
DOCS = MEMORY_DOCS  # its section of docs/feedback.md
MESSAGE_CODES = (
    declaration(FasterMemoryProposal),
    MessageCode("memory-broadcast", "read-only data broadcast by its cache",
                (FeedbackSeverity.INFO,), DOCS),
    declaration(RegisterReload),
    MessageCode("memory-cache-serves", "a cache already serves the reuse between units",
                (FeedbackSeverity.INFO,), DOCS),
)


def has_several_spaces(hwd: HardwareDescription) -> bool:
    return len(hwd.memory_spaces()) > 1


def faster_memory(ctx: AnalysisContext) -> list[Finding]:
    """Reused data that the units of a foreach could share in a faster memory space."""
    hwd, facts = ctx.hwd, ctx.facts
    emit = Emitter(facts, "memory", ctx.values)
    out: list[Finding] = []
    seen: set[tuple[Access, Loop]] = set()
    for finding in ctx.get(ReuseFacts).findings:
        acc = finding.access
        current = acc.binding.root.space
        candidates: list[Loop] = []
        match finding:
            case LoopReuse():
                candidates = [x for x in finding.independent if x.kind == "foreach"]
            case RatioReuse():
                if finding.loads_once(ctx.values):
                    continue  # no reuse at these sizes: nothing to share
                candidates = list(finding.sharing)
            case Unpredictable():  # nothing to propose
                continue
            case _:
                unknown_finding(finding)
        broadcast = _broadcast(emit, finding, current)
        if broadcast is not None:
            out.append(Finding(broadcast))
            continue
        # One proposal per space: the warps and the threads of a block that all load an
        # element can share one copy in `shared`.
        by_space: dict[str, list[Loop]] = {}
        for loop in candidates:
            key = (acc, loop)
            if key in seen or loop.group is None:
                continue
            seen.add(key)
            space = faster_space(hwd, loop.group, current)
            if space is not None and not _fills(acc, space):
                by_space.setdefault(space, []).append(loop)
        register = _register(emit, finding) if by_space else None
        if register is not None:
            out.append(register)
            continue
        for space, loops in by_space.items():
            served = _served(ctx, emit, finding, space, current, loops)
            out.append(Finding(served) if served is not None
                       else _proposal(emit, finding, space, current, loops))
    return out


def _register(emit: Emitter, finding: LoopReuse | RatioReuse) -> RegisterReload | None:
    """`memory-register` for a warp-uniform read that the innermost loops around it
    re-read (the module docstring says when); None otherwise."""
    lanes = lockstep_group(emit.facts.hwd)
    if lanes is None or not isinstance(finding, LoopReuse):
        return None
    loops = finding.access.item.loops
    lane_loops = [x for x in loops if x.kind == "foreach" and x.group == lanes[0]]
    if not lane_loops or not all(x in finding.independent for x in lane_loops):
        return None
    again: list[Loop] = []
    for loop in reversed(loops):
        if loop.kind != "for" or loop not in finding.independent:
            break
        again.insert(0, loop)
    ev = emit.facts.evaluator
    if not again or all(identical(ev.trips(x), 1) for x in again):
        return None
    iterations = _units(emit, again)
    acc = finding.access
    text = expr_text(acc.node)
    # What the time model weighs (mcl.feedback.analyses.timemodel): the loads of the
    # element all units make now, but one per `iterations`, and whether they go through
    # a cache to device memory (their latency counts then).
    loads = executions(emit.facts, acc.item)[0]
    saved = loads - loads / iterations
    layout = element_layout(emit.facts, acc.binding, acc.field)
    figures = {"iterations": iterations, "loads_saved": saved,
               "bytes_saved": saved * (layout[0] if layout else 4),
               "through_cache": int(acc.space in cached_spaces(emit.facts.hwd))}
    message = emit.message(
        code_of(RegisterReload), FeedbackSeverity.SUGGESTION,
        f"{text} is one element for the {lanes[1]} {lanes[0]} that run in lock-step, and "
        f"each of them loads it again in each of the "
        f"{conjunction([loop_text(ev, x) for x in again])} ({{iterations}} loads where one "
        f"would do): keep it in a register (a copy in a faster memory would not be faster: "
        f"the {lanes[1]} {lanes[0]} load one element in one transaction from any space)",
        acc.node.span, figures, acc.item.loops, hint=register_hint(ev, acc, again))
    stated = message.value_map  # the figures as the message states them
    return RegisterReload(message, change=KeepInRegister(
        AccessPlace.of(acc, text, "load"), tuple(LoopPlace.of(x) for x in again),
        stated["iterations"], stated["loads_saved"], stated["bytes_saved"],
        bool(figures["through_cache"])))


def _served(ctx: AnalysisContext, emit: Emitter, finding: LoopReuse | RatioReuse, space: str,
            current: str | None, loops: list[Loop]) -> Message | None:
    """`memory-cache-serves` instead of a proposal of `space` when the innermost cache in
    front of `current` holds every line the block's units touch of the array (the module
    docstring says why); None otherwise."""
    hwd = emit.facts.hwd
    caches = cached_spaces(hwd).get(current or "")
    if not caches:
        return None
    cache = caches[0]
    line, capacity = cache.line_size, cache.capacity
    if not line or capacity is None or capacity == UNLIMITED:
        return None
    acc = finding.access
    outside = [i for i, x in enumerate(acc.item.loops) if x.kind == "foreach"
               and x.group is not None and space not in _visible(hwd, x.group)]
    inside = acc.item.loops[outside[-1] + 1:] if outside else acc.item.loops
    declared = acc.binding.root.loops
    footprint = footprint_bytes(emit.facts, acc, [x for x in inside if x not in declared],
                                int(line))
    if footprint is None or not compare(footprint, "<=", capacity, ctx.values):
        return None
    units = _units(emit, loops)
    sharers = loops[-1].group
    owner = _owner(hwd, space)
    name = cache.node.name
    return emit.message(
        "memory-cache-serves", FeedbackSeverity.INFO,
        f"{_what(emit, finding, loops)}: {name} already serves the reuse between the "
        f"{{units}} {sharers}{f' of a {owner}' if owner else ''}: the lines they touch "
        f"({{footprint_bytes}} B at most) fit its {{cache_bytes}} B, and a copy in {space} "
        f"would add a store and a barrier for the same loads",
        acc.node.span, {"units": units, "footprint_bytes": footprint,
                        "cache_bytes": sympy.Integer(int(capacity))},
        acc.item.loops)


def _visible(hwd: HardwareDescription, group: str) -> set[str]:
    return {s.name for s in hwd.visible_spaces(group)}


def _fills(acc: Access, space: str) -> bool:
    """Is `acc` the load that fills an array in `space` (`tile[..] = a[..]`)? It is then
    what the proposal would have the kernel write, not a candidate for it."""
    return any(b.root.space == space and b.root.is_array for b in acc.item.defs)


def _broadcast(emit: Emitter, finding: LoopReuse | RatioReuse, current: str | None
               ) -> Message | None:
    """`memory-broadcast` when `finding` is a read of a cached read-only space that every
    lock-step group makes for one element at a time (its lanes' loop among the loops it
    does not depend on); None otherwise."""
    hwd = emit.facts.hwd
    if current is None or not isinstance(finding, LoopReuse):
        return None
    space = hwd.memory_space(current)
    caches = cached_spaces(hwd).get(current)
    lanes = lockstep_group(hwd)
    if space is None or not getattr(space, "read_only", False) or not caches \
            or lanes is None or not any(x.kind == "foreach" and x.group == lanes[0]
                                        for x in finding.independent):
        return None
    text = expr_text(finding.access.node)
    return emit.message(
        "memory-broadcast", FeedbackSeverity.INFO,
        f"{text}: the {lanes[1]} {lanes[0]} that run in lock-step read the same element of "
        f"{current} at once, and {' and '.join(c.node.name for c in caches)} broadcasts it "
        "to all of them in one access: a faster memory would not be faster here",
        finding.access.node.span, None, finding.access.item.loops)


def _proposal(emit: Emitter, finding: LoopReuse | RatioReuse, space: str, current: str | None,
              loops: list[Loop]) -> FasterMemoryProposal:
    acc = finding.access
    what = _what(emit, finding, loops)
    units = _units(emit, loops)
    sharers = loops[-1].group
    owner = _owner(emit.facts.hwd, space)
    message = emit.message(
        code_of(FasterMemoryProposal), FeedbackSeverity.SUGGESTION,
        f"{what}: {space} memory can be leveraged ({space} is faster than {current} and "
        f"shared by the {{units}} {sharers}{f' of a {owner}' if owner else ''})",
        acc.node.span, {"units": units}, acc.item.loops,
        hint=(f"declare a `{space}` array for the elements the {sharers} share, load it "
              f"together (one element per unit), then barrier({space}) before using it"))
    return FasterMemoryProposal(message, change=ShareInFasterMemory(
        AccessPlace.of(acc, expr_text(acc.node), "load"), space, current,
        tuple(LoopPlace.of(x) for x in loops), message.value_map["units"]))


def _units(emit: Emitter, loops: list[Loop]) -> Any:
    """The iterations of `loops` together: the units that share, or the re-reads."""
    return product(emit.facts.evaluator.trips(loop) for loop in loops)


def _what(emit: Emitter, finding: LoopReuse | RatioReuse, loops: list[Loop]) -> str:
    """What the units of `loops` share: the element or the elements of one dimension."""
    text = expr_text(finding.access.node)
    if isinstance(finding, LoopReuse):
        ev = emit.facts.evaluator
        return f"{text} loaded for {conjunction([loop_text(ev, loop) for loop in loops])}"
    loop = loops[0]
    return f"{text} touches the same elements from different {loop.group} {loop.name} " \
           f"in dimension {(finding.dimension or 0) + 1}"


def _owner(hwd: HardwareDescription, space: str) -> str | None:
    """The par_unit whose units share one copy of `space` (`block` for `local`)."""
    scope = getattr(hwd.memory_space(space), "scope", None)
    if isinstance(scope, ParUnit):
        return scope.name
    return scope.unit.name if isinstance(scope, ParGroup) and scope.unit is not None else None

