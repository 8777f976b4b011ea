"""Counting over iteration spaces, symbolically and exactly.

- `iterations`: how many times something runs inside a nest of loops (paper 6.2: "for all
  these blocks, the compiler finds the number of iterations they are executed"): a product
  of trip counts for rectangular nests, a `sympy.summation` where a bound depends on an
  outer loop (triangular nests).
- `distinct_values` / `distinct_tuples`: how many different elements an affine index
  touches (paper 6.3: "the indexing range of v ... taking into account the offsets and
  steps of the loops"). The paper approximates the first dimension of `a[i + y, j + x]` by
  h + fh; the exact count is h + fh - 1, and that is what we compute: the image of
  sum(c_l * t_l), t_l in [0, N_l), built up term by term in increasing |c_l|.

Every function returns (expression, exact); exact is False only where the result is an
upper bound (non-rectangular nests, coefficient patterns without a closed form).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import cmp_to_key, reduce
from typing import Any

import sympy

from mcl.feedback.budget import spent
from mcl.feedback.exact import Exact, as_sympy, exact_function
from mcl.feedback.facts.kernel import Guard, Loop
from mcl.feedback.facts.symbolic import SymbolicEvaluator, identical, ratio
from mcl.mcpl import rounding
from mcl.mcpl.symbolic_values import kept_per_process, renamed


def iterations(ev: SymbolicEvaluator, loops: Sequence[Loop], weight: Any = 1,
               strided: bool = True) -> tuple[Any, bool]:
    """The sum of `weight` over the iteration space of `loops` (outermost first). The
    weight may use the loops' counters (e.g. the trip count of an inner loop)."""
    f = sympy.sympify(weight)
    strided_terms = _grid_stride_terms(ev, loops, f) if strided else None
    if strided_terms is not None:
        return strided_terms
    exact = True
    loops = list(loops)
    present = set(loops)  # membership in a list made deep nests cubic
    for loop in list(loops):
        if loop not in present:
            continue
        stride = grid_stride(ev, loop, loops, f)
        if stride is not None:
            removed, count = stride
            loops = [other for other in loops if other not in removed]
            present = set(loops)
            f = f * count
    for loop in reversed(loops):
        shape = ev.shape(loop)
        exact = exact and shape.exact
        t = shape.counter
        if t in _free_symbols(f):
            # The same sum comes back for the statements under different guards that the
            # counts collapse alike (the loads and stores of a tile's walk): added once.
            f = ev.memo(("sum", f, t, shape.trips),
                        lambda f=f, t=t, trips=shape.trips: _sum(f, t, trips))
        else:
            f = f * shape.trips
    return tidy(f), exact


@kept_per_process(4096)
def _free_symbols(f: Any) -> frozenset[Any]:
    """`f.free_symbols`, kept per process: SymPy finds them by walking the whole
    expression every time, and a nest's weight (sums over minima of the tiles) is asked
    for each loop around each statement, at every edit in the editor's worker (whose
    loop counters are those of the last job, so the same weights come back)."""
    return frozenset(f.free_symbols)


def grid_stride(ev: SymbolicEvaluator, loop: Loop, loops: Sequence[Loop], weight: Any
                ) -> tuple[list[Loop], Any] | None:
    """The closed form of `collapse_grid_stride` for a count: the loops it replaces (the
    for-loop and the foreach loops of its start) and how often the nest runs in all, or
    None when `loop` is no such loop in `loops` (or the weight, or another loop's trip
    count, uses one of their counters)."""
    collapse = collapse_grid_stride(ev, loop, loops)
    if collapse is None:
        return None
    used = set(collapse.weights)
    if sympy.sympify(weight).free_symbols & used or any(
            ev.trips(other).free_symbols & used for other in loops
            if other not in collapse.loops):
        return None
    return collapse.loops, collapse.passing


def collapse_grid_stride(ev: SymbolicEvaluator, loop: Loop, loops: Sequence[Loop]
                         ) -> Collapse | None:
    """The grid-stride loop, the most common loop of GPU code:
    `for (i = bi * nrThreads + ti; i < n; i += nrBlocks * nrThreads)` inside the foreach
    loops over bi and ti. Its start enumerates c + u * [0, P) one to one over the units
    (P = nrBlocks * nrThreads) and its step is u * P, so the units and the for-loop
    together visit every i = c + u * x, x = 0, 1, ... below n exactly once: the nest runs
    max(0, ceiling((n - c) / u)) times in all, and x is one counter over that interval
    (`weights`: x = sum(weights[t] * t)). Summing the per-unit trip count
    ceiling((n - c - u * x) / (u * P)) unit by unit has no closed form SymPy finds (it
    summed term by term: minutes), and the distinct elements of a subscript need x, not
    a trip count that depends on the unit. None when `loop` is no such loop in `loops`."""
    shape = ev.shape(loop)
    if shape.bounds is None or not shape.exact:
        return None
    start, op, bound, step = shape.bounds
    if op not in ("<", "<="):
        return None
    all_counters = ev.all_counters()
    if not ev.memo(("start varies", loop),
                   lambda: bool(sympy.sympify(start).free_symbols & all_counters)):
        return None  # a start the same for every unit (most for-loops): no grid stride
    others = [other for other in loops if other is not loop]
    counters = {ev.counter(other): other for other in others}
    aff = affine(ev, start, list(counters), all_counters)
    if aff is None or not aff.coefs or aff.const.free_symbols & all_counters:
        return None
    if sympy.sympify(bound).free_symbols & (set(aff.coefs) | {shape.counter}):
        return None
    enumeration = _enumeration(ev, aff.coefs, counters, all_counters)
    if enumeration is None:
        return None
    terms, unit, product, _, _ = enumeration
    if not identical(step, unit * product):
        return None
    weights = {t: ratio(c, unit) for c, t in terms}
    weights[shape.counter] = ratio(step, unit)
    span = bound - aff.const + (1 if op == "<=" else 0)
    return Collapse([loop] + [counters[t] for _, t in terms], weights,
                    sympy.Max(0, _ceiling_ratio(span, unit)))


