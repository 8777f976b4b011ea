"""SymPy expressions as Python functions with exact arithmetic, for evaluating one
expression at many points.

The lock-step walk of the feedback functions (mcl.feedback.lockstep) decides the guards
and computes the address of every lane of every warp, and the operation counts decide a
guard point by point (mcl.feedback.facts.counting): thousands of evaluations of a few
expressions per kernel, each of which, through `xreplace`, rebuilds the SymPy tree (about
0.1 ms). `exact_function` turns an expression of integers, rationals, `floor`, `ceiling`,
`Mod`, `Min`, `Max`, powers, comparisons and `And`/`Or`/`Not` into a Python function of
its symbols that computes with `int` and `fractions.Fraction`: the same exact numbers
SymPy computes, in a few microseconds (`as_sympy` gives them as SymPy objects). Anything
else (floats, powers with a constant fractional exponent, `Piecewise`, infinities) is not
compiled; the caller then substitutes with SymPy as before. Where SymPy's answer is not
an exact number (a division by zero: `zoo` or `nan`; a power whose computed exponent is
fractional: a root) the function raises ArithmeticError: callers catch it and ask SymPy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, cast

import sympy

Exact = Callable[..., Any]


class _Unsupported(Exception):
    """An expression outside what `compile_exact` prints."""


def _inverse(x: int | Fraction) -> Fraction:
    return 1 / Fraction(x)


def _power(base: int | Fraction, exponent: int | Fraction) -> int | Fraction:
    """`base ** exponent` for an exponent computed at run time (`2 ** (-s - 1)` of a
    reduction tree's halving step): exact for an integral exponent; ArithmeticError for a
    fractional one (a root), which the caller then asks SymPy."""
    if isinstance(exponent, Fraction) and exponent.denominator != 1:
        raise ArithmeticError("a fractional power")
    k = int(exponent)
    # int ** int of a non-negative exponent is an int (typeshed cannot tell the sign)
    power = cast("int | Fraction", base ** abs(k))
    return power if k >= 0 else _inverse(power)


def as_sympy(x: int | Fraction | bool) -> Any:
    """The SymPy number (or truth value) of what a compiled function returns."""
    if isinstance(x, bool):  # before int: a bool is an int
        return sympy.true if x else sympy.false
    if isinstance(x, int):
        return sympy.Integer(x)
    return sympy.Rational(x.numerator, x.denominator)


_NAMESPACE: dict[str, Any] = {
    "_floor": math.floor, "_ceil": math.ceil, "_max": max, "_min": min, "_abs": abs,
    "_inverse": _inverse, "_power": _power,
}

# SymPy function -> the Python function of _NAMESPACE that computes it exactly.
_CALLS: dict[type, str] = {
    sympy.floor: "_floor", sympy.ceiling: "_ceil", sympy.Max: "_max", sympy.Min: "_min",
    sympy.Abs: "_abs",
}
_ROUNDING = (sympy.floor, sympy.ceiling)
_RELATIONS: dict[type, str] = {
    sympy.StrictLessThan: "<", sympy.LessThan: "<=", sympy.StrictGreaterThan: ">",
    sympy.GreaterThan: ">=", sympy.Equality: "==", sympy.Unequality: "!=",
}
_JOINS: dict[type, str] = {sympy.Add: " + ", sympy.Mul: " * ", sympy.And: " and ",
                           sympy.Or: " or "}


def _source(expr: Any, names: dict[Any, str], bound: dict[str, Any]) -> str:
    """Python source computing `expr`, each of its symbols spelled as `names` says and
    its fractions bound in `bound`; _Unsupported for what the module docstring excludes."""
    def arg(i: int) -> str:
        return _source(expr.args[i], names, bound)

    def args() -> str:
        return ", ".join(_source(a, names, bound) for a in expr.args)

    if expr.is_Symbol:
        if expr not in names:
            raise _Unsupported(str(expr))
        return names[expr]
    if expr.is_Integer:
        return f"({int(expr)})"
    if expr.is_Rational:
        name = f"_q{len(bound)}"
        bound[name] = Fraction(expr.p, expr.q)
        return name
    if expr is sympy.true or expr is sympy.false:
        return str(bool(expr))
    kind = type(expr)
    if kind in _JOINS:
        return "(" + _JOINS[kind].join(_source(a, names, bound) for a in expr.args) + ")"
    if kind in _RELATIONS:
        return f"({arg(0)} {_RELATIONS[kind]} {arg(1)})"
    if kind is sympy.Not:
        return f"(not {arg(0)})"
    if kind is sympy.Mod:
        return f"({arg(0)} % {arg(1)})"
    if kind is sympy.Pow and expr.exp.is_Integer:
        k = int(expr.exp)
        return f"({arg(0)} ** {k})" if k >= 0 else f"_inverse({arg(0)} ** {-k})"
    if kind is sympy.Pow and not expr.exp.is_number:
        return f"_power({arg(0)}, {arg(1)})"
    if kind in _ROUNDING:
        scaled = _scaled_source(expr.args[0], names, bound)
        if scaled is not None:  # floor(a/q) as a // q: no Fraction built per evaluation
            body, scale = scaled
            return f"({body} // {scale})" if kind is sympy.floor else \
                f"(-((-{body}) // {scale}))"
    if kind in _CALLS:
        return f"{_CALLS[kind]}({args()})"
    raise _Unsupported(kind.__name__)


def _scaled_source(expr: Any, names: dict[Any, str], bound: dict[str, Any]
                   ) -> tuple[str, int] | None:
    """(source of D * `expr`, D) for the least D that makes the rational coefficients of
    `expr`'s terms integers (a thread's warp `floor(t/32)`, a row `floor(t/16 + w/2)`):
    D * expr is then computed without a Fraction, and floor(expr) is exactly
    (D * expr) // D, ceiling(expr) exactly -((-D * expr) // D), as ints (what
    `math.floor` of the Fraction gives). None when no coefficient is fractional."""
    terms = expr.args if type(expr) is sympy.Add else (expr,)
    split: list[tuple[Any, tuple[Any, ...]]] = []
    for term in terms:
        if term.is_Rational:
            split.append((term, ()))
        elif type(term) is sympy.Mul and term.args[0].is_Rational:
            split.append((term.args[0], term.args[1:]))
        else:
            split.append((sympy.Integer(1), (term,)))
    scale = math.lcm(*(int(c.q) for c, _ in split))
    if scale == 1:
        return None
    parts = []
    for coefficient, rest in split:
        factor = int(coefficient * scale)
        parts.append(" * ".join([f"({factor})"] + [_source(r, names, bound) for r in rest]))
    return "(" + " + ".join(f"({part})" for part in parts) + ")", scale


def exact_function(expr: Any, variables: Sequence[Any], constants: dict[Any, int]
                   ) -> Exact | None:
    """A function of `variables` (SymPy symbols, given as Python ints) that returns
    `expr` with them and `constants` put in, as a Python `int`, `Fraction` or `bool`
    (`as_sympy` makes it the SymPy number or truth value that substituting them gives:
    callers that want a plain number skip SymPy altogether); None when `expr` has a part
    outside what this module prints."""
    names = {v: f"_x{i}" for i, v in enumerate(variables)}
    names.update({s: f"({int(value)})" for s, value in constants.items()})
    bound = dict(_NAMESPACE)
    try:
        body = _source(expr, names, bound)
    except (_Unsupported, RecursionError):
        return None
    source = f"lambda {', '.join(names[v] for v in variables)}: {body}"
    function: Exact = eval(source, bound)  # noqa: S307 - source printed above
    return function
