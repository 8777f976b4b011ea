"""Does an `if` decide nothing at the sizes given? (Noise: a guard that takes one branch
everywhere is no finding.)

Tiled kernels guard their edges (`if (i < n && k < p)` with `i = bi * TILE + e / TILE_K`).
The operation counts cannot always collapse such a guard symbolically (a division or a
modulo in the index), so they count every iteration and warn that the figure is an upper
bound (`opstats-approximate`). At the sizes people run, multiples of the tiles, the
guard holds for every iteration and the upper bound is the exact count: the warning is
then noise. With the values of `-D`, this module bounds the condition over every
iteration (interval arithmetic: each loop counter from 0 to its largest trip count
minus one) and answers True only when the branch is provably taken every time; any
expression it cannot bound gives None ("cannot tell"), and the warning stays.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sympy

from mcl.feedback.facts.kernel import Guard
from mcl.feedback.facts.symbolic import SymbolicEvaluator

Interval = tuple[Any, Any]  # (low, high) as SymPy numbers, inclusive; ±oo allowed


def branch_runs(ev: SymbolicEvaluator, guard: Guard, values: Mapping[str, Any]) -> bool | None:
    """At `values`: True when the statements under `guard` run in every iteration of the
    loops around it (the then-branch of a condition that always holds, the else-branch of
    one that never does), False when they never run, None when it varies or the
    condition cannot be bounded."""
    rel = ev.sym(guard.cond, guard.scope)
    if rel is None:
        return None
    truth = _truth(ev, sympy.sympify(rel), values, {})
    if truth is None:
        return None
    return truth if guard.then else not truth


def _truth(ev: SymbolicEvaluator, rel: Any, values: Mapping[str, Any], memo: dict) -> bool | None:
    """The value of a condition for every iteration: True, False, or None (varies or
    cannot be bounded)."""
    if rel is sympy.true or rel is sympy.false:
        return bool(rel)
    match rel:
        case sympy.And():
            parts = [_truth(ev, a, values, memo) for a in rel.args]
            return True if all(p is True for p in parts) else (
                False if any(p is False for p in parts) else None)
        case sympy.Or():
            parts = [_truth(ev, a, values, memo) for a in rel.args]
            return True if any(p is True for p in parts) else (
                False if all(p is False for p in parts) else None)
        case sympy.Not():
            inner = _truth(ev, rel.args[0], values, memo)
            return None if inner is None else not inner
        case (sympy.StrictLessThan() | sympy.LessThan() | sympy.StrictGreaterThan()
              | sympy.GreaterThan()):
            bounds = _interval(ev, rel.lhs - rel.rhs, values, memo)
            if bounds is None:
                return None
            low, high = bounds
            match rel:
                case sympy.StrictLessThan():
                    return True if high < 0 else (False if low >= 0 else None)
                case sympy.LessThan():
                    return True if high <= 0 else (False if low > 0 else None)
                case sympy.StrictGreaterThan():
                    return True if low > 0 else (False if high <= 0 else None)
            return True if low >= 0 else (False if high < 0 else None)
    return None


def _interval(ev: SymbolicEvaluator, e: Any, values: Mapping[str, Any], memo: dict
              ) -> Interval | None:
    """Bounds of `e` over every iteration (None when it cannot be bounded)."""
    e = sympy.sympify(e)
    if e.is_Number:
        return (e, e)
    match e:
        case sympy.Symbol():
            return _symbol(ev, e, values, memo)
        case sympy.Add():
            parts = [_interval(ev, a, values, memo) for a in e.args]
            if any(p is None for p in parts):
                return None
            return (sum((p[0] for p in parts if p), sympy.Integer(0)),
                    sum((p[1] for p in parts if p), sympy.Integer(0)))
        case sympy.Mul():
            out: Interval = (sympy.Integer(1), sympy.Integer(1))
            for a in e.args:
                part = _interval(ev, a, values, memo)
                if part is None:
                    return None
                products = [x * y for x in out for y in part]
                if any(p is sympy.nan for p in products):
                    return None
                out = (min(products), max(products))
            return out
        case sympy.floor() | sympy.ceiling():
            inner = _interval(ev, e.args[0], values, memo)
            if inner is None:
                return None
            return (type(e)(inner[0]), type(e)(inner[1]))
        case sympy.Min() | sympy.Max():
            parts = [_interval(ev, a, values, memo) for a in e.args]
            if any(p is None for p in parts):
                return None
            pick = min if isinstance(e, sympy.Min) else max
            return (pick(p[0] for p in parts if p), pick(p[1] for p in parts if p))
        case sympy.Mod():
            x, m = (_interval(ev, a, values, memo) for a in e.args)
            if x is None or m is None or m[0] != m[1] or not m[0].is_positive:
                return None
            if x[0] >= 0 and x[1] < m[0]:
                return x  # x % m == x
            return (sympy.Integer(0), m[0] - 1)
    return None


def _symbol(ev: SymbolicEvaluator, s: sympy.Symbol, values: Mapping[str, Any], memo: dict
            ) -> Interval | None:
    if s in memo:
        return memo[s]
    memo[s] = None  # a trip count that depends on itself cannot be bounded
    loop = next((x for x in ev.loops if ev.counter(x) == s), None)
    if loop is not None:
        trips = _interval(ev, ev.trips(loop), values, memo)
        result = None if trips is None or trips[1] is sympy.oo else (
            (sympy.Integer(0), sympy.Max(trips[1] - 1, 0)))
    elif s.name in values and not ev.is_opaque(s):
        v = sympy.sympify(values[s.name])
        result = (v, v)
    else:
        result = None
    memo[s] = result
    return result
