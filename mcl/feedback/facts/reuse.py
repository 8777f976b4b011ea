"""Data reuse as data (paper section 6.3; docs/feedback.md, analysis 3).

"To analyze possible data-reuse we limit ourselves to the variables in the output-defining
blocks that perform indexing and are read." For every such read, with the loops around it
(taking into account where the variable is declared: a `local` array declared in a block
only sees the loops inside that block):

- simple form: the loops its subscripts do not depend on. Each element is loaded once per
  iteration of those loops: matmul at perfect, `b[k, j]` is accessed for n threads i.
- advanced form, when the subscripts depend on every loop: the reuse ratio, accesses /
  distinct elements, per dimension (over the loops that dimension uses) and for all
  dimensions. Convolution (Fig. 16), first dimension of `a[i + y, j + x]`: h*fh accesses
  over h + fh - 1 distinct rows (the paper rounds this to h + fh).

`ReuseFacts` holds the findings of one function, derived once: the reuse analysis
(mcl.feedback.analyses.reuse) reports them, the memory analysis proposes faster memory
spaces from them and the cache analysis tells reused data from the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import sympy

from mcl.feedback.facts.blocks import OUTPUT, classify
from mcl.feedback.facts.counting import (
    Affine,
    Collapse,
    Condition,
    affine,
    collapse_grid_stride,
    collapse_guard,
    conditioned_iterations,
    conditions,
    distinct_tuples,
    distinct_values,
)
from mcl.feedback.facts.kernel import Access, Derived, KernelFacts, Loop, dims
from mcl.feedback.facts.layout import element_layout, flat_index
from mcl.feedback.facts.symbolic import identical, ratio


@dataclass(frozen=True, eq=False)
class LoopReuse:
    """Simple form: `access` does not depend on the loops in `independent`."""

    access: Access
    loops: tuple[Loop, ...]  # the loops around the access inside the declaration's scope
    independent: tuple[Loop, ...]
    reuse: Any  # how many times each element is loaded: product of their trip counts
    exact: bool


@dataclass(frozen=True, eq=False)
class RatioReuse:
    """Advanced form: accesses / distinct elements in one dimension (or all: None)."""

    access: Access
    dimension: int | None  # 0-based; None for all dimensions together
    loops: tuple[Loop, ...]  # the loops the dimension's index uses
    accesses: Any
    distinct: Any
    exact: bool
    sharing: tuple[Loop, ...] = field(default=())  # foreach loops whose units share elements

    @property
    def ratio(self) -> Any:
        return sympy.cancel(self.accesses / self.distinct)


@dataclass(frozen=True, eq=False)
class Unpredictable:
    access: Access
    # why the distinct elements cannot be counted; None: the index is not affine
    reason: str | None = None


Finding = LoopReuse | RatioReuse | Unpredictable


def analysed_reads(facts: KernelFacts) -> list[Access]:
    """Indexed reads of the output-defining blocks, except of arrays in registers (a
    space no addressable memory holds): reading those again costs nothing."""
    kinds = classify(facts)
    return [a for a in facts.accesses
            if a.reads and a.element and kinds[a.item] == OUTPUT
            and facts.spaces.addressable(a.space)]


def redefining_loops(acc: Access) -> set[Loop]:
    """The for-loops around `acc` in which its array is written (paper 6.3: reuse is
    counted "taking into account where v was last defined"). Every iteration of such a
    loop may define the element anew (gpu (v2)'s `l_a[k]`, copied again for each row
    ei), so its iterations do not read one value: loading it once outside the loop
    would change the result. A foreach is not one: its units write together and, after
    the barrier, read what the others wrote, so they do share one value."""
    return {loop for write in acc.binding.root.writes for loop in write.item.loops
            if loop.kind == "for" and loop in acc.item.loops}


def reuse_loops(acc: Access) -> tuple[Loop, ...]:
    """The loops whose iterations may read one value of the element `acc` reads: those
    inside the array's declaration (a `local` array declared in a block sees only the
    loops inside that block) that do not define it anew (`redefining_loops`)."""
    declared = acc.binding.root.loops
    redefined = redefining_loops(acc)
    return tuple(loop for loop in acc.item.loops
                 if loop not in declared and loop not in redefined)


@dataclass(frozen=True)
class ReuseFacts(Derived):
    """The reuse findings of one function, in the order of its accesses."""

    findings: tuple[Finding, ...]

    @classmethod
    def derive(cls, facts: KernelFacts) -> ReuseFacts:
        return cls(tuple(_find(facts)))


def find_reuse(facts: KernelFacts) -> tuple[Finding, ...]:
    return facts.get(ReuseFacts).findings


def _find(facts: KernelFacts) -> list[Finding]:
    ev = facts.evaluator
    out: list[Finding] = []
    for acc in analysed_reads(facts):
        loops = reuse_loops(acc)
        if not loops:
            continue
        deps = ev.subscript_deps(acc.node, acc.item.scope)
        independent = tuple(loop for loop in loops if loop not in deps)
        if independent:
            # Each element is loaded once per iteration of the independent loops that
            # passes the `if`s constraining them (`j < m` after a split into blocks).
            reuse, exact = _guarded_count(ev, independent, _guards_on(ev, acc, independent))
            counters = {ev.counter(x) for x in loops}
            exact = exact and all(not (ev.trips(x).free_symbols & counters)
                                  for x in independent)
            if exact and reuse == 1:
                continue  # a guard lets one iteration load it (`ty == 0`): no reuse
            out.append(LoopReuse(acc, loops, independent, reuse, exact))
        else:
            out += _ratios(facts, acc, loops)
    return out


def footprint_bytes(facts: KernelFacts, acc: Access, loops: Sequence[Loop], line: int
                    ) -> Any | None:
    """An upper bound of the bytes of the cache lines of `line` bytes that `acc` touches
    over all iterations of `loops`, the loops around them at one iteration (one block's
    run of its threads' loops): the fewer of the lines of the distinct elements and those
    the flattened offsets' span can touch. The `if`s around the access are not applied
    (they only remove elements). None when an index is not affine in the loops' counters,
    a trip count depends on another counter or an element's size is not static."""
    ev = facts.evaluator
    layout = element_layout(facts, acc.binding, acc.field)
    if layout is None:
        return None
    counters = [ev.counter(loop) for loop in loops]
    all_counters = {ev.counter(loop) for loop in facts.loops}
    trips = {ev.counter(loop): sympy.sympify(ev.trips(loop)) for loop in loops}
    if any(n.free_symbols & all_counters for n in trips.values()):
        return None
    indices = [affine(ev, ev.sym(sub, acc.item.scope), counters, all_counters)
               for sub in acc.indices]
    flat = affine(ev, flat_index(facts, acc), counters, all_counters)
    if flat is None or any(idx is None for idx in indices):
        return None
    extents = [ev.sym(x, acc.binding.scope or acc.item.scope) for x in dims(acc.binding)]
    elements, _ = distinct_tuples([i for i in indices if i is not None], trips, extents)
    # Offsets c * t, t < N, span sum(|c| * (N - 1)) + 1 elements; a span of S bytes lies
    # on at most ceiling(S / line) + 1 lines (it need not start on one).
    span = sum((abs(c) * (trips[t] - 1) for t, c in flat.coefs.items()), sympy.Integer(1))
    record = layout[0]
    # An element lies on one line when its size divides the line's, else it may straddle
    per_element = -(-record // line) + (0 if line % record == 0 else 1)
    lines = sympy.Min(elements * per_element, sympy.ceiling(span * record / line) + 1)
    return lines * line


def _ratios(facts: KernelFacts, acc: Access, loops: tuple[Loop, ...]) -> list[Finding]:
    """Advanced data reuse: per dimension and for all dimensions (paper 6.3)."""
    ev = facts.evaluator
    counters = [ev.counter(loop) for loop in loops]
    all_counters = {ev.counter(loop) for loop in facts.loops}
    indices: list[Affine | None] = []
    for sub in acc.indices:
        indices.append(affine(ev, ev.sym(sub, acc.item.scope), counters, all_counters))
    if any(idx is None for idx in indices):
        return [Unpredictable(acc)]
    trips = {ev.counter(loop): ev.trips(loop) for loop in loops}
    strides = _grid_strides(ev, loops)
    strided = {loop for collapse in strides for loop in collapse.loops}
    rectangular = all(loop in strided or (ev.shape(loop).exact and not (
        trips[ev.counter(loop)].free_symbols & all_counters)) for loop in loops)
    out: list[Finding] = []
    for d, idx in enumerate(indices):
        assert idx is not None
        dloops = tuple(loop for loop in loops if ev.counter(loop) in idx.coefs)
        if not dloops:
            continue
        # An `if` that limits these loops (`j < w` after a split) limits the accesses
        # and, when it bounds the same split index, the elements too.
        guards = _guards_on(ev, acc, dloops)
        accesses, exact = _guarded_count(ev, dloops, guards)
        guarded = _apply_guards(ev, [idx], dloops, guards, strides)
        if guarded is None:  # the guards' effect on the elements is unknown: an upper bound
            exact = False
            guarded = ([idx], {ev.counter(x): ev.trips(x) for x in dloops})
        (gidx,), gtrips = guarded
        tangled = _tangled(ev, gtrips, loops)
        if tangled:
            return [Unpredictable(acc, tangled)]
        distinct, exact_distinct = distinct_values(
            [(c, gtrips[t]) for t, c in gidx.coefs.items()])
        if _more(accesses, distinct):
            out.append(RatioReuse(acc, d, dloops, accesses, distinct,
                                  exact and exact_distinct and rectangular,
                                  _sharing(ev, idx, dloops)))
    if len(indices) > 1:
        guards = _guards_on(ev, acc, loops)
        accesses, exact = _guarded_count(ev, loops, guards)
        known = [i for i in indices if i is not None]
        guarded = _apply_guards(ev, known, loops, guards, strides)
        if guarded is None:
            exact = False
            guarded = (known, trips)
        tangled = _tangled(ev, guarded[1], loops)
        if tangled:
            return out + [Unpredictable(acc, tangled)]
        extents = [ev.sym(x, acc.binding.scope or acc.item.scope) for x in dims(acc.binding)]
        distinct, exact_distinct = distinct_tuples(guarded[0], guarded[1], extents)
        if _more(accesses, distinct):
            out.append(RatioReuse(acc, None, loops, accesses, distinct,
                                  exact and exact_distinct and rectangular))
    return out


def _guarded_count(ev: Any, loops: tuple[Loop, ...], conds: list[Condition]
                   ) -> tuple[Any, bool]:
    """Iterations of `loops` that satisfy `conds` (exact where they bound split indices)."""
    count, exact, _ = conditioned_iterations(ev, loops, conds)
    return count, exact


def _grid_strides(ev: Any, loops: tuple[Loop, ...]) -> list[Collapse]:
    """The grid-stride loops among `loops` (`for (r = b; r < h; r += nrBlocks)`), each
    collapsed with the foreach loops its start runs over into one counter."""
    out: list[Collapse] = []
    taken: set[Loop] = set()
    for loop in loops:
        if loop.kind != "for":
            continue
        collapse = collapse_grid_stride(ev, loop, [x for x in loops if x not in taken])
        if collapse is not None:
            out.append(collapse)
            taken.update(collapse.loops)
    return out


def _tangled(ev: Any, trips: dict[Any, Any], loops: tuple[Loop, ...]) -> str | None:
    """Why the distinct elements cannot be counted: a trip count left that depends on
    another loop's counter (it would show the analysis's internal counters)."""
    counters = {ev.counter(loop): loop for loop in loops}
    for t, n in trips.items():
        if t in counters and n.free_symbols & counters.keys():
            return (f"the iterations of loop {counters[t].name} depend on the iteration of "
                    "an enclosing loop in a way the distinct elements cannot be counted")
    return None


def _apply_guards(ev: Any, indices: list[Affine], loops: tuple[Loop, ...],
                  guards: list[Condition], strides: Sequence[Collapse] = ()
                  ) -> tuple[list[Affine], dict[Any, Any]] | None:
    """The indices with the grid-stride loops and the `if`s applied: a grid-stride loop
    with the units its start runs over (`collapse_grid_stride`), and a guard on the same
    split index as the subscripts (`j < w` for `a[i, j + x]`, j = bj * T + tj), turn the
    loops they constrain into one counter over the `passing` values. None when a guard
    constrains the subscripts in another way."""
    trips = {ev.counter(loop): ev.trips(loop) for loop in loops}
    coefs = [dict(idx.coefs) for idx in indices]
    remaining = list(loops)
    for collapse in strides:
        if all(loop in remaining for loop in collapse.loops) and \
                _merge(coefs, trips, collapse):
            remaining = [loop for loop in remaining if loop not in collapse.loops]
    for guard in guards:
        found = collapse_guard(ev, guard, remaining)
        if found is None or not _merge(coefs, trips, found):
            return None
        remaining = [loop for loop in remaining if loop not in found.loops]
    return [Affine(c, idx.const) for c, idx in zip(coefs, indices, strict=True)], trips


def _merge(coefs: list[dict[Any, Any]], trips: dict[Any, Any], collapse: Collapse) -> bool:
    """Replace the counters of `collapse` by one counter over its `passing` values in
    every index (in place); False, changing nothing, when an index does not use them in
    the collapse's proportions."""
    factors = []
    for c in coefs:
        ratios = {ratio(c.get(t, 0), w) for t, w in collapse.weights.items()}
        if len(ratios) != 1:
            return False
        factors.append(ratios.pop())
    merged = sympy.Dummy("x", integer=True, nonnegative=True)
    for c, factor in zip(coefs, factors, strict=True):
        for t in collapse.weights:
            c.pop(t, None)
        if factor != 0:
            c[merged] = factor
    for t in collapse.weights:
        del trips[t]
    trips[merged] = collapse.passing
    return True


def _guards_on(ev: Any, acc: Access, loops: tuple[Loop, ...]) -> list[Any]:
    """The conditions around an access that depend on any of `loops` (the parts of an
    `i < n && j < m`, separately)."""
    return [c for c in conditions(ev, acc.item.guards) if c.loops(ev, loops)]


def _sharing(ev: Any, idx: Affine, dloops: tuple[Loop, ...]) -> tuple[Loop, ...]:
    """Foreach loops whose units touch the same elements as another loop in this
    dimension (paper 6.3, proposing faster memories, second case: "on each pair of loops
    for each dimension")."""
    out = []
    for f in dloops:
        if f.kind != "foreach":
            continue
        for other in dloops:
            if other is f:
                continue
            pair = [(idx.coefs[ev.counter(x)], ev.trips(x)) for x in (f, other)]
            distinct, _ = distinct_values(pair)
            if _differs(ev.trips(f) * ev.trips(other), distinct):
                out.append(f)
                break
    return tuple(out)


def _differs(a: Any, b: Any) -> bool:
    return not identical(a, b)


def _more(accesses: Any, distinct: Any) -> bool:
    """Is there reuse: more accesses than distinct elements (unless provably not)?"""
    return _differs(accesses, distinct) and sympy.Le(accesses, distinct) is not sympy.true