def _grid_stride_terms(ev: SymbolicEvaluator, loops: Sequence[Loop], f: Any
                       ) -> tuple[Any, bool] | None:
    """`iterations` of a weight with terms `w * trips(L)` for a grid-stride loop L inside
    `loops` (its header runs trips(L) + 1 times per unit): the term's sum over the units
    is the closed form of `grid_stride`. None when no term is of that form."""
    if not f.free_symbols:
        return None  # no trip count with a symbol in it
    inside = set(loops)
    candidates = [(loop, trips) for loop, trips in symbolic_trips(ev)
                  if loop not in inside and f.has(trips)]
    if not candidates:
        return None
    total, exact, found = sympy.Integer(0), True, False
    # Not `expand`: it would distribute into the ceiling and hide the trip count.
    for term in sympy.Add.make_args(sympy.expand_mul(f, deep=False)):
        for loop, trips in candidates:
            factors = sympy.Mul.make_args(term)
            if trips not in factors:
                continue
            rest = sympy.Mul(*[x for x in factors if x != trips])
            strided = grid_stride(ev, loop, [*loops, loop], rest)
            if strided is None:
                continue
            removed, count = strided
            value, ok = iterations(ev, [x for x in loops if x not in removed], rest * count)
            total, exact, found = total + value, exact and ok, True
            break
        else:
            value, ok = iterations(ev, loops, term, strided=False)
            total, exact = total + value, exact and ok
    return (tidy(total), exact) if found else None


def symbolic_trips(ev: SymbolicEvaluator) -> list[tuple[Loop, Any]]:
    """The for-loops of the kernel with their trip counts, where a count has a symbol in
    it: made once, not for each statement (which made deep nests cubic)."""
    return ev.memo(("symbolic trips",), lambda: [
        (loop, ev.trips(loop)) for loop in ev.loops
        if ev.shape(loop).bounds is not None and ev.trips(loop).free_symbols])


def _ceiling_ratio(a: Any, b: Any) -> Any:
    return a if b == 1 else rounding.ceiling(a / b)


def _sum(f: Any, t: Any, trips: Any) -> Any:
    """sum(f for t in 0 .. trips-1), exactly: closed forms for polynomials and for the
    tiling idiom sum(min(T, B - T*t)) = B, term by term (a loop body's weight is often a
    sum of both, `4*Min(16, p - 16*t) + 4`); otherwise an unevaluated (still exact) Sum,
    which `mcl.feedback.values` evaluates once numbers are known."""
    tiled = _tiled_sum(f, t, trips)
    if tiled is not None:
        return tiled
    terms = sympy.Add.make_args(sympy.expand(f))
    done = [_closed_sum(term, t, trips) for term in terms]
    done = [d if d is not None else _added_up(term, t, trips)
            for d, term in zip(done, terms, strict=True)]
    if all(d is not None for d in done):
        return sympy.Add(*done)
    rest = sympy.Add(*(term for d, term in zip(done, terms, strict=True) if d is None))
    closed = sympy.Add(*(d for d in done if d is not None))
    bound = _bound_name(t, rest)
    return closed + Sum(renamed(rest, {t: bound}), (bound, 0, trips - 1))


class Sum(sympy.Sum):
    """An unevaluated sum of a count, whose free symbols are found without rebuilding it.
    (Named as SymPy's: the order of a formula's terms, and so its text, follows the
    names of their classes.)

    SymPy's `Sum.free_symbols` first substitutes each variable for itself, which rebuilds
    every node above the variable, and rebuilding a `Min` or `Max` compares its
    arguments pairwise. Comparing asks whether an argument is a number, which for a sum
    asks for its free symbols again: figures with sums over minima (the tiles of a block
    whose share is cut at the last non-zero, `min(nnz, pb * chunk)`) inside a `Max` took
    seconds each, for nothing, since each variable is a symbol. Here they are the
    summand's less the variables, plus the bounds', in SymPy's order, and kept:
    expressions are immutable. What SymPy rebuilds from this sum (`func`) is one too."""

    __slots__ = ("_free",)
    _free: frozenset[Any]

    @property
    def free_symbols(self) -> set[Any]:
        try:
            return set(self._free)
        except AttributeError:
            pass
        if all(isinstance(v, sympy.Symbol) for v in self.variables):
            free = set(self.function.free_symbols)
            for v, low, high in self.limits:  # a Sum's limits always have both bounds
                free.discard(v)
                free |= low.free_symbols | high.free_symbols
        else:
            free = super().free_symbols
        self._free = frozenset(free)
        return set(free)


# Iterations a sum of numbers is added up over, one by one (`_added_up`).
_ADDED_UP = 4096


def _added_up(term: Any, t: Any, trips: Any) -> Any:
    """A sum of numbers over a few iterations, added up (a thread's share of a 256-element
    clear, `ceiling((256 - t) / 256)` per thread; an inner sum whose outer counter is
    already a number); None for a term with other names or too many iterations."""
    term, trips = _numbers_added_up(term), sympy.sympify(trips)
    if not (trips.is_Integer and trips <= _ADDED_UP and term.free_symbols <= {t}):
        return None
    return _numbers_added_up(sympy.Add(*(term.xreplace({t: sympy.Integer(k)})
                                         for k in range(int(trips)))))


