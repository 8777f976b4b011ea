"""Cache analysis (the paper's section 6.4; feedback.md analysis 6).

"Given a cache defined in the hardware description, the analysis retrieves the memory
spaces that the cache holds. The analysis proceeds for every declaration that has one of
these memory spaces." For every element access of such a variable and every loop around it
(counted from the variable's declaration: a temporary declared inside a loop is new in
every iteration of that loop), the stride the loop causes in the flattened index gives

- the best case: the fewest cache lines the loop can fetch (stride 0: one line);
- the worst case: a line per iteration, or, for a foreach whose units have a limited
  number of slots on the execution unit holding the cache, a line per unit that can use
  that cache at once;
- for a foreach over units that load in lock-step (a load/store unit in a simd_group,
  `HardwareDescription.lockstep`), the lines the group shares: the 32 threads of a warp
  reading 32 consecutive floats fetch one 128 B line together.

Comparing them classifies the access: it *benefits* from the cache (lock-step units share
lines, or consecutive iterations of the innermost loop reuse a line), it *may benefit*
(the best case needs lines to stay cached between uses), or it *does not benefit* (every
iteration or unit fetches its own line even in the best case). Indices that depend on
array values or on variables written in the kernel are reported as unpredictable.

Two more messages: once per kernel on a cache-oriented description (caches are its only
fast memories), and for every temporary array in a cached space whose size grows with the
problem or exceeds a cache, its size against the caches' capacities and line size.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import sympy

from mcl.feedback.analysis import AnalysisContext
from mcl.feedback.emit import Emitter
from mcl.feedback.facts import strides
from mcl.feedback.facts.counting import affine
from mcl.feedback.facts.hardware import cached_spaces, lockstep_group
from mcl.feedback.facts.kernel import Access, DeclaredName, KernelFacts, Loop
from mcl.feedback.facts.layout import element_count, element_layout, flat_index
from mcl.feedback.facts.predictable import loops_since_declaration, unpredictable_reasons
from mcl.feedback.facts.reuse import LoopReuse, RatioReuse, ReuseFacts
from mcl.feedback.facts.symbolic import identical
from mcl.feedback.findings import Finding, LoopLineFetches, LoopPlace
from mcl.feedback.kernel_api import Kernel
from mcl.feedback.lockstep import most_active_lanes
from mcl.feedback.message_code import COLLAPSED, MessageCode
from mcl.feedback.messages import FeedbackSeverity, Message
from mcl.hdl.model import UNLIMITED, HardwareDescription, MemoryInfo, Parallelism
from mcl.mcpl import ast
from mcl.mcpl.printer import print_expr

# The codes of this analysis (mcl.feedback.codes; the catalogue is docs/feedback.md).
DOCS = "cache-behaviour-cache-paper-64"  # its section of docs/feedback.md
MESSAGE_CODES = (
    MessageCode("cache-benefits", "accesses that benefit from the cache",
                (FeedbackSeverity.INFO,), DOCS),
    MessageCode("cache-may-benefit", "accesses that may benefit from the cache",
                (FeedbackSeverity.INFO,), DOCS, column=COLLAPSED),
    MessageCode("cache-no-benefit", "accesses that do not benefit from the cache",
                (FeedbackSeverity.INFO, FeedbackSeverity.SUGGESTION), DOCS, column=COLLAPSED),
    MessageCode("cache-unpredictable", "unpredictable cache behaviour",
                (FeedbackSeverity.WARNING,), DOCS, column=COLLAPSED),
    MessageCode("cache-not-affine", "no cache figures for an index that is not affine",
                (FeedbackSeverity.INFO,), DOCS),
    MessageCode("cache-oriented",
                "make every access benefit from the cache (cache-oriented architecture)",
                (FeedbackSeverity.SUGGESTION, FeedbackSeverity.INFO), DOCS),
    MessageCode("cache-temporary-size", "fit a temporary array to the caches",
                (FeedbackSeverity.SUGGESTION,), DOCS),
)


ANALYSIS = "cache"

BENEFITS = "benefits"
MAY_BENEFIT = "may benefit"
NO_BENEFIT = "does not benefit"

CODES = {BENEFITS: "cache-benefits", MAY_BENEFIT: "cache-may-benefit",
         NO_BENEFIT: "cache-no-benefit"}


# ----------------------------------------------------------------------------- results


@dataclass(frozen=True)
class LoopLines:
    """Cache lines one access fetches over the iterations of one loop, for one cache."""

    loop: Loop
    cache: MemoryInfo
    stride_bytes: Any  # SymPy: how far the accesses of consecutive iterations lie apart
    iterations: Any  # iterations considered (at most the units sharing one cache)
    best: Any
    worst: Any
    classification: str
    lockstep: int | None = None  # size of the lock-step group the loop's units load in
    fully_used: bool = False  # lock-step units touch neighbouring or the same elements
    shared_by: Any = None  # units that use one instance of the cache at once
    assumption: str | None = None
    exact: bool = True
    # the lanes of a lock-step group that run the access, where its guards leave fewer
    # than the group (`most_active_lanes`): the lines are theirs
    active: int | None = None


@dataclass(frozen=True)
class NoConstantStride:
    """An access whose index is not affine in the loop counters, and why it cannot be
    known statically (no reasons: it can, but it uses `/`, `%` or products of loop
    variables, where section 6.4's constant strides do not exist)."""

    reasons: tuple[str, ...]


# ----------------------------------------------------------------------------- the hardware


def has_caches(hwd: HardwareDescription) -> bool:
    return any(c.line_size for c in hwd.caches())


def is_cache_oriented(hwd: HardwareDescription) -> bool:
    """Paper 5.2: "there are no other opportunities for fast memory access than caches".
    True when the description has caches and every addressable memory that is not a cache
    holds only spaces of the outermost scope: no scratchpad such as `shared` or `local`
    closer to the units (registers are not addressable)."""
    if not has_caches(hwd):
        return False
    for memory in hwd.memories():
        if memory.is_cache or not memory.addressable:
            continue
        for name in memory.spaces:
            space = hwd.memory_space(name)
            if space is not None and not isinstance(space.scope, Parallelism):
                return False
    return True


def concurrent_units(hwd: HardwareDescription, unit: str, cache: MemoryInfo) -> Any | None:
    """How many units `unit` use one instance of `cache` at once. Section 6.4: "a cache can
    reside on an execution unit that has a restricted number of slots for the par_units"
    (the slots of that unit); a cache shared by execution units serves every unit that
    reaches it (slots times units). None when there is no finite bound."""
    infos = hwd.execution_units_for(unit)
    if not infos:
        return None
    home = cache.resides_on
    if home is None:
        bound = infos[0].slots * infos[0].nr_units
    else:
        around = {home, *home.ancestors()}
        above = [i for i in infos if i.node in around]
        below = [i for i in infos if any(a is home for a in i.node.ancestors())]
        if above:
            bound = above[-1].slots
        elif below:
            inner = below[0]
            between = 1
            for a in inner.node.ancestors():
                if a is home:
                    break
                if a.kind.endswith("_group"):
                    between *= a.count()
            bound = inner.slots * between
        else:
            return None
    if bound == UNLIMITED:
        return None
    return sympy.Integer(int(bound))


# ----------------------------------------------------------------------------- the program


# ----------------------------------------------------------------------------- analysis


def access_lines(facts: KernelFacts, access: Access, caches: list[MemoryInfo],
                 values: Mapping[str, Any], lanes: tuple[int, ...] | None = None
                 ) -> list[LoopLines] | NoConstantStride | None:
    """Best and worst case line fetches of one access for every loop around it and every
    cache holding its space. None when the element size is not known statically.
    `lanes`: the positions of the lanes of a lock-step group that run the access, where
    its guards leave some out (`most_active_lanes`)."""
    ev = facts.evaluator
    layout = element_layout(facts, access.binding, access.field)
    if layout is None:
        return None
    record, touched, _ = layout
    index = flat_index(facts, access)
    counters = [ev.counter(loop) for loop in facts.loops]
    if affine(ev, index, counters, set(counters)) is None:
        reasons: list[str] = []
        for sub in access.indices:
            reasons += unpredictable_reasons(facts, sub, access.item.scope)
        return NoConstantStride(tuple(dict.fromkeys(reasons)))
    lockstep = lockstep_group(facts.hwd)
    results: list[LoopLines] = []
    for loop in loops_since_declaration(access):
        shape = ev.shape(loop)
        # Section 6.4: fill in start and start + step (counter 0 and 1) and subtract.
        stride = strides.loop_stride(index, shape.counter, 0, 1) * record
        trips, exact, note = shape.trips, shape.exact, None
        outer = [c for c in sympy.sympify(trips).free_symbols if c in counters]
        if outer:  # `k2 < min(256, p - l * 256)`: counted for the first iteration of l
            trips = sympy.sympify(trips).subs({c: 0 for c in outer})
            exact = False
            note = f"the iterations of loop {loop.name} vary; counted for the first ones"
        # Caches with the same line size, shared by as many units, give the same figures
        # (fermi's and hopper's l1 and l2): computed once, for the first of them.
        computed: dict[tuple[int, Any], LoopLines] = {}
        for cache in caches:
            key = (int(cache.line_size or 0), _units_sharing(facts.hwd, loop, cache, lockstep))
            if key not in computed:
                computed[key] = _loop_lines(facts.hwd, loop, cache, stride, trips, touched,
                                            access, values, lockstep, exact, lanes)
            r = replace(computed[key], cache=cache)
            if note:
                r = replace(r, assumption="; ".join(x for x in (r.assumption, note) if x))
            results.append(r)
    return results


def _loop_lines(hwd: HardwareDescription, loop: Loop, cache: MemoryInfo, stride: Any,
                iterations: Any, touched: int, access: Access, values: Mapping[str, Any],
                lockstep: tuple[str, int] | None, exact: bool,
                lanes: tuple[int, ...] | None = None) -> LoopLines:
    line = int(cache.line_size or 0)
    iterations = sympy.sympify(iterations)
    if loop.kind == "foreach" and lockstep is not None and loop.group == lockstep[0]:
        # The units of a lock-step group load together: they share every line they touch.
        size = lockstep[1]
        active = None
        if lanes and strides.compare(len(lanes), "<", iterations, values):
            # Only the lanes the guards leave run the access (a halo column read by 8
            # lanes fetches 8 lines, not 32): their lines, apart by their spacing.
            active = len(lanes)
            iterations = sympy.Integer(active)
            stride = stride * _spacing(lanes)
        best, worst, note = strides.grouped_lines(iterations, size, stride, touched, line,
                                                  values)
        shared = strides.compare(best, "<", iterations, values)
        used = bool(strides.compare(sympy.Abs(stride), "<=", touched, values))
        return LoopLines(loop, cache, stride, iterations, best, worst,
                         BENEFITS if shared else NO_BENEFIT, lockstep=size, assumption=note,
                         exact=exact, fully_used=used, active=active)
    if loop.kind == "foreach":
        shared_by = _units_sharing(hwd, loop, cache, lockstep)
        best, _, note = strides.grouped_lines(iterations, shared_by, stride, touched, line,
                                              values)
    else:
        shared_by = None
        best, note = strides.best_case_lines(iterations, stride, touched, line, values)
    worst = iterations  # Section 6.4: "the worst case is the number of iterations"
    same = strides.compare(best, "==", worst, values)
    if same is None:
        same = identical(best, worst)
    if same:
        kind = NO_BENEFIT
    elif (loop.kind == "for" and access.item.loops[-1] is loop
          and strides.compare(sympy.Abs(stride), "<", line, values)):
        # Consecutive iterations of the innermost loop touch the same line, with nothing
        # in between that could evict it.
        kind = BENEFITS
    else:
        kind = MAY_BENEFIT
    return LoopLines(loop, cache, stride, iterations, best, worst, kind, shared_by=shared_by,
                     assumption=note, exact=exact)


def _spacing(lanes: tuple[int, ...]) -> int:
    """The step between evenly spaced lanes (`l % 4 == 0`: 4), 1 otherwise (the lanes
    then count as neighbours: the fewest lines they may fetch)."""
    steps = {b - a for a, b in itertools.pairwise(lanes)}
    return steps.pop() if len(steps) == 1 else 1


def _units_sharing(hwd: HardwareDescription, loop: Loop, cache: MemoryInfo,
                   lockstep: tuple[str, int] | None) -> Any | None:
    """For a foreach whose units do not run in lock-step: they share a line only when they
    use the same cache at the same time, at most the slots of the unit holding the cache.
    None for other loops (and where there is no finite bound)."""
    if loop.kind != "foreach" or (lockstep is not None and loop.group == lockstep[0]):
        return None
    group = hwd.par_group(loop.group or "")
    if group is None or group.unit is None:
        return None
    return concurrent_units(hwd, group.unit.name, cache)


# ----------------------------------------------------------------------------- messages


def _caches_text(caches: list[MemoryInfo]) -> str:
    names = ", ".join(c.node.name for c in caches)
    return f"the cache{'s' if len(caches) > 1 else ''} {names}"


def _agreeing(results: list[LoopLines]) -> list[list[LoopLines]]:
    """The results of one loop with the same classification for several caches become one
    message (inner cache first)."""
    groups: dict[tuple, list[LoopLines]] = {}
    for r in results:
        groups.setdefault((r.loop, r.classification), []).append(r)
    return list(groups.values())


def _same_figures(a: LoopLines, b: LoopLines) -> bool:
    return (sympy.srepr(a.best), sympy.srepr(a.worst), a.cache.line_size) == (
        sympy.srepr(b.best), sympy.srepr(b.worst), b.cache.line_size)


def _unit_name(loop: Loop, hwd: HardwareDescription) -> str:
    group = hwd.par_group(loop.group or "")
    return group.unit.name if group is not None and group.unit is not None else "unit"


def _parent_unit(loop: Loop, hwd: HardwareDescription) -> str | None:
    """The par_unit around the units of a foreach (`warp` for the threads of a warp)."""
    group = hwd.par_group(loop.group or "")
    parent = getattr(group, "parent", None)
    return parent.name if parent is not None and hasattr(parent, "inner") else None


def _loop_fetches(emit: Emitter, access: Access, text: str, same: list[LoopLines],
                  values: Mapping[str, Any], reused: bool = True,
                  lanes: LoopLines | None = None,
                  reusing: tuple[Loop, ...] = ()) -> LoopLineFetches | None:
    """Section 6.4's verdict on one access in one loop, saying why (where the elements of
    consecutive iterations or units lie) and, where something can be done, what to try.
    `reused`: the elements are accessed more than once (paper 6.3); a loop that fetches a
    line per iteration costs something only then, when the lines could have been kept.
    `lanes`: the lock-step units around the access (a warp) load neighbouring elements
    together, using every byte of the lines they fetch. `reusing`: the loops around the
    access whose counters its index does not use (section 6.3's simple form)."""
    r = same[0]
    if strides.compare(r.iterations, "<=", 1, values):
        return None  # a single iteration: there is nothing to share
    hwd = emit.facts.hwd
    alike = [x for x in same if _same_figures(x, r)]
    others = [x for x in same if not _same_figures(x, r)]
    where = f"{text} in loop {r.loop.name}"
    caches = _caches_text([x.cache for x in alike])
    array = ast.root_name(access.node)
    figures = {"stride_bytes": r.stride_bytes, "iterations": r.iterations,
               "best_lines": r.best, "worst_lines": r.worst,
               "line_bytes": sympy.Integer(int(r.cache.line_size or 0))}
    zero = strides.compare(r.stride_bytes, "==", 0, values)
    hint = None
    severity = FeedbackSeverity.INFO
    if r.lockstep is not None:
        verb = "store" if access.writes and not access.reads else "load"
        body, hint = _lockstep_text(where, caches, r, hwd, array, values, verb)
        if r.classification == NO_BENEFIT:  # lines that a whole group could have shared
            severity = FeedbackSeverity.SUGGESTION
    elif r.loop.kind == "foreach":
        unit = _unit_name(r.loop, hwd)
        group = r.loop.group
        if r.shared_by is not None:
            figures["units_per_cache"] = r.shared_by
        apart = (f"every {unit} accesses the same elements" if zero else
                 f"the elements of neighbouring {group} lie {{stride_bytes}} B apart")
        if r.classification == NO_BENEFIT:
            # Every unit needs its own lines: a fact of the kernel's decomposition, with
            # nothing shared that a cache could keep.
            body = (f"{where} does not benefit from {caches}: {apart}, so every {unit} "
                    "fetches its own lines ({worst_lines:line fetch|line fetches} of "
                    "{line_bytes} B)")
        else:
            sharing = (f"the {{units_per_cache}} {group} that use one {r.cache.node.name} at "
                       "once share lines" if r.shared_by is not None
                       else f"all {group} share lines")
            body = (f"{where} may benefit from {caches}: {apart}; best case "
                    f"{{best_lines:line fetch|line fetches}} of {{line_bytes}} B when "
                    f"{sharing}, worst case {{worst_lines}} (every {unit} fetches its own)")
            hint = (f"compute more per {unit}, so that fewer {group} fetch the same lines "
                    f"of {array}")
    elif r.classification == NO_BENEFIT and lanes is not None and (
            overflow := _overflow(r, lanes, same, access, reusing, values)) is not None:
        body, hint, severity = _overflow_text(where, r, lanes, overflow, array, figures)
    elif r.classification == NO_BENEFIT and lanes is not None:
        # Reason per lock-step group (a warp): each iteration, its units fetch lines they
        # use completely (coalesced); another loop order or a transposed array would make
        # every unit of the group touch its own line.
        verb = "store" if access.writes and not access.reads else "load"
        together = _together(lanes, hwd)
        figures["lines_per_iteration"] = lanes.best
        body = (f"{where} does not benefit from {caches}, and loses nothing: consecutive "
                "iterations lie {stride_bytes} B apart, so every iteration fetches new "
                f"lines, but {together} {verb} neighbouring elements together, "
                "{lines_per_iteration:line|lines} of {line_bytes} B that they use "
                "completely (coalesced)")
    elif r.classification == NO_BENEFIT:
        body = (f"{where} does not benefit from {caches}: consecutive iterations lie "
                "{stride_bytes} B apart, a line of {line_bytes} B or more, so every "
                "iteration fetches another line ({worst_lines:line fetch|line fetches})")
        if reused:
            hint = (f"make consecutive iterations of loop {r.loop.name} access neighbouring "
                    f"elements of {array} (swap the loops or the subscripts, or store "
                    f"{array} transposed), or copy the elements loop {r.loop.name} uses "
                    "into a temporary first")
            severity = FeedbackSeverity.SUGGESTION
        else:
            body += "; each element is accessed once, so there is nothing to keep"
    else:
        apart = ("every iteration accesses the same element" if zero else
                 "consecutive iterations access elements {stride_bytes} B apart")
        if r.classification == BENEFITS:
            body = (f"{where} benefits from {caches}: {apart}, so the "
                    "{iterations:iteration|iterations} fetch "
                    "{best_lines:line|lines} of {line_bytes} B (worst case {worst_lines})")
        else:
            body = (f"{where} may benefit from {caches}: {apart}; best case "
                    "{best_lines:line fetch|line fetches} of {line_bytes} B when the lines "
                    "stay cached between iterations, worst case {worst_lines} (a line per "
                    "iteration)")
            hint = (f"the lines stay cached when what the body of loop {r.loop.name} touches "
                    "between two uses fits the cache: keep that working set small, or make "
                    f"loop {r.loop.name} the innermost loop around {array}")
    for other in others:
        name = other.cache.node.name
        figures[f"best_lines_{name}"] = other.best
        figures[f"worst_lines_{name}"] = other.worst
        body += f"; {name}: best case {{best_lines_{name}}}, worst case {{worst_lines_{name}}}"
        if other.shared_by is not None:
            figures[f"units_per_cache_{name}"] = other.shared_by
            body += f" ({{units_per_cache_{name}}} {r.loop.group} use one {name} at once)"
    if r.assumption:
        body += f" ({r.assumption})"
    message = emit.message(CODES[r.classification], severity, body, access.node.span, figures,
                           tuple(access.item.loops),
                           approximate=not r.exact or bool(r.assumption), hint=hint)
    # the best case as the message states it: the feedback column keeps the costliest loop
    return LoopLineFetches(message, best_lines=message.value_map["best_lines"],
                           loop=LoopPlace.of(r.loop))


@dataclass(frozen=True)
class Overflow:
    """The lines one run of a loop fetches for one access are more than a cache holds,
    and an enclosing loop uses the same elements again: they are fetched again."""

    outer: Loop  # the nearest enclosing `for` loop that reuses the elements
    cache: MemoryInfo  # the largest cache they overflow
    held_by: MemoryInfo | None  # the smallest cache that holds them, if any
    footprint: Any  # bytes of the lines one run of the loop fetches


def _overflow(r: LoopLines, lanes: LoopLines, same: list[LoopLines], access: Access,
              reusing: tuple[Loop, ...], values: Mapping[str, Any]) -> Overflow | None:
    """Section 6.4 judges one loop; its "loses nothing" holds only while the lines come
    back from the cache when an enclosing loop reuses them (the paper's xeon_phi step:
    the p lines of b's column in loop k overflow the 32 kB l1 before loop ei reads them
    again). One run of the loop fetches `iterations * lines_per_iteration` distinct lines
    (consecutive iterations lie a line or more apart), a lower bound of what the cache
    must hold between two uses: beyond its capacity no replacement policy keeps them all.
    None when no enclosing loop reuses the elements, or the overflow is not certain."""
    loops = tuple(access.item.loops)
    inner = loops.index(r.loop) if r.loop in loops else -1
    outer = next((lp for lp in reversed(loops[:max(inner, 0)])
                  if lp.kind == "for" and lp in reusing), None)
    if outer is None:
        return None
    footprint = r.iterations * lanes.best * int(r.cache.line_size or 0)
    sized = sorted((x.cache for x in same if x.cache.capacity not in (None, UNLIMITED)),
                   key=lambda c: float(c.capacity or 0))
    over = [c for c in sized if strides.compare(footprint, ">", c.capacity, values)]
    if not over:
        return None
    holds = [c for c in sized if strides.compare(footprint, "<=", c.capacity, values)]
    return Overflow(outer, over[-1], holds[0] if holds else None, footprint)


def _overflow_text(where: str, r: LoopLines, lanes: LoopLines, o: Overflow, array: str | None,
                   figures: dict[str, Any]) -> tuple[str, str, FeedbackSeverity]:
    """The message for an `Overflow`: what is fetched again and what to change."""
    name = o.cache.node.name
    figures["lines_per_iteration"] = lanes.best
    figures["footprint_bytes"] = o.footprint
    figures["cache_bytes"] = sympy.Integer(int(o.cache.capacity or 0))
    again = (f"from {o.held_by.node.name}" if o.held_by is not None
             else "from memory")
    body = (f"{where} does not benefit from {name}: consecutive iterations lie "
            "{stride_bytes} B apart, so every iteration fetches new lines, "
            "{iterations:iteration|iterations} x {lines_per_iteration:line|lines} of "
            "{line_bytes} B ({footprint_bytes} B) per run of the loop, more than "
            f"{name} holds ({{cache_bytes}} B): loop {o.outer.name}, which uses the same "
            f"elements again, fetches them again {again}")
    hint = (f"copy the elements of {array} that loop {r.loop.name} uses into a temporary "
            f"before loop {o.outer.name}, or run loop {r.loop.name} in blocks whose lines "
            f"fit {name} with loop {o.outer.name} inside the block loop")
    return body, hint, FeedbackSeverity.SUGGESTION


def _lockstep_text(where: str, caches: str, r: LoopLines, hwd: HardwareDescription,
                   array: str | None, values: Mapping[str, Any], verb: str
                   ) -> tuple[str, str | None]:
    """Units that load in lock-step (section 6.4: the 32 threads of a warp) share the lines
    their accesses span."""
    group = r.loop.group
    together = _together(r, hwd)
    fetches = "{best_lines:line fetch|line fetches} of {line_bytes} B"
    if not strides.compare(r.iterations, "<=", r.lockstep, values):
        fetches += f" for the {{iterations}} {group}"
    if strides.compare(r.stride_bytes, "==", 0, values):
        return (f"{where} benefits from {caches}: {together} {verb} the same element "
                f"together: {fetches}"), None
    if r.classification == BENEFITS:
        unaligned = ("" if strides.compare(r.best, "==", r.worst, values) else
                     " ({worst_lines} when they do not start on a line)")
        return (f"{where} benefits from {caches}: {together} {verb} neighbouring elements "
                f"({{stride_bytes}} B apart) together: {fetches}{unaligned}"), None
    return (f"{where} does not benefit from {caches}: {together} {verb} together, but their "
            f"elements lie {{stride_bytes}} B apart, so each needs its own line: {fetches}"), \
        (f"let neighbouring {group} (loop {r.loop.name}) access neighbouring elements of "
         f"{array}")


def _together(r: LoopLines, hwd: HardwareDescription) -> str:
    """The units of a lock-step group that load together: `the 32 threads of a warp`, or
    `the 8 active threads of a warp` where the guards leave only those."""
    parent = _parent_unit(r.loop, hwd)
    units = f"{r.active} active {r.loop.group}" if r.active is not None else \
        f"{r.lockstep} {r.loop.group}"
    return f"the {units} of a {parent}" if parent else f"{units} in lock-step"


def _temporary_message(emit: Emitter, facts: KernelFacts, binding: DeclaredName,
                       caches: list[MemoryInfo], values: Mapping[str, Any]) -> Message | None:
    """Paper 5.2, xeon_phi (v1): "try to adjust the size of declaration bTemp with 4p bytes
    in relation to the cache with capacities 32kB and 512kB and cache-line size 64B"."""
    layout = element_layout(facts, binding)
    if layout is None:
        return None
    size = sympy.expand(element_count(facts, binding) * layout[0])
    if any(facts.evaluator.is_opaque(s) for s in size.free_symbols):
        return None
    capacities = [c.capacity for c in caches if c.capacity not in (None, UNLIMITED)]
    if not capacities:
        return None
    smallest = min(capacities)
    grows = bool(size.free_symbols)  # scales with a problem size
    exceeds = strides.compare(size, ">", smallest, values)
    if not grows and not exceeds:
        return None
    text = (f"adjust the size of {binding.name} ({{size_bytes}} bytes) to the caches of "
            f"{' and '.join(_bytes(c) for c in capacities)}, line {_bytes(caches[0].line_size)}")
    if exceeds:
        text += f": it does not fit in {caches[0].node.name}"
    return emit.message(
        "cache-temporary-size", FeedbackSeverity.SUGGESTION, text, binding.span,
        {"size_bytes": size, "smallest_cache_bytes": sympy.Integer(int(smallest)),
         "line_bytes": sympy.Integer(int(caches[0].line_size or 0))},
        tuple(binding.loops), hint=_temporary_hint(binding.name, grows))


def _temporary_hint(name: str, grows: bool) -> str:
    """Paper 5.2, xeon_phi (v1)-(v3): a temporary as large as a problem dimension is
    shrunk by filling it in blocks of that dimension; whatever is computed across the
    dimension (c's sums) then builds up over several blocks and needs a temporary of its
    own first — the reason the paper acts on c (v2) before shrinking bTemp (v3)."""
    if not grows:
        return "choose a tile size whose temporaries fit the smallest cache"
    return (f"fill {name} in blocks that fit the smallest cache (a loop over blocks around "
            "the loop that fills and reads it); what is accumulated over that loop then "
            "builds up block by block, so keep those partial results in a temporary "
            "(registers) first")


def _bytes(n: Any) -> str:
    n = int(n or 0)
    for unit, size in (("MB", 1 << 20), ("kB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


def cache_messages(facts: KernelFacts, values: Mapping[str, Any] | None = None) -> list[Message]:
    """All cache messages for one function at its description."""
    return [f.message for f in cache_findings(facts, values)]


def cache_findings(facts: KernelFacts, values: Mapping[str, Any] | None = None
                   ) -> list[Finding]:
    """The cache findings of one function at its description: a `LoopLineFetches` per
    access and loop, plain findings for the rest."""
    values = dict(values or {})
    hwd = facts.hwd
    spaces = cached_spaces(hwd)
    if not spaces:
        return []
    emit = Emitter(facts, ANALYSIS, values)
    found: list[Finding] = []
    # Section 6.3: the reads whose elements are loaded more than once.
    reused = {(f.access.binding.root, print_expr(f.access.node))
              for f in facts.get(ReuseFacts).findings
              if isinstance(f, (LoopReuse, RatioReuse))}
    independent = {(f.access.binding.root, print_expr(f.access.node)): f.independent
                   for f in facts.get(ReuseFacts).findings if isinstance(f, LoopReuse)}
    seen: set[tuple] = set()
    kernel: Kernel | None = None  # the numeric evaluator of the active lanes, once
    for access in facts.accesses:
        caches = spaces.get(access.space or "")
        if not caches or not access.element:
            continue
        text = print_expr(access.node)
        key = (access.binding.root, text, access.item.loops)
        if key in seen:
            continue
        seen.add(key)
        active = None
        if access.item.guards:
            if kernel is None:
                kernel = Kernel(facts, values)
            active = most_active_lanes(kernel, access.item)
        result = access_lines(facts, access, caches, values, active)
        if result is None:
            continue
        if isinstance(result, NoConstantStride) and result.reasons:
            found.append(Finding(emit.message(
                "cache-unpredictable", FeedbackSeverity.WARNING,
                f"the cache behaviour of {text} is unpredictable: " + "; ".join(result.reasons),
                access.node.span, loops=tuple(access.item.loops),
                hint="an index read from memory can touch any line: measure, or arrange "
                     "the data so that neighbouring units read neighbouring elements")))
            continue
        if isinstance(result, NoConstantStride):
            # Known statically, but not start + step * counter in every loop (`e / T`,
            # `e % T`): section 6.4's strides do not apply.
            found.append(Finding(emit.message(
                "cache-not-affine", FeedbackSeverity.INFO,
                f"no cache figures for {text}: its index is not an affine function of the "
                "loop variables (it uses /, % or a product of loop variables), so the "
                "strides of its loops are not constant", access.node.span,
                loops=tuple(access.item.loops))))
            continue
        coalesced = {r.cache: r for r in result if r.lockstep is not None and r.fully_used}
        for same in _agreeing(result):
            lanes = coalesced.get(same[0].cache) if same[0].loop.kind == "for" else None
            fetches = _loop_fetches(emit, access, text, same, values,
                                    (access.binding.root, text) in reused, lanes,
                                    independent.get((access.binding.root, text), ()))
            if fetches is not None:
                found.append(fetches)
    for binding in facts.bindings:
        if binding.kind == "local" and binding.is_array and binding.space in spaces:
            message = _temporary_message(emit, facts, binding, spaces[binding.space], values)
            if message is not None:
                found.append(Finding(message))
    if is_cache_oriented(hwd):
        found.insert(0, Finding(_cache_oriented_message(emit, facts,
                                                        [f.message for f in found])))
    return found


def _cache_oriented_message(emit: Emitter, facts: KernelFacts,
                            messages: list[Message]) -> Message:
    """Paper 5.2, xeon_phi: "This is a cache-oriented architecture. Make sure that each
    access benefits from the cache." It is a suggestion while another cache message of the
    function says what to change; once none does, it is a fact — the paper stops at
    xeon_phi (v3) because "the compiler gives us no longer feedback we can act on", and a
    standing suggestion with nothing behind it would send the programmer looking for it."""
    hwd = facts.hwd
    text = f"{hwd.name} is a cache-oriented architecture (caches are its only fast memories)"
    if any(m.severity in (FeedbackSeverity.SUGGESTION, FeedbackSeverity.WARNING) for m in messages):
        return emit.message(
            "cache-oriented", FeedbackSeverity.SUGGESTION,
            text + ": make sure every access benefits from the cache", facts.function.span,
            hint="the accesses that do not benefit from the cache (cache-no-benefit) are "
                 "the ones to change")
    return emit.message(
        "cache-oriented", FeedbackSeverity.INFO,
        text + ": no access was found whose cache behaviour a change of loop order or a "
        "temporary would improve", facts.function.span)


def cache_analysis(ctx: AnalysisContext) -> list[Finding]:
    """Best and worst case cache-line fetches of every access in every loop (paper 6.4):
    facts for a reader of the report (`mcl report`'s feedback column reads the best case
    of each `LoopLineFetches`)."""
    return cache_findings(ctx.facts, ctx.values)
