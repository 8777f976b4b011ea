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

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

import sympy

from mcl.feedback.facts.blocks import OUTPUT, classify
from mcl.feedback.facts.contention import product
from mcl.feedback.facts.counting import (
    Affine,
    Collapse,
    Condition,
    affine,
    collapse_grid_stride,
    collapse_guard,
    conditions,
    distinct_tuples,
    distinct_values,
    least,
    split_counters,
)
from mcl.feedback.facts.kernel import Access, Derived, KernelFacts, Loop, dims
from mcl.feedback.facts.layout import element_layout, flat_index
from mcl.feedback.facts.nest_counts import conditioned_count
from mcl.feedback.facts.stable_dummies import dummy
from mcl.feedback.facts.symbolic import identical, ratio
from mcl.feedback.phrases import conjunction, expr_text
from mcl.identity import Ref
from mcl.mcpl import rounding


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

    def loads_once(self, values: Mapping[str, Any]) -> bool:
        """Is every element loaded once after all: the ratio 1 (or less) as a formula or at
        the user's `values` (`a[i + k]` over `k < m` with m = 1: m*n accesses of
        m + n - 1 elements)? Then there is nothing to tile or share."""
        from mcl.feedback.values import evaluate

        ratio = self.ratio
        if ratio == 1:
            return True
        number = evaluate(ratio, values).numeric
        return number is not None and number <= 1


@dataclass(frozen=True, eq=False)
class Unpredictable:
    """An access whose distinct elements cannot be counted, and why."""

    access: Access
    # why the distinct elements cannot be counted; None: the index is not affine
    reason: str | None = None


Finding = LoopReuse | RatioReuse | Unpredictable


def unknown_finding(finding: NoReturn) -> NoReturn:
    """The last arm of an exhaustive `match` over `Finding`: mypy proves no kind reaches
    it (as for `typing.assert_never`, which Python 3.10 lacks)."""
    raise TypeError(f"no rule for the reuse finding {type(finding).__name__}")


def analysed_reads(facts: KernelFacts) -> list[Access]:
    """Indexed reads of the output-defining blocks, except of arrays in registers (a
    space no addressable memory holds): reading those again costs nothing."""
    kinds = classify(facts)
    return [a for a in facts.accesses
            if a.reads and a.element and kinds[a.item] == OUTPUT
            and facts.spaces.addressable(a.space)]


def redefining_loops(acc: Access) -> frozenset[Loop]:
    """The for-loops around `acc` in which its array is written (paper 6.3: reuse is
    counted "taking into account where v was last defined"). Every iteration of such a
    loop may define the element anew (gpu (v2)'s `l_a[k]`, copied again for each row
    ei), so its iterations do not read one value: loading it once outside the loop
    would change the result. A foreach is not one: its units write together and, after
    the barrier, read what the others wrote, so they do share one value."""
    return acc.binding.root.for_loops_around_writes() & set(acc.item.loops)


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


def _guarded_load(ev: Any, acc: Access, serial: list[Loop]) -> str:
    """An `if` inside the hoisted loops that tests what the subscripts use (`if (i < n)`
    for `a[i, k]`) may be what keeps them in bounds: the hoisted load must stay under it."""
    outer = {Ref(g.node) for x in serial for g in x.guards}
    deps = ev.subscript_deps(acc.node, acc.item.scope)
    inner = [g for g in acc.item.guards
             if Ref(g.node) not in outer and ev.deps(g.cond, g.scope) & deps]
    if not inner:
        return ""
    lines = sorted({g.span.line for g in inner if g.span is not None})
    where = conjunction([f"line {n}" for n in lines]) if lines else "around it"
    return f", under the same `if` ({where})"