def _numbers_added_up(e: Any) -> Any:
    """`e` with every sum in it that names nothing but its own variable added up."""
    def small(s: Any) -> bool:
        return not s.free_symbols and all(
            lo.is_Integer and hi.is_Integer and hi - lo < _ADDED_UP for _, lo, hi in s.limits)

    if not e.has(sympy.Sum):
        return e
    return e.replace(lambda x: isinstance(x, sympy.Sum) and small(x), lambda x: x.doit())


def _bound_name(t: Any, f: Any) -> Any:
    """The variable of a sum a message may show: the loop's own name (`t` for the counter
    `t_t`), not the internal counter, unless the summand holds another name like it (a
    size, or the variable of a sum inside it)."""
    name = t.name[2:] if t.name.startswith("t_") else t.name
    if any(s.name == name for s in f.atoms(sympy.Symbol)):
        return t
    return sympy.Symbol(name, integer=True, nonnegative=True)


def _closed_sum(f: Any, t: Any, trips: Any) -> Any:
    """The closed form of one term's sum, or None."""
    if t not in f.free_symbols:
        return f * trips
    tiled = _tiled_sum(f, t, trips)
    if tiled is not None:
        return tiled
    try:
        polynomial = f.is_polynomial(t)
    except (TypeError, ValueError, NotImplementedError):
        polynomial = False
    if polynomial and not spent():
        try:
            return sympy.summation(f, (t, 0, trips - 1))
        except (TypeError, ValueError, NotImplementedError):
            pass  # SymPy gave up: the caller keeps the unevaluated sum
    return None


def _tiled_sum(f: Any, t: Any, trips: Any) -> Any:
    """`for (kb ...) { int len = min(T, B - kb * T); for (k < len) ... }` runs the inner
    body B times in total when the outer loop runs ceil(B / T) times; with V-wide steps
    through each tile (`k < len; k += V`, or `k < ceiling(len / V) * V`), ceiling(B / V)
    times when V divides T: every tile but the last is whole."""
    weight, rest = f.as_independent(t, as_Add=False)
    scale = sympy.Integer(1)
    if isinstance(rest, sympy.ceiling):
        scale, rest = rest.args[0].as_independent(t, as_Add=False)
        if not (scale.is_Rational and scale > 0):
            return None
    if not isinstance(rest, sympy.Min) or len(rest.args) != 2:
        return None
    for tile, other in (rest.args, reversed(rest.args)):
        if t in tile.free_symbols:
            continue
        total = sympy.expand(other + tile * t)
        if t in total.free_symbols:
            continue
        rounded_up = [rounding.floor((total + tile - 1) / tile), rounding.ceiling(total / tile)]
        if not any(sympy.expand(trips - r) == 0 for r in rounded_up):
            continue
        if scale == 1:
            return weight * total
        if (tile * scale).is_Integer:
            return weight * rounding.ceiling(total * scale)
    return None


def guarded_iterations(ev: SymbolicEvaluator, loops: Sequence[Loop], guards: Sequence[Guard],
                       weight: Any = 1) -> tuple[Any, bool, list[Guard]]:
    """Like `iterations`, restricted by the `if`s around the statement. A condition that
    bounds an index split over several loops (`j < m` with j = bj * nrThreadsM + tj, as
    translation generates) is counted exactly, also inside `&&`; the guards with other
    conditions are returned as unresolved, and the count is then an upper bound."""
    value, exact, unresolved = conditioned_iterations(ev, loops, conditions(ev, guards), weight)
    guards_left = dict.fromkeys(cond.guard for cond in unresolved)  # once each, in order
    return value, exact, list(guards_left)


def conditioned_iterations(ev: SymbolicEvaluator, loops: Sequence[Loop], conds: Sequence[Condition],
                           weight: Any = 1) -> tuple[Any, bool, list[Condition]]:
    """Iterations of `loops` (weighted) that satisfy `conds`; the conditions that could
    not be counted exactly are returned (the count is then an upper bound)."""
    f = sympy.sympify(weight)
    # Every statement in the same loops and under the same guards asks the same question
    # (the statements of a body, and each iteration of an unrolled loop around them).
    value, exact, unresolved = ev.memo(("conditioned", tuple(loops), tuple(conds), f),
                                       lambda: _conditioned(ev, loops, conds, f))
    return value, exact, list(unresolved)


def _conditioned(ev: SymbolicEvaluator, loops: Sequence[Loop], conds: Sequence[Condition],
                 f: Any) -> tuple[Any, bool, list[Condition]]:
    weight = f
    remaining = list(loops)
    unresolved: list[Condition] = []
    for cond in conds:
        # Every statement inside a nest of `if`s asks about all the conditions around it:
        # each (condition, loops, weight) is collapsed once, so deep nests stay linear in
        # the sympy work.
        # (The objects themselves are the key, not their id(): a memo that keeps them
        # alive cannot meet a new object at the address of a collected one.)
        # The weight only matters through the counters it names (collapse_guard).
        key = ("collapse", cond, tuple(remaining), frozenset(f.free_symbols))
        collapsed = ev.memo(key, lambda c=cond, r=remaining, w=f: collapse_guard(ev, c, r, w))
        if collapsed is None:
            unresolved.append(cond)
            continue
        remaining = [loop for loop in remaining if loop not in collapsed.loops]
        f = f * collapsed.passing
    if unresolved:
        counted = _unrolled(ev, loops, conds, weight, unresolved) or \
            _enumerated(ev, loops, conds, weight, unresolved)
        if counted is not None:
            return counted
    value, exact = iterations(ev, remaining, f)
    return value, exact and not unresolved, unresolved


