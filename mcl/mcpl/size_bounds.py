"""Ownership proofs over ranges that grow with the sizes, for the barrier check
(mcl.mcpl.barriers, docs/checker.md).

`mcl.mcpl.unit_elements` forces a unit index equal in two accesses when the rest of their
difference stays below its coefficient, over ranges known as numbers (`i * 4 + k` with k
in 0 .. 3). Kernels written for any size state the same with a size: a row of m elements
per unit (`a[r * m + j]` against another unit's `a[r * m + j - 1]`, j in 1 .. m - 1), or a
unit index below a count n that strides the array (`a[i + k * n]` against `a[i + (k - 1)
* n]`, i in 0 .. n - 1). Here the ranges are polynomials of the sizes: the integer
parameters the function never assigns, each taken to be at least 1 (the foreach counts
and extents they give are sizes, paper section 4.3), and two proofs clear a pair:

- *outweighed*: d = A (b - b*) + R with A a number times sizes and |R| < |A| for every
  value of R's variables and every size: then d = 0 forces b = b*;
- *a multiple of a size*: d = a (b - b*) + R with every term of R a multiple of one size
  P, and |a| times b's span below P: then a (b - b*) is a multiple of P smaller than P.

A forced name drops out and the others are tried again: a thread's row at gpu, `(g * 32
+ t) * m + j`, forces g (|m (t" - t) + R| < 32 m), then t.

A polynomial of sizes is proved negative by putting each size as its least value plus
x (x >= 0): a negative constant and no positive coefficient suffice. A size's least value
is 1, or more where a loop around the accesses runs only for more: the accesses of `for
(j = 1; j < m; j++)` happen only for m >= 2 (so `a[r * m + j]` and another unit's `a[r *
m + j - 1]`, m (r - r") = 1, are one unit's).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from mcl.mcpl import ast
from mcl.mcpl.unit_elements import OTHER_UNIT, Poly, difference, polynomial
from mcl.mcpl.varying import assigned_names

Range = tuple[Poly, Poly]  # the lowest and the highest value, polynomials of the sizes
_COPIES = ("'", OTHER_UNIT, "'" + OTHER_UNIT)  # another iteration's, another unit's names


def size_names(function: ast.Function) -> frozenset[str]:
    """The integer parameters `function` never assigns: its sizes."""
    assigned = assigned_names(function.body)
    return frozenset(p.name for p in function.params
                     if isinstance(p.type, ast.Prim) and p.type.name == "int"
                     and p.name not in assigned)


def size_ranges(body: ast.Stmt, counts: Mapping[str, ast.Expr], constants: Mapping[str, int],
                sizes: frozenset[str]) -> dict[str, Range]:
    """The ranges of the unit indices (0 .. count - 1) and of the loop variables
    (`for (int j = s; j < e; j += c)`, c >= 1, not assigned in the body) whose ends are
    polynomials of the sizes alone; a name two loops give different ranges is left out."""
    found: dict[str, Range | None] = {}
    for name, count in counts.items():
        size = polynomial(count, constants, {})
        if size is not None and _of(size, sizes):
            found[name] = ({}, _plus(size, -1))
    for loop in (n for n in ast.walk(body) if isinstance(n, ast.For)):
        span = _loop_range(loop, constants, sizes)
        if loop.var in found and found[loop.var] != span:
            span = None
        found[loop.var] = span
    # (a name also declared elsewhere may hold any value there)
    other = {n.name for n in ast.walk(body) if isinstance(n, ast.Decl)} - {
        n.init.name for n in ast.walk(body)
        if isinstance(n, ast.For) and isinstance(n.init, ast.Decl)}
    return {name: span for name, span in found.items()
            if span is not None and name not in other}


def _loop_range(loop: ast.For, constants: Mapping[str, int], sizes: frozenset[str]
                ) -> Range | None:
    init, cond, step = loop.init, loop.cond, loop.step
    if not (isinstance(init, ast.Decl) and init.init is not None
            and loop.var not in assigned_names(loop.body)
            and isinstance(cond, ast.Binary) and cond.op in ("<", "<=")
            and isinstance(cond.left, ast.Name) and cond.left.name == loop.var):
        return None
    rising = (isinstance(step, ast.IncDec) and step.op == "++") or (
        isinstance(step, ast.Assign) and step.op == "+="
        and isinstance(c := polynomial(step.value, constants, {}), dict)
        and set(c) <= {()} and c.get((), 0) >= 1)
    start = polynomial(init.init, constants, {})
    end = polynomial(cond.right, constants, {})
    if not (rising and isinstance(step.target, ast.Name) and step.target.name == loop.var
            and start is not None and end is not None
            and _of(start, sizes) and _of(end, sizes)):
        return None
    return start, (_plus(end, -1) if cond.op == "<" else end)


def forced_by_sizes(d: Poly, ranges: Mapping[str, Range], sizes: frozenset[str],
                    around: Iterable[str] = ()) -> set[str]:
    """The names (unit indices, loop variables) that `d == 0` forces equal in both
    accesses by one of the two proofs above; `around`: the loop variables the two
    accesses name (each access lies inside those loops, so each of them runs)."""
    floors = _floors([ranges[x] for x in around if x in ranges], sizes)
    forced: set[str] = set()
    while True:  # a forced name drops out, and the others are tried again
        found = _one_forced(d, ranges, sizes, floors)
        if found is None:
            return forced
        name, pair = found
        forced.add(name)
        d = {k: v for k, v in d.items() if k not in pair}


def _one_forced(d: Poly, ranges: Mapping[str, Range], sizes: frozenset[str],
                floors: Mapping[str, int]) -> tuple[str, tuple[tuple[str, ...], ...]] | None:
    """A name `d == 0` forces equal, with its two monomials in `d`; None if none is."""
    for monomial, a in d.items():
        named = [x for x in monomial if x not in sizes]
        if len(named) != 1 or named[0].endswith(_COPIES) or named[0] not in ranges:
            continue
        name = named[0]
        factor = tuple(x for x in monomial if x != name)  # the sizes A holds
        for copy in (name + suffix for suffix in _COPIES):
            other = tuple(sorted((*factor, copy)))
            if d.get(other) != -a:
                continue
            rest = {k: v for k, v in d.items() if k not in (monomial, other)}
            if _outweighed(rest, {factor: abs(a)}, ranges, floors) or (
                    not factor and _multiple_of_a_size(rest, abs(a), ranges[name], floors)):
                return name, (monomial, other)
    return None


def _floors(spans: Iterable[Range], sizes: frozenset[str]) -> dict[str, int]:
    """The least value of each size: 1, or more where one of `spans` (each of which holds
    a value) is non-empty only for more (`1 .. m - 1`: m >= 2)."""
    floors = dict.fromkeys(sizes, 1)
    for low, high in spans:
        width = difference(high, low)  # >= 0
        terms = [k for k in width if k]
        if len(terms) == 1 and len(terms[0]) == 1 and width[terms[0]] > 0:
            size, c = terms[0][0], width[terms[0]]
            floors[size] = max(floors[size], -(width.get((), 0) // c))
    return floors


def _outweighed(rest: Poly, weight: Poly, ranges: Mapping[str, Range],
                floors: Mapping[str, int]) -> bool:
    """Is -weight < rest < weight for every value of rest's variables and sizes?"""
    bounds = _bounds(rest, ranges, frozenset(floors))
    if bounds is None:
        return False
    low, high = bounds
    return _negative(difference(high, weight), floors) and \
        _negative(difference({k: -v for k, v in low.items()}, weight), floors)