def register_hint(ev: Any, acc: Access, serial: list[Loop]) -> str:
    """The hint to load `acc` once outside the for-loops `serial` that re-read it
    (`reuse-independent` and the `memory-register` suggestion give it)."""
    return (f"load {expr_text(acc.node)} once outside for-loop "
            f"{conjunction([x.name for x in serial])} and keep the value in a "
            f"register{_guarded_load(ev, acc, serial)}")



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
            reuse, exact = conditioned_count(ev, independent, _guards_on(ev, acc, independent))
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
    (they only remove elements). None when an index is affine neither in the loops'
    counters nor in their split pieces (`affine_pieces`), a trip count depends on another
    counter or an element's size is not static."""
    ev = facts.evaluator
    layout = element_layout(facts, acc.binding, acc.field)
    if layout is None:
        return None
    all_counters = {ev.counter(loop) for loop in facts.loops}
    found = affine_pieces(facts, [*(ev.sym(sub, acc.item.scope) for sub in acc.indices),
                                  flat_index(facts, acc)], loops)
    if found is None:
        return None
    (*indices, flat), trips, _ = found
    if any(sympy.sympify(n).free_symbols & all_counters for n in trips.values()):
        return None
    extents = [ev.sym(x, acc.binding.scope or acc.item.scope) for x in dims(acc.binding)]
    elements, _ = distinct_tuples(indices, trips, extents)
    record = layout[0]
    # An element lies on one line when its size divides the line's, else it may straddle
    per_element = -(-record // line) + (0 if line % record == 0 else 1)
    bounds = [elements * per_element, _span_lines(flat, trips, record, line)]
    if len(indices) > 1 and len(indices) == len(extents) and acc.field is None:
        # Row-major: the elements of one row (one tuple of the other subscripts) lie
        # within the last subscript's span (a 16 x 18 tile of a wide array: 16 rows of
        # 72 B, not 288 lines).
        rows, _ = distinct_tuples(indices[:-1], trips, extents[:-1])
        bounds.append(rows * _span_lines(indices[-1], trips, record, line))
    return least(*bounds) * line


def _span_lines(index: Affine, trips: dict[Any, Any], record: int, line: int) -> Any:
    """Lines an affine offset (in elements of `record` bytes) can touch: c * t over
    t < N spans sum(|c| * (N - 1)) + 1 elements, and S bytes lie on at most
    ceiling(S / line) + 1 lines (they need not start on one)."""
    span = sum((abs(c) * (trips[t] - 1) for t, c in index.coefs.items()), sympy.Integer(1))
    return rounding.ceiling(span * record / line) + 1


def _ratios(facts: KernelFacts, acc: Access, loops: tuple[Loop, ...]) -> list[Finding]:
    """Advanced data reuse: per dimension and for all dimensions (paper 6.3)."""
    ev = facts.evaluator
    all_counters = {ev.counter(loop) for loop in facts.loops}
    found = _indices(facts, acc, loops)
    if found is None:
        return [Unpredictable(acc)]
    indices, trips, own = found
    strides = _grid_strides(ev, loops)
    strided = {loop for collapse in strides for loop in collapse.loops}
    rectangular = all(loop in strided or (ev.shape(loop).exact and not (
        sympy.sympify(ev.trips(loop)).free_symbols & all_counters)) for loop in loops)
    out: list[Finding] = []
    for d, idx in enumerate(indices):
        dloops = tuple(loop for loop in loops if idx.coefs.keys() & set(own[loop]))
        if not dloops:
            continue
        # An `if` that limits these loops (`j < w` after a split) limits the accesses
        # and, when it bounds the same split index, the elements too.
        guards = _guards_on(ev, acc, dloops)
        accesses, exact = conditioned_count(ev, dloops, guards)
        # A piece of a split loop that this dimension does not use varies another one,
        # as a loop the dimension does not use (`tid % 16` for the row `tid / 16`): the
        # accesses count the pieces it uses (a split is taken only without guards).
        for c in {c for loop in dloops for c in own[loop]} - idx.coefs.keys():
            accesses = accesses / trips[c]
        base = {c: trips[c] for c in idx.coefs}
        guarded = _apply_guards(ev, [idx], dloops, guards, strides, base)
        if guarded is None:  # the guards' effect on the elements is unknown: an upper bound
            exact = False
            guarded = ([idx], base)
        (gidx,), gtrips = guarded
        tangled = _tangled(ev, gtrips, loops)
        if tangled:
            return [Unpredictable(acc, tangled)]
        distinct, exact_distinct = distinct_values(
            [(c, gtrips[t]) for t, c in gidx.coefs.items()])
        if _more(accesses, distinct):
            out.append(RatioReuse(acc, d, dloops, accesses, distinct,
                                  exact and exact_distinct and rectangular,
                                  _sharing(idx, dloops, own, trips)))
    if len(indices) > 1:
        guards = _guards_on(ev, acc, loops)
        accesses, exact = conditioned_count(ev, loops, guards)
        guarded = _apply_guards(ev, indices, loops, guards, strides, trips)
        if guarded is None:
            exact = False
            guarded = (indices, trips)
        tangled = _tangled(ev, guarded[1], loops)
        if tangled:
            return out + [Unpredictable(acc, tangled)]
        extents = [ev.sym(x, acc.binding.scope or acc.item.scope) for x in dims(acc.binding)]
        distinct, exact_distinct = distinct_tuples(guarded[0], guarded[1], extents)
        if _more(accesses, distinct):
            out.append(RatioReuse(acc, None, loops, accesses, distinct,
                                  exact and exact_distinct and rectangular))
    return out


def _indices(facts: KernelFacts, acc: Access, loops: tuple[Loop, ...]
             ) -> tuple[list[Affine], dict[Any, Any], dict[Loop, tuple[Any, ...]]] | None:
    """The subscripts of `acc` as `affine_pieces` of `loops`. A split is only taken
    without `if`s or grid-stride loops among `loops`: those apply to whole counters."""
    ev = facts.evaluator
    found = affine_pieces(facts, [ev.sym(sub, acc.item.scope) for sub in acc.indices], loops)
    if found is not None and any(len(c) > 1 for c in found[2].values()) and (
            _guards_on(ev, acc, loops) or _grid_strides(ev, loops)):
        return None
    return found


def affine_pieces(facts: KernelFacts, exprs: Sequence[Any], loops: Sequence[Loop]
                  ) -> tuple[list[Affine], dict[Any, Any], dict[Loop, tuple[Any, ...]]] | None:
    """`exprs` as affine functions of counters, each counter's trip count and each loop's
    counters: its own, or the quotient and remainder pieces of a flat index that the
    expressions split (`tid / 16`, `tid % 16`: `split_counters`). None when an
    expression is affine neither way."""
    ev = facts.evaluator
    counters = [ev.counter(loop) for loop in loops]
    all_counters = {ev.counter(loop) for loop in facts.loops}
    trips = {ev.counter(loop): ev.trips(loop) for loop in loops}
    own: dict[Loop, tuple[Any, ...]] = {loop: (ev.counter(loop),) for loop in loops}
    indices = [affine(ev, e, counters, all_counters) for e in exprs]
    if all(idx is not None for idx in indices):
        return [i for i in indices if i is not None], trips, own
    split = split_counters(exprs, trips)
    if split is None:
        return None
    for loop in loops:
        own[loop] = split.pieces.get(ev.counter(loop), own[loop])
    pieces = [c for loop in loops for c in own[loop]]
    indices = [affine(ev, e, pieces, all_counters | set(pieces)) for e in split.exprs]
    if any(idx is None for idx in indices):
        return None
    return [i for i in indices if i is not None], split.trips, own


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
                  guards: list[Condition], strides: Sequence[Collapse],
                  counted: dict[Any, Any]) -> tuple[list[Affine], dict[Any, Any]] | None:
    """The indices with the grid-stride loops and the `if`s applied: a grid-stride loop
    with the units its start runs over (`collapse_grid_stride`), and a guard on the same
    split index as the subscripts (`j < w` for `a[i, j + x]`, j = bj * T + tj), turn the
    loops they constrain into one counter over the `passing` values. `counted`: the trip
    count of each counter of `loops`. None when a guard constrains the subscripts in
    another way."""
    trips = dict(counted)
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
    merged = dummy("x", integer=True, nonnegative=True)
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