# Units or iterations enumerated one by one to decide a condition no closed form counts
# (`t % 2 == 0`, `t % (2 * s) == 0` of a reduction tree).
MAX_ENUMERATED = 1024


def _enumerated(ev: SymbolicEvaluator, loops: Sequence[Loop], conds: Sequence[Condition],
                weight: Any, unresolved: Sequence[Condition], limit: int = MAX_ENUMERATED
                ) -> tuple[Any, bool, list[Condition]] | None:
    """Conditions on loops of constant trip counts (at most `limit` points together)
    decided point by point: the points that pass, times the iterations of the other
    loops. None when a condition also needs a size or another loop's counter, or the
    weight or a trip count depends on the enumerated counters."""
    symbols: set[Any] = set()
    for c in unresolved:
        symbols |= getattr(c.rel, "free_symbols", set())
    chosen = [x for x in loops if ev.counter(x) in symbols]
    counters = [ev.counter(x) for x in chosen]
    trips = [sympy.sympify(ev.trips(x)) for x in chosen]
    if not chosen or not all(t.is_Integer and t >= 0 for t in trips) \
            or math.prod(int(t) for t in trips) > limit \
            or set(counters) & sympy.sympify(weight).free_symbols \
            or any(set(counters) & sympy.sympify(ev.trips(x)).free_symbols for x in loops):
        return None
    involved = [c for c in conds if set(counters) & getattr(c.rel, "free_symbols", set())]
    # Every statement under these guards asks the same question: counted once.
    passing = ev.memo(("enumerated", tuple(involved), tuple(chosen)),
                      lambda: _passing_points(involved, counters, trips))
    if passing is None:
        return None
    rest = [x for x in loops if x not in chosen]
    others = [c for c in conds if c not in involved]
    value, exact, left = conditioned_iterations(ev, rest, others, weight)
    return tidy(passing * value), exact, left


def _passing_points(involved: Sequence[Condition], counters: Sequence[Any],
                    trips: Sequence[Any]) -> int | None:
    """How many points of the counters' box (trip counts `trips`) pass every condition
    of `involved`; None when a condition is not decided by the counters alone. Each
    condition is compiled to exact arithmetic (mcl.feedback.exact: the truth values
    SymPy's substitution gives, without rebuilding the tree at every point); one that
    does not compile, or divides by zero at a point, is substituted with SymPy."""
    tests = [(c, exact_function(c.rel, counters, {})) for c in involved]
    passing = 0
    for point in itertools.product(*(range(int(t)) for t in trips)):
        runs = True
        for c, function in tests:
            value = _decided(c.rel, function, counters, point)
            if value is not sympy.true and value is not sympy.false:
                return None  # it needs more than the enumerated counters
            if (value is sympy.true) != c.holds:
                runs = False
                break
        passing += runs
    return passing


def _decided(rel: Any, function: Exact | None, counters: Sequence[Any],
             point: tuple[int, ...]) -> Any:
    """`rel` with the counters at `point`: through the compiled function where there is
    one, through SymPy otherwise."""
    if function is not None:
        try:
            return as_sympy(function(*point))
        except ArithmeticError:
            pass  # SymPy's answer (zoo, nan) decides
    at = dict(zip(counters, (sympy.Integer(v) for v in point), strict=True))
    return sympy.sympify(rel).xreplace(at)


# A for-loop of at most this many iterations (a constant) is counted iteration by
# iteration when a guard inside it uses its variable; a foreach loop of as many units
# when a guard names its variable alone (`_unrollable`).
MAX_UNROLLED = 64


def _unrolled(ev: SymbolicEvaluator, loops: Sequence[Loop], conds: Sequence[Condition],
              weight: Any, unresolved: Sequence[Condition]
              ) -> tuple[Any, bool, list[Condition]] | None:
    """A guard that depends on a for-loop of few, constant iterations (`if (t < s)` in a
    tree reduction's `for (s = 128; s > 0; s >>= 1)`), counted per iteration: the sum
    over the loop's values of the count with that value put in. None when no such loop
    makes every condition countable.

    Where the conditions need nothing but constant loops' counters (the loop's and
    those of at most MAX_ENUMERATED points of the others: `if (ii < IN_H)` with ii of
    `l`, `tx` and `ty`, `if (ir - r >= 0 && ir - r < FH)`), the points are enumerated
    together with the loop's values instead (`_enumerated`): the same count, which
    iteration by iteration (`_per_iteration`) would build a SymPy relation per value (1
    to 3 ms each: in all, a third of convolution's feedback after an edit; docs/editor.md,
    "Latency") and then enumerate the same points value by value."""
    for loop in _unrollable(ev, loops, unresolved):
        together = _enumerated(ev, loops, conds, weight, unresolved,
                               MAX_ENUMERATED * int(ev.trips(loop)))
        if together is not None and together[1] and not together[2]:
            return together
        counted = _per_iteration(ev, loops, conds, weight, loop)
        if counted is not None:
            return counted
    return None


