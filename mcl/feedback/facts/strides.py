"""Strides and cache-line counts of one access in one loop (the paper's section 6.4).

"For a loop it symbolically fills in the start value of the loop into the array expression
and the start + the step of the loop into the array expression. It symbolically subtracts
these values to determine the stride that a loop causes in the array expression." From the
stride and the cache-line size follow the best case (fewest lines the loop can fetch) and
the worst case (a line per iteration, or per unit that can use the cache at once).

Everything here is pure SymPy arithmetic on a flattened index; `mcl.feedback.analyses.cache` turns
MCPL accesses into such indices. The formulas are built in closed form, never through
`sympy.simplify`: simplifying a `Piecewise` of `floor`s took seconds per access and gave
no more readable result than the forms below (`ceiling(n/8)`, `4*floor(n/120) +
ceiling(Mod(n, 120)/32)`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sympy

from mcl.feedback.facts.symbolic import ceiling_div
from mcl.mcpl import rounding
from mcl.mcpl.symbolic_values import kept_per_process


# The editor's worker analyses the kernel again at every edit, under the loop counters and
# stand-ins of the last job (mcl.feedback.facts.stable_dummies): the indices of the code
# an edit did not touch come back as the same expressions. SymPy's substitution rebuilds
# the whole index (milliseconds for spmv's, with minima inside), so it is kept per
# process; SymPy's expressions are immutable and compare by structure, so an index equal
# to one seen before gives the same result.
@kept_per_process(4096)
def substituted(expr: Any, pairs: tuple[tuple[Any, Any], ...]) -> Any:
    """`expr.subs(dict(pairs))`."""
    return expr.subs(dict(pairs))


@kept_per_process(4096)
def loop_stride(index: Any, var: Any, start: Any, step: Any) -> Any:
    """Section 6.4: the distance (in index units) between the accesses of two consecutive
    iterations, index(start + step) - index(start)."""
    index = sympy.sympify(index)
    after = index.subs(var, start + step)
    first = index.subs(var, start)
    # The index is affine in the loop counters (the caller checked): expanding cancels
    # every term the counter does not change.
    return sympy.expand(after - first)


# The user's values as a key: by name, with the type of each (2048 and 2048.0 are equal
# keys of a dict, not equal values for SymPy).
FrozenValues = tuple[tuple[str, str, Any], ...] | None


def frozen_values(values: Mapping[str, Any] | None) -> FrozenValues:
    if values is None:
        return None
    return tuple(sorted((name, type(v).__name__, v) for name, v in values.items()))


def thawed(frozen: FrozenValues) -> dict[str, Any] | None:
    return None if frozen is None else {name: v for name, _, v in frozen}


def by_name(expr: Any, values: Mapping[str, Any]) -> dict[Any, Any]:
    """A substitution for the free symbols of `expr` that the user gave values for
    (`-D m=2048` names a symbol by its name, whatever its assumptions)."""
    return {s: sympy.sympify(values[s.name]) for s in sympy.sympify(expr).free_symbols
            if s.name in values}


def compare(a: Any, op: str, b: Any, values: Mapping[str, Any] | None = None
            ) -> bool | None:
    """`a op b` (op one of < <= > >= ==) when it is decided, symbolically (from the
    symbols' assumptions: sizes are positive) or with the user's values; None when it
    depends on values not given. Works on the sign of a - b: building a SymPy relation
    of two ceilings and asking it costs a hundred times more."""
    difference = sympy.expand(sympy.sympify(a) - sympy.sympify(b))
    if values and difference.free_symbols:
        try:
            difference = difference.xreplace(by_name(difference, values))
        except (TypeError, ValueError, ZeroDivisionError):
            return None  # a value outside a closed form's domain (`Max(1, n/m)`, m = 0)
    if difference.is_number:
        try:
            sign = _SIGN[op](complex(difference).real)
        except (TypeError, ValueError):
            return None
        return sign
    facts = _FACTS[op]
    if getattr(difference, facts[0]):
        return True
    if getattr(difference, facts[1]):
        return False
    return None


_SIGN = {"<": lambda x: x < 0, "<=": lambda x: x <= 0, ">": lambda x: x > 0,
         ">=": lambda x: x >= 0, "==": lambda x: x == 0}
# op -> (the assumption on a - b that makes `a op b` true, the one that makes it false)
_FACTS = {"<": ("is_negative", "is_nonnegative"), "<=": ("is_nonpositive", "is_positive"),
          ">": ("is_positive", "is_nonpositive"), ">=": ("is_nonnegative", "is_negative"),
          "==": ("is_zero", "is_nonzero")}


def _stride_kind(stride: Any, line_bytes: int, values: Mapping[str, Any] | None
                 ) -> tuple[str, str | None]:
    """"zero", "wide" (a line or more: every access needs its own line) or "narrow", and
    the assumption made when a symbolic stride cannot be compared with the line size
    (`4*m`): it is taken to be at least a line, since it grows with a problem size."""
    if compare(stride, "==", 0, values):
        return "zero", None
    wide = compare(stride, ">=", line_bytes, values)
    if wide is None:
        return "wide", f"assuming the stride of {sympy.sstr(stride)} B is at least a line"
    return ("wide" if wide else "narrow"), None


def _aligned_span(count: Any, stride: Any, element_bytes: int, line_bytes: int) -> Any:
    """Lines of `count` >= 1 accesses `stride` < line apart, the first on a line start."""
    return rounding.ceiling(sympy.expand((count - 1) * stride + element_bytes) / line_bytes)


def _unaligned_span(count: Any, stride: Any, line_bytes: int) -> Any:
    """Lines of `count` >= 1 accesses `stride` < line apart, the first in the last element
    of a line: one line more than the bytes after the first access need. It is never more
    than `count`, since each stride stays below a line."""
    return rounding.ceiling(sympy.expand((count - 1) * stride) / line_bytes) + 1


def best_case_lines(
    iterations: Any,
    stride_bytes: Any,
    element_bytes: int,
    line_bytes: int,
    values: Mapping[str, Any] | None = None,
) -> tuple[Any, str | None]:
    """`_best_case_lines`, kept per process (`kept_per_process`): the cache analysis
    asks it again for every access of the code an edit did not touch."""
    return _best_case_lines(iterations, stride_bytes, element_bytes, line_bytes,
                            frozen_values(values))


@kept_per_process(1024)
def _best_case_lines(
    iterations: Any,
    stride_bytes: Any,
    element_bytes: int,
    line_bytes: int,
    frozen: FrozenValues,
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
    kind, note = _stride_kind(stride, line_bytes, thawed(frozen))
    if kind == "zero":
        return sympy.Integer(1), None
    if kind == "wide":
        return iterations, note
    lines = _aligned_span(iterations, stride, element_bytes, line_bytes)
    return (lines if iterations.is_positive else sympy.Max(1, lines)), note


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
    kind, _ = _stride_kind(stride, line_bytes, values)
    if kind == "zero":
        return sympy.Integer(1)
    if kind == "wide":
        return iterations
    spanned = _unaligned_span(iterations, stride, line_bytes)
    return spanned if iterations.is_positive else sympy.Min(iterations, sympy.Max(1, spanned))


def grouped_lines(
    units: Any,
    group_size: Any | None,
    stride_bytes: Any,
    element_bytes: int,
    line_bytes: int,
    values: Mapping[str, Any] | None = None,
) -> tuple[Any, Any, str | None]:
    """`_grouped_lines`, kept per process (`kept_per_process`): the minima and maxima
    it builds take SymPy milliseconds (SymPy keeps none of them), and the cache analysis
    asks it again for every access of the code an edit did not touch."""
    return _grouped_lines(units, group_size, stride_bytes, element_bytes, line_bytes,
                          frozen_values(values))


@kept_per_process(1024)
def _grouped_lines(
    units: Any,
    group_size: Any | None,
    stride_bytes: Any,
    element_bytes: int,
    line_bytes: int,
    frozen: FrozenValues,
) -> tuple[Any, Any, str | None]:
    """(best, worst when groups start anywhere, note): lines fetched by the accesses of
    `units` consecutive units, `stride_bytes` apart, when only the units of one group of
    `group_size` can share the lines they fetch (all of them when `group_size` is None).

    A group is a lock-step group (a warp, a vector: section 6.4, "Units of parallelism
    that execute in lock-step [...] access the same cache-line") or the units that use one
    cache at once (the slots of the execution unit holding it). Each group fetches the
    lines its accesses span: the best case when it starts on a line. The units form
    floor(units / group) full groups and, when the group size does not divide them, one
    group of Mod(units, group) units."""
    values = thawed(frozen)
    units = sympy.sympify(units)
    args = (stride_bytes, element_bytes, line_bytes)
    if group_size is None:
        best, note = best_case_lines(units, *args, values)
        return best, unaligned_lines(units, *args, values), note
    size = sympy.sympify(group_size)
    stride = sympy.Abs(sympy.sympify(stride_bytes))
    kind, note = _stride_kind(stride, line_bytes, values)
    if kind == "wide":
        return units, units, note  # a line per unit, whatever the groups
    if kind == "zero":
        groups = ceiling_div(units, size)
        return groups, groups, None  # one line per group
    if units.is_Integer and size.is_Integer and stride.is_Integer:  # all known: count
        full, rest = divmod(int(units), int(size))
        best = full * _aligned_span(size, stride, element_bytes, line_bytes)
        worst = full * _unaligned_span(size, stride, line_bytes)
        if rest:
            best += _aligned_span(rest, stride, element_bytes, line_bytes)
            worst += _unaligned_span(rest, stride, line_bytes)
        return sympy.Integer(best), sympy.Integer(worst), None
    full, rest = rounding.floor(units / size), sympy.Mod(units, size)
    whole_best = _aligned_span(size, stride, element_bytes, line_bytes)
    whole_worst = _unaligned_span(size, stride, line_bytes)
    # The lines of a group grow with its units: when one unit needs as many lines as a
    # full group, so does the last, partial group.
    if whole_best == _aligned_span(1, stride, element_bytes, line_bytes):
        best = whole_best * ceiling_div(units, size)
    elif compare(stride, ">=", element_bytes, values):
        # For rest = 0 the span formula gives ceiling((element - stride) / line) = 0.
        best = whole_best * full + _aligned_span(rest, stride, element_bytes, line_bytes)
    else:
        best = whole_best * full + sympy.Piecewise(
            (_aligned_span(rest, stride, element_bytes, line_bytes), sympy.Gt(rest, 0)),
            (0, True))
    if whole_worst == 1:
        worst = ceiling_div(units, size)
    else:  # Min(rest, ...) is 0 for rest = 0 and the span otherwise
        worst = whole_worst * full + sympy.Min(rest, _unaligned_span(rest, stride, line_bytes))
    return best, worst, note