def _sharing(idx: Affine, dloops: tuple[Loop, ...], own: dict[Loop, tuple[Any, ...]],
             trips: dict[Any, Any]) -> tuple[Loop, ...]:
    """Foreach loops whose units touch the same elements as another loop in this
    dimension (paper 6.3, proposing faster memories, second case: "on each pair of loops
    for each dimension"). `own`: each loop's counters (two for a split one, of which the
    dimension may use one), `trips` their trip counts."""
    out = []
    for f in dloops:
        if f.kind != "foreach":
            continue
        for other in dloops:
            if other is f:
                continue
            counters = [c for c in (*own[f], *own[other]) if c in idx.coefs]
            distinct, _ = distinct_values([(idx.coefs.get(c, 0), trips[c]) for c in counters])
            if _differs(product(trips[c] for c in counters), distinct):
                out.append(f)
                break
    return tuple(out)


def _differs(a: Any, b: Any) -> bool:
    return not identical(a, b)


def _more(accesses: Any, distinct: Any) -> bool:
    """Is there reuse: more accesses than distinct elements (unless provably not)?"""
    return _differs(accesses, distinct) and sympy.Le(accesses, distinct) is not sympy.true


@dataclass(frozen=True, eq=False)
class NeighbourReuse:
    """Reads of one array, in the same loops, whose subscripts differ by constants in
    each dimension (a stencil's `a[i - 1]`, `a[i]`, `a[i + 1]`): neighbouring units or
    iterations read the same elements through different accesses. `spread` is, per
    dimension, the largest offset between them minus the smallest."""

    accesses: tuple[Access, ...]
    spread: tuple[int, ...]

    @property
    def access(self) -> Access:
        return self.accesses[0]