def _unrollable(ev: SymbolicEvaluator, loops: Sequence[Loop], unresolved: Sequence[Condition]
                ) -> list[Loop]:
    """The loops of `loops` of at most MAX_UNROLLED constant iterations whose counter
    an unresolved condition uses and no trip count does: every such for-loop, and a
    foreach loop where an unresolved condition names its counter alone (`tx == 0`,
    `l % 4 == 0`, inside `if (i < nx - 1 && j < ny - 1)` with i = bx * 32 + tx). A
    guard on one unit nested in a range guard over the units is then counted unit by
    unit: the units the inner guard leaves out add nothing, and for each one it keeps
    the range guard collapses with the unit's value put in (a term per unit kept, so
    only where the inner guard selects among the units of that loop itself)."""
    out = []
    uses: list[set[Any]] = [getattr(c.rel, "free_symbols", set()) for c in unresolved]
    # The counters some trip count of `loops` uses, gathered once (asked for every loop
    # of every statement under an unresolved guard, they were a tenth of the counts).
    in_trips: set[Any] = set()
    for x in loops:
        in_trips |= sympy.sympify(ev.trips(x)).free_symbols
    for loop in loops:
        trips = sympy.sympify(ev.trips(loop))
        t = ev.counter(loop)
        if loop.kind == "foreach" and {t} not in uses:
            continue
        if trips.is_Integer and 0 <= trips <= MAX_UNROLLED \
                and any(t in symbols for symbols in uses) and t not in in_trips:
            out.append(loop)
    return out


def _per_iteration(ev: SymbolicEvaluator, loops: Sequence[Loop], conds: Sequence[Condition],
                   weight: Any, loop: Loop) -> tuple[Any, bool, list[Condition]] | None:
    """`_unrolled` by `loop`, value by value: the count of the other loops with the
    value put into the conditions and the weight; None when a value leaves a condition
    that is not counted exactly."""
    t = ev.counter(loop)
    rest = [x for x in loops if x is not loop]
    total = sympy.Integer(0)
    for k in range(int(ev.trips(loop))):
        at = {t: sympy.Integer(k)}
        # The same condition objects for every statement under these guards, so that
        # the memo of `conditioned_iterations` (keyed by them) serves them all.
        fixed = [ev.memo(("at", c, t, k), lambda c=c, at=at: Condition(
            sympy.sympify(c.rel).xreplace(at), c.holds, c.guard)) for c in conds]
        decided = [c for c in fixed if c.rel in (sympy.true, sympy.false)]
        if any((c.rel is sympy.true) != c.holds for c in decided):
            continue  # no unit runs the statement in this iteration
        fixed = [c for c in fixed if c not in decided]
        value, exact, left = conditioned_iterations(
            ev, rest, fixed, sympy.sympify(weight).xreplace(at))
        if left or not exact:
            return None
        total += value
    return tidy(total), True, []


@dataclass(frozen=True, eq=False)
class Condition:
    """One condition a statement runs under: `rel` holds (or, in an else-branch, does
    not hold). `a && b` in a then-branch gives two conditions, as `!(a || b)` does."""

    rel: Any
    holds: bool
    guard: Guard

    def loops(self, ev: SymbolicEvaluator, among: Sequence[Loop]) -> set[Loop]:
        """The loops of `among` whose iteration the condition depends on."""
        symbols: set[Any] = getattr(self.rel, "free_symbols", set())
        if any(ev.is_opaque(x) for x in symbols):
            return set(ev.deps(self.guard.cond, self.guard.scope)) & set(among)
        return {loop for loop in among if ev.counter(loop) in symbols}


def conditions(ev: SymbolicEvaluator, guards: Sequence[Guard]) -> list[Condition]:
    out = []
    for g in guards:
        out += ev.memo(("conditions", g), lambda g=g: _guard_conditions(ev, g))
    return out


def _guard_conditions(ev: SymbolicEvaluator, g: Guard) -> list[Condition]:
    """The conditions of one `if` (once per `if`: every statement inside asks)."""
    rel = ev.sym(g.cond, g.scope)
    if g.then and isinstance(rel, sympy.And):
        return [Condition(r, True, g) for r in rel.args]
    if not g.then and isinstance(rel, sympy.Or):
        return [Condition(r, False, g) for r in rel.args]
    return [Condition(rel, g.then, g)]


@dataclass(frozen=True)
class Collapse:
    """A condition on x = sum(weights[t] * t), where the condition's loops enumerate x
    over [0, product) one to one: the x that pass form an interval of `passing` values."""

    loops: list[Loop]
    weights: dict[Any, Any]
    passing: Any