def _multiple_of_a_size(rest: Poly, a: int, span: Range, floors: Mapping[str, int]) -> bool:
    """Is every term of `rest` a multiple of one size P, with a times the span below P?"""
    if not rest:
        return False
    common = set.intersection(*(set(k) for k in rest)) & set(floors)
    width = difference(span[1], span[0])
    return any(_negative(difference({k: a * v for k, v in width.items()}, {(p,): 1}), floors)
               for p in sorted(common))


def _bounds(p: Poly, ranges: Mapping[str, Range], sizes: frozenset[str]
            ) -> tuple[Poly, Poly] | None:
    """The lowest and highest value of `p`, as polynomials of the sizes: each term a
    number times sizes (which are positive) times at most one variable of known range."""
    low: Poly = {}
    high: Poly = {}
    for monomial, c in p.items():
        named = [x for x in monomial if x not in sizes]
        factor = tuple(x for x in monomial if x in sizes)
        if not named:
            ends = ({monomial: c}, {monomial: c})
        elif len(named) == 1 and (span := ranges.get(named[0].rstrip("'" + OTHER_UNIT))):
            one, two = (_scaled(end, factor, c) for end in span)
            ends = (one, two) if c > 0 else (two, one)
        else:
            return None
        low, high = _sum(low, ends[0]), _sum(high, ends[1])
    return low, high


def _negative(p: Poly, floors: Mapping[str, int]) -> bool:
    """Is `p` below 0 for every size at or above its floor? Put each size as floor + x:
    then a negative constant and no positive coefficient suffice."""
    if any(x not in floors for k in p for x in k):
        return False
    shifted: Poly = {}
    for monomial, c in p.items():
        expanded: Poly = {(): c}
        for x in monomial:  # times (floor + x)
            expanded = _sum({k: v * floors[x] for k, v in expanded.items()},
                            {tuple(sorted((*k, x))): v for k, v in expanded.items()})
        shifted = _sum(shifted, expanded)
    return shifted.get((), 0) < 0 and all(v <= 0 for k, v in shifted.items() if k)


def _of(p: Poly, sizes: frozenset[str]) -> bool:
    return all(x in sizes for k in p for x in k)


def _plus(p: Poly, c: int) -> Poly:
    return _sum(p, {(): c})


def _scaled(p: Poly, factor: tuple[str, ...], c: int) -> Poly:
    return {tuple(sorted((*k, *factor))): v * c for k, v in p.items()}


def _sum(*polys: Poly) -> Poly:
    out: Poly = {}
    for p in polys:
        for k, v in p.items():
            out[k] = out.get(k, 0) + v
    return {k: v for k, v in out.items() if v}