def neighbour_reuse(facts: KernelFacts) -> list[NeighbourReuse]:
    """The groups of reads that are constant offsets of each other (`NeighbourReuse`):
    each element is loaded by up to as many of them as overlap on it, the group reuse that
    no single access's ratio shows (paper 6.3 measures one access at a time)."""
    ev = facts.evaluator
    groups: dict[tuple[object, ...], list[tuple[Access, list[Any]]]] = {}
    for acc in facts.accesses:
        if not acc.reads or acc.writes or not acc.indices:
            continue
        subscripts = [ev.sym(sub, acc.item.scope) for sub in acc.indices]
        if any(s is None for s in subscripts):
            continue
        key = (Ref(acc.binding), acc.field, tuple(Ref(x) for x in acc.item.loops),
               len(subscripts))
        groups.setdefault(key, []).append((acc, subscripts))
    out = []
    for members in groups.values():
        for base, kept, offsets in _constant_apart(members):
            if len(kept) < 2 or not _overlap(facts, kept[0], base, offsets):
                continue
            spread = tuple(max(o[d] for o in offsets) - min(o[d] for o in offsets)
                           for d in range(len(offsets[0])))
            out.append(NeighbourReuse(tuple(kept), spread))
    return out


def _constant_apart(members: list[tuple[Access, list[Any]]]
                    ) -> list[tuple[list[Any], list[Access], list[tuple[int, ...]]]]:
    """The reads of one array in the same loops, in classes whose subscripts differ by
    integer constants (`a[8 * i]`, `a[8 * i + 1]` apart from `a[i + 8 * n]`): each class's
    first subscripts, its reads (one per offset) and their offsets from the first."""
    classes: list[tuple[list[Any], list[Access], list[tuple[int, ...]]]] = []
    for acc, subscripts in members:
        for base, kept, offsets in classes:
            diff = [sympy.expand(s - b) for s, b in zip(subscripts, base, strict=True)]
            if all(d.is_Integer for d in diff):
                offset = tuple(int(d) for d in diff)
                if offset not in offsets:
                    offsets.append(offset)
                    kept.append(acc)
                break
        else:
            classes.append((subscripts, [acc], [(0,) * len(subscripts)]))
    return classes


def _overlap(facts: KernelFacts, acc: Access, subscripts: list[Any],
             offsets: list[tuple[int, ...]]) -> bool:
    """Can the reads `offsets` apart touch one element? In each dimension they differ in,
    the subscript must move with a loop (`bounds[0]` and `bounds[1]` are two elements,
    each read by every unit: independent reuse, not neighbours), by steps that divide the
    offsets (`a[8 * k]` and `a[8 * k + 1]` never meet), over a range that reaches across
    them (`rowptr[rA + t]` and `rowptr[rA + 256 + t]` over 256 threads t do not meet)."""
    found = affine_pieces(facts, subscripts, acc.item.loops)
    if found is None:
        return False
    indices, trips, _own = found
    for d, index in enumerate(indices):
        moved = {o[d] - offsets[0][d] for o in offsets} - {0}
        if not moved:
            continue
        coefs = [c for c in index.coefs.values() if c != 0]
        if not coefs or not all(getattr(c, "is_Integer", False) for c in coefs):
            return False
        step = math.gcd(*(abs(int(c)) for c in coefs))
        if any(m % step for m in moved):
            return False
        reach = sum((abs(c) * (trips[t] - 1) for t, c in index.coefs.items()),
                    sympy.Integer(0))
        if sympy.sympify(reach).is_number and reach < min(abs(m) for m in moved):
            return False
    return True