def collapse_guard(ev: SymbolicEvaluator, condition: Condition, loops: Sequence[Loop],
                   weight: Any = 1) -> Collapse | None:
    """For a condition `e OP B` on an index e = c + a*(t_1 + N_1*t_2 + N_1*N_2*t_3 ...)
    whose loops enumerate [0, N_1*N_2*...) one-to-one, the loops it constrains and how
    many of their iterations pass it. None when the condition is not of that form (or
    when `weight` or another loop's bounds use the constrained counters)."""
    cond = condition.rel
    if isinstance(cond, sympy.Unequality):  # `t != 0` is `!(t == 0)`
        cond = sympy.Eq(cond.lhs, cond.rhs, evaluate=False)
        condition = Condition(cond, not condition.holds, condition.guard)
    if not isinstance(cond, (sympy.StrictLessThan, sympy.LessThan, sympy.StrictGreaterThan,
                             sympy.GreaterThan, sympy.Equality)):
        return None
    op = {sympy.StrictLessThan: "<", sympy.LessThan: "<=", sympy.StrictGreaterThan: ">",
          sympy.GreaterThan: ">=", sympy.Equality: "=="}[type(cond)]
    counters = {ev.counter(loop): loop for loop in loops}
    all_counters = ev.all_counters()
    aff = affine(ev, cond.lhs - cond.rhs, list(counters), all_counters)
    if aff is None or not aff.coefs or aff.const.free_symbols & all_counters:
        return None
    coefs = dict(aff.coefs)
    if all(_truth(sympy.Lt(c, 0)) for c in coefs.values()):
        coefs = {t: -c for t, c in coefs.items()}
        const = -aff.const
        op = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "=="}[op]
    else:
        const = aff.const
    enumeration = _enumeration(ev, coefs, counters, all_counters)
    if enumeration is None:
        return None
    terms, unit, product, top_trips, top_ratio = enumeration
    removed = [counters[t] for _, t in terms]
    removed_counters = {t for _, t in terms}
    if sympy.sympify(weight).free_symbols & removed_counters or any(
            ev.trips(loop).free_symbols & removed_counters
            for loop in loops if loop not in removed):
        return None
    if op == "==":
        # `t == 0` (the first unit of a reduction writes the result) and `ty == BH - 1`
        # (the last row loads the bottom halo): e = const + unit * x is 0 for one x, one
        # of the `product` values, when that x is an integer in [0, product).
        hit = _equal_hit(-const / unit, product)
        if hit is None:
            return None
        passing = hit if condition.holds else product - hit
        return Collapse(removed, {t: ratio(c, unit) for c, t in terms}, passing)
    # e OP 0 with e = const + unit * x, x in [0, product): x < -const / unit, ...
    limit = -const / unit
    below = rounding.ceiling(limit) if op in ("<", ">=") else rounding.floor(limit) + 1
    covered = _covers(top_trips, top_ratio, below)
    passing = sympy.Max(below, 0) if covered else sympy.Min(sympy.Max(below, 0), product)
    if _truth(sympy.Ge(below, 0)):
        passing = below if covered else sympy.Min(below, product)
    if op in (">", ">="):
        passing = product - passing
    if not condition.holds:
        passing = product - passing
    return Collapse(removed, {t: ratio(c, unit) for c, t in terms}, passing)


def _equal_hit(x: Any, product: Any) -> Any:
    """1 when `x` is an integer in [0, product), 0 when it is not, None when that cannot
    be decided for every value of the sizes."""
    x = sympy.sympify(x)
    if identical(x, 0):
        return sympy.Integer(1)
    if x.is_integer is False:
        return sympy.Integer(0)
    inside = (_truth(sympy.Ge(x, 0)), _truth(sympy.Lt(x, product)))
    if x.is_integer and inside == (True, True):
        return sympy.Integer(1)
    if False in inside:
        return sympy.Integer(0)
    return None


def _enumeration(ev: SymbolicEvaluator, coefs: dict[Any, Any], counters: dict[Any, Loop],
                 all_counters: AbstractSet[Any]
                 ) -> tuple[list[tuple[Any, Any]], Any, Any, Any, Any] | None:
    """Do the counters with these coefficients enumerate unit * [0, product) one to one
    (coefficients unit, unit * N_1, unit * N_1 * N_2, ... for trip counts N_l)? Returns
    (terms by coefficient, unit, product, the outermost trip count and its coefficient
    over unit), or None."""
    terms = _sorted_by_coefficient([(c, t) for t, c in coefs.items()])
    if terms is None or not _truth(sympy.Gt(terms[0][0], 0)):
        return None
    unit = terms[0][0]
    product = top_trips = top_ratio = sympy.Integer(1)
    for c, t in terms:
        trips = ev.trips(counters[t])
        if trips.free_symbols & all_counters or not ev.shape(counters[t]).exact:
            return None
        if not identical(c, unit * product):
            return None  # not a one-to-one enumeration of a range
        top_trips, top_ratio = trips, product
        product = product * trips
    return terms, unit, product, top_trips, top_ratio


def _covers(top_trips: Any, ratio: Any, below: Any) -> bool:
    """Does the enumerated range reach `below`? True when the outermost loop runs
    ceil(below / ratio) times, the usual split `(m + T - 1) / T` blocks of T threads."""
    rounded_up = [rounding.floor((below + ratio - 1) / ratio), rounding.ceiling(below / ratio)]
    if any(sympy.expand(top_trips - r) == 0 for r in rounded_up):
        return True
    return _truth(sympy.Ge(top_trips * ratio, below)) is True


def tidy(e: Any) -> Any:
    """A canonical form: products of sums expanded, so that like terms merge (2*m*n*p +
    m*n; `(ceiling(p/128) + 1)*ceiling(m/128)` joins the other terms in ceiling(m/128)),
    with ceilings, floors and minima as atoms. Unevaluated sums and piecewise values stay
    as they are."""
    e = sympy.sympify(e)
    if not isinstance(e, sympy.Expr) or e.has(sympy.Sum, sympy.Piecewise):
        return e
    try:
        return sympy.expand(e)
    except (TypeError, ValueError, NotImplementedError):
        return e


# Counts are formulas in the kernel's sizes, the same after every edit that leaves them as
# they were, and the editor's worker analyses the kernel again at every edit: what SymPy
# takes milliseconds to simplify (a ratio of long polynomials, the larger of two branches'
# counts with minima inside) is computed once per process. SymPy's expressions are
# immutable and compare by structure, so a formula equal to one seen before has the same
# result.
@kept_per_process(1024)
def lowest_terms(numerator: Any, denominator: Any) -> Any:
    """numerator / denominator with common factors cancelled (`sympy.cancel`)."""
    return sympy.cancel(numerator / denominator)


