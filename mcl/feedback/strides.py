"""Strides and cache-line counts of one access in one loop (the paper's section 6.4).

"For a loop it symbolically fills in the start value of the loop into the array expression
and the start + the step of the loop into the array expression. It symbolically subtracts
these values to determine the stride that a loop causes in the array expression." From the
stride and the cache-line size follow the best case (fewest lines the loop can fetch) and
the worst case (a line per iteration, or per unit that can use the cache at once).

Everything here is pure SymPy arithmetic on a flattened index; `mcl.feedback.cache` turns
MCPL accesses into such indices.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sympy


def loop_stride(index: Any, var: Any, start: Any, step: Any) -> Any:
    """Section 6.4: the distance (in index units) between the accesses of two consecutive
    iterations, index(start + step) - index(start)."""
    index = sympy.sympify(index)
    after = index.subs(var, start + step)
    first = index.subs(var, start)
    return sympy.simplify(sympy.expand(after - first))


def by_name(expr: Any, values: Mapping[str, Any]) -> dict[Any, Any]:
    """A substitution for the free symbols of `expr` that the user gave values for
    (`-D m=2048` names a symbol by its name, whatever its assumptions)."""
    return {s: values[s.name] for s in sympy.sympify(expr).free_symbols if s.name in values}


def decide(condition: Any, values: Mapping[str, Any] | None = None) -> bool | None:
    """True/False when `condition` is decided, symbolically or with the user's values."""
    condition = sympy.sympify(condition)
    if values:
        condition = condition.subs(by_name(condition, values))
    if condition in (sympy.true, sympy.false):
        return bool(condition)
    return None


def best_case_lines(
    iterations: Any,
    stride_bytes: Any,
    element_bytes: int,
    line_bytes: int,
    values: Mapping[str, Any] | None = None,
) -> tuple[Any, str | None]:
    """Fewest distinct cache lines `iterations` accesses `stride_bytes` apart can touch.

    Section 6.4: stride 0 -> 1 line; otherwise iterations * stride / line_size lines. We
    count the exact minimum (the first access aligned to a line): accesses closer than a
    line cover ((iterations - 1) * stride + element) bytes, which equals the paper's
    iterations * stride when stride == element; accesses a line or more apart each need
    their own line. A symbolic stride that cannot be compared with the line size (`4*m`)
    is taken to be at least a line (it grows with a problem size); the returned note says
    so, and is None when nothing was assumed.
    """
    iterations = sympy.sympify(iterations)
    stride = sympy.Abs(sympy.sympify(stride_bytes))
    if decide(sympy.Eq(stride, 0), values):
        return sympy.Integer(1), None
    wide = decide(sympy.Ge(stride, line_bytes), values)
    note = None
    if wide is None:
        wide = True
        note = f"assuming the stride of {sympy.sstr(stride)} B is at least a line"
    if wide:
        return iterations, note
    lines = sympy.ceiling(((iterations - 1) * stride + element_bytes) / line_bytes)
    return sympy.Max(1, sympy.simplify(lines)), note


def unaligned_lines(
    iterations: Any,
    stride_bytes: Any,
    element_bytes: int,
    line_bytes: int,
    values: Mapping[str, Any] | None = None,
) -> Any:
    """Most distinct lines the same accesses can touch when the first one is not aligned
    to a line (it may start in the last element of a line): one more line than the span
    needs, at most one per access."""
    iterations = sympy.sympify(iterations)
    stride = sympy.Abs(sympy.sympify(stride_bytes))
    if decide(sympy.Eq(stride, 0), values):
        return sympy.Integer(1)
    if decide(sympy.Ge(stride, line_bytes), values) in (True, None):
        return iterations
    spanned = sympy.ceiling((iterations - 1) * stride / line_bytes) + 1
    return sympy.Min(iterations, sympy.Max(1, sympy.simplify(spanned)))


def grouped_lines(
    units: Any,
    group_size: Any | None,
    stride_bytes: Any,
    element_bytes: int,
    line_bytes: int,
    values: Mapping[str, Any] | None = None,
) -> tuple[Any, Any, str | None]:
    """(best, worst when groups start anywhere, note): lines fetched by the accesses of
    `units` consecutive units, `stride_bytes` apart, when only the units of one group of
    `group_size` can share the lines they fetch (all of them when `group_size` is None).

    A group is a lock-step group (a warp, a vector: section 6.4, "Units of parallelism
    that execute in lock-step [...] access the same cache-line") or the units that use one
    cache at once (the slots of the execution unit holding it). Each group fetches the
    lines its accesses span: the best case when it starts on a line."""
    units = sympy.sympify(units)
    args = (stride_bytes, element_bytes, line_bytes)
    if group_size is None:
        best, note = best_case_lines(units, *args, values)
        return best, unaligned_lines(units, *args, values), note
    full = sympy.floor(units / group_size)
    rest = sympy.simplify(units - full * group_size)
    best, note = best_case_lines(group_size, *args, values)
    best_rest, _ = best_case_lines(rest, *args, values)
    worst = unaligned_lines(group_size, *args, values)
    worst_rest = unaligned_lines(rest, *args, values)

    def total(whole: Any, part: Any) -> Any:
        if sympy.simplify(whole - group_size) == 0 and sympy.simplify(part - rest) == 0:
            return units  # a line per unit
        if not whole.free_symbols and sympy.simplify(part - whole) == 0:
            return whole * sympy.ceiling(units / group_size)  # the same lines per group
        return sympy.simplify(full * whole + sympy.Piecewise((part, sympy.Gt(rest, 0)),
                                                             (0, True)))

    return total(best, best_rest), total(worst, worst_rest), note
