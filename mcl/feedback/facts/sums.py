"""The number of an unevaluated sum, in bounded time (issue: "no kernel may take more than
1 s of analysis; past a budget an analysis falls back to a marked approximation").

A count without a closed form stays an exact `Sum` over loop counters (e.g. a loop bound
`min(4, p - l*l)` inside a loop over `l`). SymPy's `doit` adds such a sum term by term,
symbolically: p = 100000 took minutes. Here the summand is compiled once and evaluated on
all counter values at a time (in floating point, values within rounding error of an
integer taken as that integer before a `ceiling` or `floor`); a sum with more terms than
`POINTS` is estimated from evenly spaced samples instead, and the result says it is an
approximation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import sympy

from mcl.feedback.facts.compiled import Compiler, Store

# Summand evaluations allowed for one figure before sampling takes over.
POINTS = 200_000
# Values of a counter evaluated when a sum is sampled.
SAMPLES = 2_000
# Rows of an outer sum evaluated one by one where its summand holds a sum in a formula.
ROWS_ONE_BY_ONE = 4_096


def _snap(x: Any) -> Any:
    """x with values within rounding error of an integer made that integer: a ratio of
    integers that is whole must not become 14.000000000000002 (ceiling 15). Counts have
    denominators far below 10^9, so a true fraction is never within 10^-12 relative."""
    x = np.asarray(x, dtype=np.float64)
    r = np.rint(x)
    return np.where(np.abs(x - r) <= 1e-12 * np.maximum(1.0, np.abs(x)), r, x)


def _ceil(x: Any) -> Any:
    return np.ceil(_snap(x))


def _floor(x: Any) -> Any:
    return np.floor(_snap(x))


# The numpy module itself, not the name "numpy": with the name, lambdify runs
# `from numpy import *`, which imports numpy's lazily loaded submodules (f2py, testing,
# ...): about 0.3 s on the first sum, for the same generated code.
_COMPILED = Compiler([{"ceil": _ceil, "floor": _floor}, np])


class _Budget:
    def __init__(self, points: int) -> None:
        self.left = points
        self.approximate = False


# Sums already added up: the figures of one kernel share them (`Sum(...)` in the loads,
# the accesses and the intensity), and their summands' compiled code (`_COMPILED`).
_SUMS: Store[Any, tuple[Any, bool]] = Store()
# The numbers of whole figures: the figures of a kernel are formulas in its sizes, most of
# them the same after an edit, and the editor's worker evaluates them again at every edit;
# a figure with sums in it is rebuilt with stand-ins for its sums and renamed to find its
# compiled code (`_value`, `_compiled`), milliseconds where it holds a `Min` of sums.
# The number depends on the formula, the values and the points alone.
_NUMBERS: Store[Any, tuple[Any, bool]] = Store()


def sum_number(expr: Any, values: Mapping[Any, Any] | None = None, points: int = POINTS
               ) -> tuple[Any, bool]:
    """The number of `expr` with `values` (symbol -> number) for its free symbols other
    than the sums' own counters: (value, approximate). (None, False) when it cannot be
    evaluated."""
    env = {s: float(v) for s, v in (values or {}).items()}
    try:
        expr = sympy.sympify(expr)
    except (TypeError, ValueError):
        return None, False
    key = (expr, frozenset(env.items()), points)
    try:
        hash(key)
    except TypeError:  # a mutable SymPy object: computed every time
        return _number(expr, env, points)
    found = _NUMBERS.get(key)
    if found is None:
        found = _NUMBERS.put(key, _number(expr, env, points))
    return found


def _number(expr: Any, env: dict[Any, float], points: int) -> tuple[Any, bool]:
    """`sum_number`, computed."""
    budget = _Budget(points)
    try:
        # numpy's warnings on a division by 0 or a log of 0 would reach the user's
        # terminal; a value that is not finite is no count (None) instead
        with np.errstate(all="ignore"):
            value = _scalar(_value(expr, env, 1, budget))
    except (TypeError, ValueError, ArithmeticError, AttributeError, NameError,
            NotImplementedError, KeyError):
        return None, False
    if isinstance(value, float) and not np.isfinite(value):
        return None, False
    return value, budget.approximate


def _value(e: Any, env: dict[Any, Any], rows: int, budget: _Budget) -> Any:
    """e for each of `rows` bindings of the counters in `env` (arrays of `rows` values)."""
    if not e.has(sympy.Sum):
        return _compiled(e, env, rows, budget)
    if rows != 1 or any(isinstance(v, np.ndarray) for v in env.values()):
        # A sum whose summand holds a sum inside a formula (`Sum(x + Sum(y, i), j)`): the
        # inner sum's bounds differ from row to row, so row by row, each row's counters
        # as numbers (the sums are kept by them).
        return _row_by_row(e, env, rows, budget)
    if isinstance(e, sympy.Sum):
        return _cached_sum(e, env, budget)
    # Sums inside a larger expression: evaluate the sums first, then the rest.
    sums = sorted(e.atoms(sympy.Sum), key=sympy.default_sort_key)
    names = [sympy.Dummy("s") for _ in sums]
    replaced = e.xreplace(dict(zip(sums, names, strict=True)))
    inner = {**env, **{n: _cached_sum(s, env, budget)
                       for n, s in zip(names, sums, strict=True)}}
    return _compiled(replaced, inner, 1, budget)


def _row_by_row(e: Any, env: dict[Any, Any], rows: int, budget: _Budget) -> Any:
    """`_value` of `e` one row of `env` at a time (each row's counters as numbers); past
    ROWS_ONE_BY_ONE rows no value (a Python loop per row would run long), as before."""
    if rows > ROWS_ONE_BY_ONE:
        raise NotImplementedError
    out = np.empty(rows)
    for k in range(rows):
        row = {s: (float(v[k] if v.shape == (rows,) else v.item())
                   if isinstance(v, np.ndarray) else v) for s, v in env.items()}
        out[k] = _column(_value(e, row, 1, budget), 1)[0]
    return out


def _cached_sum(e: Any, env: dict[Any, Any], budget: _Budget) -> Any:
    free = e.free_symbols  # computed anew on every access: once, not once per value
    key = (e, tuple(sorted((str(s), v) for s, v in env.items() if s in free)))
    found = _SUMS.get(key)
    if found is None:
        before = budget.approximate
        budget.approximate = False
        value = _sum(e, env, budget)
        _SUMS.put(key, (value, budget.approximate))
        budget.approximate = before or budget.approximate
        return value
    value, approximate = found
    budget.approximate = budget.approximate or approximate
    return value


def _sum(e: Any, env: dict[Any, Any], budget: _Budget) -> Any:
    """A (nested) sum, its iteration space flattened: one row per combination of the
    counters, so the summand is evaluated on all rows at once. Past the budget, evenly
    spaced rows stand for the others (each weighted by how many it stands for)."""
    limits: list[tuple[Any, Any, Any]] = []
    body = e
    while isinstance(body, sympy.Sum):
        # Outermost first: Sum(f, (inner), (outer)) lists its inner limit first.
        limits += list(reversed(body.limits))
        body = body.function
    columns: dict[Any, Any] = {k: np.full(1, float(v)) for k, v in env.items()}
    weight = np.ones(1)
    for t, low, high in limits:
        rows = len(weight)
        lo = _column(_compiled(low, columns, rows, budget), rows)
        hi = _column(_compiled(high, columns, rows, budget), rows)
        counts = np.maximum(np.rint(hi - lo + 1), 0).astype(np.int64)
        total = int(counts.sum())
        ends = np.cumsum(counts)
        if total > budget.left:
            # Evenly spaced points of the flattened space stand for all of it.
            budget.approximate = True
            picked = np.unique(np.linspace(0, total - 1, max(budget.left, SAMPLES)
                                           ).round().astype(np.int64))
            index = np.searchsorted(ends, picked, side="right")
            offsets = picked - (ends - counts)[index]
            weight = weight[index] * (total / len(picked))
            total = len(picked)
        else:
            index = np.repeat(np.arange(len(counts)), counts)
            offsets = np.arange(total) - np.repeat(ends - counts, counts)
            weight = weight[index]
        budget.left = max(0, budget.left - total)
        columns = {k: v[index] for k, v in columns.items()}
        columns[t] = lo[index] + offsets
    if len(weight) == 0:
        return 0
    summand = _column(_value(body, columns, len(weight), budget), len(weight))
    return _scalar(np.sum(summand * weight))


def _column(value: Any, rows: int) -> Any:
    array = np.asarray(value, dtype=np.float64)
    return array if array.shape == (rows,) else np.full(rows, float(array.item()))


def _scalar(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        value = value.item() if value.size == 1 else None
    if isinstance(value, np.floating):
        value = float(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def _compiled(e: Any, env: dict[Any, Any], rows: int, budget: _Budget) -> Any:
    symbols = sorted(e.free_symbols, key=str)
    missing = [s for s in symbols if s not in env]
    if missing:
        raise ValueError(f"no value for {missing}")
    if not symbols:
        return _exact_number(e)
    return _COMPILED(symbols, e)(*[env[s] for s in symbols])


def _exact_number(e: Any) -> Any:
    return int(e) if e.is_Integer else float(e)