@kept_per_process(1024)
def least_or_most(least: bool, a: Any, b: Any) -> Any:
    """`tidy(min(a, b))` when `least`, else `tidy(max(a, b))`."""
    return tidy(sympy.Min(a, b) if least else sympy.Max(a, b))


# ----------------------------------------------------------------------------- affine


@dataclass(frozen=True)
class Affine:
    """An index as constant + sum(coef[t] * t) over loop counters t."""

    coefs: dict[Any, Any]
    const: Any


def affine(ev: SymbolicEvaluator, expr: Any, counters: Sequence[Any], all_counters: AbstractSet[Any]
           ) -> Affine | None:
    """Decompose `expr` as affine in `counters`; None when it is not (non-linear in a
    counter, a coefficient that varies with a loop, or a value known only at run time)."""
    if expr is None:
        return None
    expr = sympy.sympify(expr)
    if not isinstance(expr, sympy.Expr):
        return None
    if any(ev.is_opaque(s) for s in expr.free_symbols):
        return None
    present = [t for t in counters if t in expr.free_symbols]
    if not present:
        return Affine({}, expr)
    try:
        poly = sympy.Poly(expr, *present)
    except sympy.PolynomialError:
        return None
    if poly.total_degree() > 1:
        return None
    coefs = {}
    for t in present:
        c = poly.coeff_monomial(t)
        if c != 0:
            if c.free_symbols & all_counters:
                return None
            coefs[t] = c
    const = poly.coeff_monomial(1)
    return Affine(coefs, const)


@dataclass(frozen=True)
class SplitCounters:
    """Indices with counters split into a quotient and a remainder piece (`split_counters`)."""

    exprs: list[Any]
    trips: dict[Any, Any]  # every counter's trip count, a split counter's by its pieces'
    pieces: dict[Any, tuple[Any, Any]]  # split counter -> (quotient, remainder) counters


def split_counters(exprs: Sequence[Any], trips: dict[Any, Any]) -> SplitCounters | None:
    """`floor(t / d)` and `Mod(t, d)` of a counter t over N iterations, N a multiple of
    the constant d (a flat thread index split into 2-D: `tid / 16`, `tid % 16`), as two
    counters: t = d*q + r with q over N/d and r over d iterations, each pair (q, r) once,
    so floor(t/d) = q and Mod(t, d) = r, and the indices are affine again. SymPy already
    takes the multiples of d out of the floor (`floor((32*w + t)/16)` is
    `2*w + floor(t/16)`). None when there is nothing to split, or a counter is divided by
    two constants or over a trip count that is not (provably) a multiple."""
    divisors: dict[Any, set[int]] = {}
    for e in exprs:
        for node in sympy.preorder_traversal(sympy.sympify(e)):
            found = _quotient(node, trips) if isinstance(node, sympy.floor) else \
                _remainder(node, trips) if isinstance(node, sympy.Mod) else None
            if found is not None:
                divisors.setdefault(found[0], set()).add(found[1])
    if not divisors or any(len(d) != 1 for d in divisors.values()):
        return None
    out_trips = dict(trips)
    pieces: dict[Any, tuple[Any, Any]] = {}
    replace: dict[Any, Any] = {}
    for t, (d,) in divisors.items():
        outer = sympy.sympify(trips[t]) / d
        if outer.is_integer is not True:
            return None
        # Symbols, not Dummies (the evaluator takes a Dummy that is no counter for a value
        # known only at run time), named apart by the counter's own unique index.
        key = getattr(t, "dummy_index", t)
        q, r = (sympy.Symbol(f"{t}.{key}{x}{d}", integer=True, nonnegative=True)
                for x in "/%")
        pieces[t] = (q, r)
        del out_trips[t]
        out_trips[q], out_trips[r] = outer, sympy.Integer(d)
        replace[sympy.floor(t / d)] = q
        replace[sympy.Mod(t, d)] = r
    whole = {t: d * pieces[t][0] + pieces[t][1] for t, (d,) in divisors.items()}
    exprs = [sympy.sympify(e).xreplace(replace).xreplace(whole) for e in exprs]
    return SplitCounters(exprs, out_trips, pieces)


def _quotient(node: Any, trips: dict[Any, Any]) -> tuple[Any, int] | None:
    """(t, d) for `floor(t / d)`, t a counter in `trips` and d > 1 a constant."""
    c, t = node.args[0].as_coeff_Mul()
    if t in trips and c.is_Rational and c.p == 1 and c.q > 1:
        return t, int(c.q)
    return None


def _remainder(node: Any, trips: dict[Any, Any]) -> tuple[Any, int] | None:
    """(t, d) for `Mod(t, d)`, t a counter in `trips` and d > 1 a constant."""
    t, d = node.args
    if t in trips and d.is_Integer and d > 1:
        return t, int(d)
    return None


# ----------------------------------------------------------------------------- distinct


