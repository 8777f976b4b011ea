"""Which units two subscripts of a shared array can share an element between, for the
barrier check (mcl.mcpl.barriers, docs/checker.md).

Two accesses race only when *different* units touch one element (paper section 4.3: the
units meet only at a barrier; one unit's own accesses are ordered). The barrier check
compares the subscripts of the first access, evaluated by another unit (its unit indices
renamed `t"`) and maybe in another iteration (uniform loop variables renamed `k'`), with
those of the second. Each pair of subscripts becomes a polynomial difference; two proofs
clear a pair:

- *never equal*: the difference has no integer root. A common factor that is never zero
  (a loop variable that starts positive and only grows, or whose condition is `v > 0`)
  is divided out; what remains has no integer root when the gcd of its coefficients
  does not divide its constant: a work-efficient scan's `off * (2 * t + 2) - 1` against
  `off * (2 * t" + 1) - 1` differ by `off * (2 t - 2 t" + 1)`, odd times nonzero.
- *the same unit*: equal subscripts force a unit index to be equal in both. `ty" + k'`
  against `ty + k` with `ty` one of 8 warps and k a multiple of 8 (`k += 8` from 0):
  ty" - ty = k - k' is a multiple of 8 of size below 8, so ty" = ty. When the subscripts
  force every unit index of the units that share the array (or a flattened index built
  from them), both accesses are one unit's. A unit index is also forced when the rest of
  the difference stays below its coefficient over the ranges of the rest's variables:
  `i * 4 + k` against another unit's `i" * 4 + 3 - k'` with k in 0 .. 3.

Anything else (data, division, an unknown factor) proves nothing: the check then warns.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from mcl.mcpl import ast
from mcl.mcpl.varying import assigned_names

# A polynomial with integer coefficients: monomial (its variables, sorted, repeated per
# power) -> coefficient.
Poly = dict[tuple[str, ...], int]

OTHER_UNIT = '"'  # suffix of a unit-dependent name evaluated by the other unit


@dataclass(frozen=True)
class LoopFacts:
    """What the for-loop headers say of a loop variable, for every loop that declares it:
    it is never zero, it is `residue` modulo `modulus` (1: nothing known), two of its
    values differ by at most `span` (None: not known), and none is below `low`."""

    nonzero: bool
    residue: int
    modulus: int
    span: int | None = None
    low: int | None = None


def polynomial(e: ast.Expr, constants: Mapping[str, int],
               definitions: Mapping[str, ast.Expr], depth: int = 0) -> Poly | None:
    """`e` as a polynomial of its names, with the program's integer constants and the
    unit's never-reassigned local definitions (`int ai = off * (2 * t + 1) - 1`) put in;
    None where it is not one (division, data, a call)."""
    match e:
        case ast.IntLit():
            return {(): e.value} if e.value else {}
        case ast.Name():
            if e.name in constants:
                return {(): constants[e.name]} if constants[e.name] else {}
            if e.name in definitions and depth < 8:
                expanded = polynomial(definitions[e.name], constants, definitions, depth + 1)
                if expanded is not None:
                    return expanded
            # (a name without a definition, or whose definition is no polynomial, such as
            # a double buffer's `cur = s % 2`, stands for its own value: `1 - cur` and
            # `cur` still differ by an odd number)
            return {(e.name,): 1}
        case ast.Unary(op="-"):
            inner = polynomial(e.operand, constants, definitions, depth)
            return None if inner is None else {k: -v for k, v in inner.items()}
        case ast.Binary(op="+" | "-" | "*"):
            left = polynomial(e.left, constants, definitions, depth)
            right = polynomial(e.right, constants, definitions, depth)
            if left is None or right is None:
                return None
            if e.op == "*":
                return _times(left, right)
            return _plus(left, right, 1 if e.op == "+" else -1)
    return None


def _plus(a: Poly, b: Poly, sign: int) -> Poly:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + sign * v
    return {k: v for k, v in out.items() if v}


def _times(a: Poly, b: Poly) -> Poly:
    out: Poly = {}
    for ka, va in a.items():
        for kb, vb in b.items():
            key = tuple(sorted(ka + kb))
            out[key] = out.get(key, 0) + va * vb
    return {k: v for k, v in out.items() if v}


def renamed(p: Poly, names: Mapping[str, str]) -> Poly:
    """`p` with each variable of `names` replaced by its new name."""
    out: Poly = {}
    for k, v in p.items():
        key = tuple(sorted(names.get(x, x) for x in k))
        out[key] = out.get(key, 0) + v
    return {k: v for k, v in out.items() if v}


def substituted(p: Poly, values: Mapping[str, int]) -> Poly:
    """`p` with the variables of `values` replaced by their values."""
    out: Poly = {}
    for k, v in p.items():
        rest = []
        for x in k:
            if x in values:
                v *= values[x]
            else:
                rest.append(x)
        key = tuple(rest)
        out[key] = out.get(key, 0) + v
    return {k: v for k, v in out.items() if v}


def difference(a: Poly, b: Poly) -> Poly:
    return _plus(a, b, -1)


def loop_facts(body: ast.Stmt, constants: Mapping[str, int]) -> dict[str, LoopFacts]:
    """The loop variables of `body` whose loops each declare them, never assign them in
    the body, and state something in their header: `for (int off = 1; ...; off *= 2)`
    and `for (int off = N / 2; off > 0; off /= 2)` are never zero, `for (int k = 0; ...;
    k += 8)` is 0 modulo 8. A name shared by several loops keeps what all of them say."""
    found: dict[str, LoopFacts] = {}
    for loop in (n for n in ast.walk(body) if isinstance(n, ast.For)):
        facts = _one_loop(loop, constants)
        name = loop.var
        if name in found:
            before = found[name]
            same = facts is not None and (facts.residue, facts.modulus) == \
                (before.residue, before.modulus)
            spans = (before.span, facts.span if facts is not None else None)
            lows = (before.low, facts.low if facts is not None else None)
            facts = LoopFacts(facts is not None and facts.nonzero and before.nonzero,
                              before.residue if same else 0, before.modulus if same else 1,
                              None if None in spans else max(x for x in spans if x is not None),
                              None if None in lows else min(x for x in lows if x is not None))
        found[name] = facts if facts is not None else LoopFacts(False, 0, 1)
    return found


def _one_loop(loop: ast.For, constants: Mapping[str, int]) -> LoopFacts | None:
    init = loop.init
    if not isinstance(init, ast.Decl) or init.init is None or \
            loop.var in assigned_names(loop.body):
        return None
    start = _constant(init.init, constants)
    step = _step(loop.step, loop.var, constants)
    positive_start = start is not None and start > 0
    nonzero = _positive_condition(loop.cond, loop.var, constants) or (
        positive_start and step is not None and (
            (step[0] == "*" and step[1] >= 1) or (step[0] == "+" and step[1] >= 0)))
    if start is not None and step is not None and step[0] == "+" and step[1] > 0:
        last = _upper_bound(loop.cond, loop.var, constants)
        span = None if last is None else max(0, (last - start) // step[1] * step[1])
        return LoopFacts(nonzero, start % step[1], step[1], span, start)
    return LoopFacts(nonzero, 0, 1)


def _upper_bound(cond: ast.Expr, var: str, constants: Mapping[str, int]) -> int | None:
    """The largest value `v < c` or `v <= c` admits, c a constant."""
    if isinstance(cond, ast.Binary) and cond.op in ("<", "<=") and \
            isinstance(cond.left, ast.Name) and cond.left.name == var:
        bound = _constant(cond.right, constants)
        if bound is not None:
            return bound - 1 if cond.op == "<" else bound
    return None


def _constant(e: ast.Expr, constants: Mapping[str, int]) -> int | None:
    p = polynomial(e, constants, {})
    if p is None or any(k for k in p):
        return None
    return p.get((), 0)


def _step(step: ast.IncDec | ast.Assign, var: str, constants: Mapping[str, int]
          ) -> tuple[str, int] | None:
    """("+", c) for `v++`, `v += c`, `v = v + c`; ("*", c) for `v *= c`, `v = v * c`."""
    match step:
        case ast.IncDec(op="++"):
            return "+", 1
        case ast.Assign(op="+=" | "*="):
            c = _constant(step.value, constants)
            return (step.op[0], c) if c is not None else None
        case ast.Assign(op="=", value=ast.Binary(op="+" | "*", left=ast.Name(name=n)) as v) \
                if n == var:
            c = _constant(v.right, constants)
            return (v.op, c) if c is not None else None
    return None


def _positive_condition(cond: ast.Expr, var: str, constants: Mapping[str, int]) -> bool:
    """`v > c` or `v >= c` with c >= 0 resp. c >= 1 (or the mirrored `c < v`)."""
    if not isinstance(cond, ast.Binary):
        return False
    op, left, right = cond.op, cond.left, cond.right
    if isinstance(right, ast.Name) and right.name == var:
        op, left, right = {"<": ">", "<=": ">="}.get(op, ""), right, left
    if not (isinstance(left, ast.Name) and left.name == var):
        return False
    bound = _constant(right, constants)
    return bound is not None and ((op == ">" and bound >= 0) or (op == ">=" and bound >= 1))


def never_equal(d: Poly, nonzero: set[str]) -> bool:
    """Has the difference `d` of two subscripts no integer root? Factors of `nonzero`
    variables common to every term are divided out; what remains has none when the gcd
    of its coefficients (each term an integer times them) does not divide its constant:
    `2 t" - off * (2 t + 2) + 1` is odd for all integers."""
    while d:
        common = set.intersection(*(set(k) for k in d))
        factor = next((x for x in sorted(common) if x in nonzero), None)
        if factor is None:
            break
        d = {_without(k, factor): v for k, v in d.items()}
    if not d:
        return False
    constant = d.get((), 0)
    divisor = 0
    for k, v in d.items():
        if k:
            divisor = math.gcd(divisor, v)
    return constant != 0 if divisor == 0 else constant % divisor != 0


def _without(monomial: tuple[str, ...], name: str) -> tuple[str, ...]:
    out = list(monomial)
    out.remove(name)
    return tuple(out)


def forced_equal(d: Poly, spans: Mapping[str, int], facts: Mapping[str, LoopFacts]
                 ) -> set[str]:
    """The names b (unit indices and bounded loop variables; `spans`: how far two of
    their values lie apart at most) that `d == 0` forces equal in both accesses: d = a (b*
    - b) + R, b* the other unit's or iteration's b, where every other term of R is a
    multiple of some g (a variable v = r modulo m, as its loop says, gives c v = c r
    modulo c m; any other term c x a multiple of c), the residues sum to 0 modulo g and
    |a| span < g. A forced name drops out and the others are tried again: `(e * 8 + w) *
    32 + t` forces t (the rest is a multiple of 32), then w (a multiple of 256 remains)."""
    forced: set[str] = set()
    while True:
        found = set()
        # (a unit index whose count is a size has no span, but may still be forced)
        names = {k[0] for k in d if len(k) == 1 and not k[0].endswith(("'", OTHER_UNIT))}
        for name in sorted(names | set(spans)):
            span = spans.get(name)
            partner = None if name in forced else _partner(d, name)
            if partner is not None and (
                    (span is not None and _forces(d, name, partner, span, facts))
                    or _outweighs(d, name, partner, spans, facts)):
                found.add(name)
                d = {k: v for k, v in d.items() if k not in ((name,), (partner,))}
        if not found:
            return forced
        forced |= found


def _outweighs(d: Poly, name: str, partner: str, spans: Mapping[str, int],
               facts: Mapping[str, LoopFacts]) -> bool:
    """d = a (b* - b) + R with every term of R a variable of known range (a unit index
    from 0, a loop variable from its start) and |R| < |a| everywhere: then d == 0 forces
    b* = b. A unit's own chunk reversed in place, `a[i * 4 + k]` against another
    iteration's `a[i * 4 + 3 - k]`: 4 (i" - i) = k + k' - 3, which lies in -3 .. 3."""
    a = abs(d[(name,)])
    low = high = d.get((), 0)
    for monomial, coefficient in d.items():
        if monomial in ((), (name,), (partner,)):
            continue
        if len(monomial) != 1:
            return False
        base = monomial[0].rstrip("'" + OTHER_UNIT)
        known = facts.get(base)
        start = known.low if known is not None else 0  # (a unit index starts at 0)
        span = spans.get(base)
        if start is None or span is None:
            return False
        ends = (coefficient * start, coefficient * (start + span))
        low, high = low + min(ends), high + max(ends)
    return -a < low and high < a


def _partner(d: Poly, name: str) -> str | None:
    """The other unit's or iteration's copy of `name` in `d`, with the opposite
    coefficient."""
    a = d.get((name,))
    for suffix in (OTHER_UNIT, "'", "'" + OTHER_UNIT):
        if a is not None and d.get((name + suffix,)) == -a:
            return name + suffix
    return None


def _forces(d: Poly, name: str, partner: str, span: int,
            facts: Mapping[str, LoopFacts]) -> bool:
    a = d[(name,)]
    modulus, residue = 0, d.get((), 0)
    for monomial, coefficient in d.items():
        if monomial in ((), (name,), (partner,)):
            continue
        known = facts.get(monomial[0].rstrip("'" + OTHER_UNIT)) \
            if len(monomial) == 1 else None
        step, start = (known.modulus, known.residue) if known is not None else (1, 0)
        modulus = math.gcd(modulus, coefficient * step)
        residue += coefficient * start
    if modulus == 0:  # a (b* - b) + c == 0
        return residue == 0
    return residue % modulus == 0 and abs(a) * span < modulus