def distinct_values(terms: Sequence[tuple[Any, Any]]) -> tuple[Any, bool]:
    """Number of distinct values of sum(c * t) with t in [0, N), for (c, N) in `terms`
    (trip counts N >= 1, coefficients independent of the counters)."""
    nonzero = [(_magnitude(sympy.sympify(c)), sympy.sympify(n)) for c, n in terms if c != 0]
    if not nonzero:
        return sympy.Integer(1), True
    merged: dict[Any, Any] = {}
    for c, n in nonzero:
        # Two counters with the same coefficient sweep an interval of N1 + N2 - 1 values.
        merged[c] = merged[c] + n - 1 if c in merged else n
    items = _sorted_by_coefficient(list(merged.items()))
    if items is None:
        return _upper_bound(list(merged.items())), False
    if len(items) == 1:
        return items[0][1], True
    g = reduce(sympy.gcd, [c for c, _ in items])
    items = [(ratio(c, g), n) for c, n in items]
    step, length = items[0]
    count, top = length, step * (length - 1)
    is_progression: bool | None = True  # the set is {0, step, ..., step * (length - 1)}
    for c, n in items[1:]:
        quotient = ratio(c, step)
        if is_progression and quotient.is_integer:
            # Translates of a progression by multiples of its step: they overlap (and
            # the union is again a progression) exactly when length >= quotient.
            count = sympy.Min(length, quotient) * (n - 1) + length
            overlaps = _truth(sympy.Ge(length, quotient))
            if overlaps:
                length = length + quotient * (n - 1)
            is_progression = True if overlaps else (False if overlaps is False else None)
        elif _truth(sympy.Gt(c, top)):
            count = count * n  # translates beyond the largest value: all disjoint
            is_progression = False
        else:
            # Not computed before it is needed: the minimum of two long figures is slow.
            return _upper_bound(list(merged.items())), False
        top = top + c * (n - 1)
    return tidy(count), True


def distinct_tuples(indices: Sequence[Affine], trips: dict[Any, Any],
                    extents: Sequence[Any]) -> tuple[Any, bool]:
    """Number of distinct index tuples (= distinct elements of the array) touched by the
    affine `indices`, one per dimension; `trips` maps each counter to its trip count and
    `extents` are the array's dimension sizes (for flattening, row-major, when dimensions
    share counters in a way that is not one-to-one)."""
    dims_of: dict[Any, set[int]] = {}
    for d, idx in enumerate(indices):
        for t in idx.coefs:
            dims_of.setdefault(t, set()).add(d)
    # Dimensions that share counters form components; components vary independently.
    parent = list(range(len(indices)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for dims in dims_of.values():
        first, *rest = sorted(dims)
        for d in rest:
            parent[find(d)] = find(first)
    components: dict[int, list[int]] = {}
    for d, idx in enumerate(indices):
        if idx.coefs:
            components.setdefault(find(d), []).append(d)
    total, exact = sympy.Integer(1), True
    for component in components.values():
        count, ok = _component(component, indices, trips, extents)
        total, exact = total * count, exact and ok
    return tidy(total), exact


def _component(dims: list[int], indices: Sequence[Affine], trips: dict[Any, Any],
               extents: Sequence[Any]) -> tuple[Any, bool]:
    counters = sorted({t for d in dims for t in indices[d].coefs}, key=str)
    if len(dims) == 1:
        idx = indices[dims[0]]
        return distinct_values([(idx.coefs[t], trips[t]) for t in counters])
    matrix = sympy.Matrix([[indices[d].coefs.get(t, 0) for t in counters] for d in dims])
    if matrix.rank() == len(counters):
        # One-to-one: every combination of the counters touches another element.
        return reduce(lambda a, b: a * b, [trips[t] for t in counters]), True
    # Flatten row-major (the elements are distinct exactly when the flattened offsets
    # are, for accesses inside the array's bounds).
    strides = []
    for k, _ in enumerate(dims):
        later = [extents[d] for d in dims[k + 1:]] if extents else []
        strides.append(reduce(lambda a, b: a * b, later, sympy.Integer(1)))
    terms = []
    for t in counters:
        c = sum((indices[d].coefs.get(t, 0) * s for d, s in zip(dims, strides, strict=True)),
                sympy.Integer(0))
        terms.append((sympy.expand(c), trips[t]))
    return distinct_values(terms)


def _magnitude(c: Any) -> Any:
    if c.is_negative:
        return -c
    if c.is_nonnegative:
        return c
    return sympy.Abs(c)


def _truth(rel: Any) -> bool | None:
    if rel is sympy.true or rel is True:
        return True
    if rel is sympy.false or rel is False:
        return False
    return None


def _sorted_by_coefficient(items: list[tuple[Any, Any]]) -> list[tuple[Any, Any]] | None:
    """Terms in increasing coefficient order; None when two cannot be compared."""

    def compare(x: tuple[Any, Any], y: tuple[Any, Any]) -> int:
        if _truth(sympy.Le(x[0], y[0])):
            return -1
        if _truth(sympy.Le(y[0], x[0])):
            return 1
        raise _Incomparable

    try:
        return sorted(items, key=cmp_to_key(compare))
    except _Incomparable:
        return None


class _Incomparable(Exception):
    pass


def _upper_bound(items: list[tuple[Any, Any]]) -> Any:
    """At most one value per combination, and at most the width of the range."""
    product = reduce(lambda a, b: a * b, [n for _, n in items], sympy.Integer(1))
    width = sum((c * (n - 1) for c, n in items), sympy.Integer(0)) + 1
    return least(product, width)


# The bounds of a count are formulas in the kernel's sizes, the same after every edit
# that leaves them so, and the editor's worker analyses the kernel again at every edit:
# the least of them, which SymPy finds by comparing every pair (tens of milliseconds for
# long ones), is found once per process (docs/feedback.md, "Speed"). SymPy's expressions
# are immutable and compare by structure, so equal bounds have the same least.
@functools.lru_cache(maxsize=1024)
def least(*bounds: Any) -> Any:
    """`sympy.Min(*bounds)`."""
    return sympy.Min(*bounds)
