"""Differential test of MCPL's operator semantics (`mcl.mcpl.operators`): random int and
float expressions give the same value in the reference interpreter, in host evaluation
(`mcl.codegen.host_eval`, what the generated host computes for sizes) and in the
generated OpenCL run on the PoCL device; and the other domains of the one evaluator
(`mcl.mcpl.evaluate`: SymPy for feedback, intervals) agree with host evaluation's C
semantics.

Each example is a batch of expressions compiled into one kernel, so the OpenCL compiler
runs once per example. An expression MCPL leaves undefined (int overflow, a shift count
outside 0..31, division by zero) must be an error in both Python evaluators; the device
may compute anything for it, so it is not compared there."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import sympy
from hypothesis import HealthCheck, Phase, example, given, seed, settings
from hypothesis import strategies as st

from mcl import pipeline
from mcl.codegen.host_eval import evaluate
from mcl.diagnostics import MclError
from mcl.interp import run_function
from mcl.mcpl import ast
from mcl.mcpl.evaluate import Evaluator, NotEvaluable
from mcl.mcpl.intervals import Interval, IntervalValues
from mcl.mcpl.parse import parse_source
from mcl.mcpl.symbolic_values import SymPyValues, trunc

from .support import generate, library, load, run

INT_VARS = ("i0", "i1", "i2")
FLOAT_VARS = ("f0", "f1", "f2")
INT_OPS = ("+", "-", "*", "/", "%", "^", "<<", ">>", "&", "|")
FLOAT_OPS = ("+", "-", "*", "/", "^")  # `%` is an int operator in MCPL
COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")
BATCH = 24


@dataclass(frozen=True)
class Expr:
    text: str
    kind: str  # "int", "float" or "bool"


def _binary(parts: tuple[Expr, str, Expr]) -> Expr:
    a, op, b = parts
    return Expr(f"({a.text} {op} {b.text})", "float" if "float" in (a.kind, b.kind) else "int")


def _grow(ops: tuple[str, ...]) -> object:
    def extend(sub: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
        negated = sub.map(lambda e: Expr(f"(-{e.text})", e.kind))
        return st.one_of(st.tuples(sub, st.sampled_from(ops), sub).map(_binary), negated)

    return extend


INT_LEAF = st.one_of(
    # Small ints, so that powers and shifts often stay in range and negative exponents
    # (1 / a^|b| truncated) come up; up to 31 for shift counts.
    st.sampled_from(INT_VARS), st.integers(-4, 31).map(lambda v: f"({v})")
).map(lambda t: Expr(t, "int"))
FLOAT_LEAF = st.one_of(
    st.sampled_from(FLOAT_VARS), st.integers(-16, 16).map(lambda v: f"({v / 4!r})")
).map(lambda t: Expr(t, "float"))
INT_EXPR = st.recursive(INT_LEAF, _grow(INT_OPS), max_leaves=5)  # type: ignore[arg-type]
# Int operands inside float expressions: the usual arithmetic conversions.
FLOAT_EXPR = st.recursive(st.one_of(FLOAT_LEAF, INT_EXPR), _grow(FLOAT_OPS), max_leaves=5)  # type: ignore[arg-type]
ARITHMETIC = st.one_of(INT_EXPR, FLOAT_EXPR)
# A comparison is a bool, which MCPL does not convert to a number: it decides an `if`.
COMPARISON = st.tuples(ARITHMETIC, st.sampled_from(COMPARISONS), ARITHMETIC).map(
    lambda p: Expr(f"{p[0].text} {p[1]} {p[2].text}", "bool")
)
EXPRESSIONS = st.one_of(ARITHMETIC, ARITHMETIC, ARITHMETIC, COMPARISON)

# The decisions of docs/mcpl.md §6.1, always among the examples (random ones rarely hit
# a negative int exponent without overflowing elsewhere).
EDGES = [
    Expr(t, k)
    for t, k in [
        ("(i0 ^ (-1))", "int"), ("((-1) ^ (-3))", "int"), ("(1 ^ (-2))", "int"),
        ("(i1 ^ (-2))", "int"), ("(i0 ^ 3)", "int"), ("((-7) / 2)", "int"),
        ("((-7) % 2)", "int"), ("(7 % (-2))", "int"), ("(i1 / i0)", "int"),
        ("(i1 % i0)", "int"), ("((-8) >> 1)", "int"), ("(i1 >> 2)", "int"),
        ("(1 << 30)", "int"), ("(i0 << 28)", "int"), ("(i1 & i0)", "int"),
        ("(i1 | i2)", "int"), ("(2.0 ^ (-1))", "float"), ("(f0 ^ i0)", "float"),
        ("(f1 ^ 0.5)", "float"), ("(i1 / 2.0)", "float"), ("(f1 / 0.0)", "float"),
        ("(i0 < f0)", "bool"), ("(i1 == f1)", "bool"), ("(2147483647 + i2)", "int"),
    ]
]
VALUES = st.tuples(
    st.tuples(*(st.integers(-12, 12) for _ in INT_VARS)),
    st.tuples(*(st.integers(-40, 40).map(lambda v: v / 4) for _ in FLOAT_VARS)),
)


def _module(exprs: list[Expr]) -> str:
    params = ", ".join(
        [f"int {v}" for v in INT_VARS]
        + [f"float {v}" for v in FLOAT_VARS]
        + [f"main int[{BATCH}] ri", f"main float[{BATCH}] rf"]
    )
    lines = [
        f"    if ({e.text}) {{ ri[{k}] = 1; }} else {{ ri[{k}] = 2; }}"
        if e.kind == "bool"
        else f"    {'rf' if e.kind == 'float' else 'ri'}[{k}] = {e.text};"
        for k, e in enumerate(exprs)
    ]
    body = "\n".join(lines)
    return (
        f"x86_avx512 void agree({params}) {{\n  foreach (int t in 1 threads) {{\n"
        f"  foreach (int v in 1 vectors) {{\n{body}\n  }}\n  }}\n}}\n"
    )


def _statements(module: ast.Module) -> tuple[ast.Function, ast.Foreach]:
    """The function and its inner foreach, whose body holds the statements."""
    function = module.functions[0]
    outer = function.body.stmts[0]
    assert isinstance(outer, ast.Foreach) and isinstance(outer.body, ast.Block)
    loop = outer.body.stmts[0]
    assert isinstance(loop, ast.Foreach) and isinstance(loop.body, ast.Block)
    return function, loop


def _interpret(module: ast.Module, k: int, env: dict[str, object]) -> object:
    """The interpreter's value of the k-th statement's expression alone (so that one
    undefined expression does not hide the others), or the MclError it reports."""
    function, loop = _statements(module)
    stmt = loop.body.stmts[k]  # type: ignore[attr-defined]
    outer = function.body.stmts[0]
    alone = replace(outer, body=ast.Block((replace(loop, body=ast.Block((stmt,))),)))
    single = replace(module, functions=(replace(function, body=ast.Block((alone,))),))
    ri, rf = np.zeros(BATCH, np.int32), np.zeros(BATCH, np.float32)
    try:
        run_function(pipeline.check(single, library()), "agree", {**env, "ri": ri, "rf": rf},
                     library())
    except MclError as exc:
        return exc
    if isinstance(stmt, ast.If):
        return bool(ri[k] == 1)
    assert isinstance(stmt, ast.Assign) and isinstance(stmt.target, ast.Index)
    return (ri if stmt.target.base == ast.Name("ri") else rf)[k]


def _host(module: ast.Module, k: int, env: dict[str, object]) -> object:
    stmt = _statements(module)[1].body.stmts[k]  # type: ignore[attr-defined]
    value = stmt.cond if isinstance(stmt, ast.If) else stmt.value
    try:
        return evaluate(value, dict(env))  # type: ignore[arg-type]
    except MclError as exc:
        return exc


def _same(a: object, b: object) -> bool:
    return bool(np.isclose(np.float32(a), np.float32(b), rtol=2e-6, atol=1e-30, equal_nan=True))


@seed(18)
@settings(
    max_examples=8,
    deadline=None,
    # Shrinking would recompile the kernel hundreds of times; the failure message names
    # the expression and its values already.
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@example(exprs=EDGES, values=((3, -7, 0), (1.25, -2.5, 0.0)))
@given(exprs=st.lists(EXPRESSIONS, min_size=BATCH, max_size=BATCH), values=VALUES)
def test_interpreter_host_evaluation_and_opencl_agree(
    tmp_path: Path, exprs: list[Expr], values: tuple[tuple[int, ...], tuple[float, ...]]
) -> None:
    env: dict[str, object] = {v: x for v, x in zip(INT_VARS, values[0], strict=True)}
    env.update({v: np.float32(x) for v, x in zip(FLOAT_VARS, values[1], strict=True)})
    module = parse_source(_module(exprs), "agree.mcpl")
    interpreted = [_interpret(module, k, env) for k in range(len(exprs))]
    hosted = [_host(module, k, env) for k in range(len(exprs))]
    for e, i, h in zip(exprs, interpreted, hosted, strict=True):
        if isinstance(i, MclError):  # undefined in MCPL: an error on the host too
            assert isinstance(h, MclError), (e.text, i, h)
        elif isinstance(h, MclError):  # an inf or NaN on the way is an error in a size
            assert "not a finite number" in str(h), (e.text, i, h)
        else:
            assert _same(i, h), (e.text, i, h)
    defined = [(k, e) for k, e in enumerate(exprs) if not isinstance(interpreted[k], MclError)]
    kernel = _module([e for _, e in defined])
    generated = generate(load(tmp_path, kernel), "x86_avx512")
    args = {**env, "ri": np.zeros(BATCH, np.int32), "rf": np.zeros(BATCH, np.float32)}
    out = run(generated, "agree", args)
    for slot, (k, e) in enumerate(defined):
        device = out["rf" if e.kind == "float" else "ri"][slot]
        if e.kind == "bool":
            device = device == 1
        assert _same(device, interpreted[k]), (e.text, device, interpreted[k], kernel)


# ----------------------------------------------------------------------------- domains
# The other domains of `mcl.mcpl.evaluate` against C semantics (`CValues`, which the test
# above ties to the interpreter and the device). SymPy's values are checked twice: with
# numbers for the names (a constant expression), and as expressions in symbols of unknown
# sign that get the numbers afterwards, as a figure gets the user's sizes.

INT_SYMBOLS = {v: sympy.Symbol(v, integer=True) for v in INT_VARS}
FLOAT_SYMBOLS = {v: sympy.Symbol(v, real=True) for v in FLOAT_VARS}


class _Names(Evaluator[Any, dict[str, Any]]):
    def name(self, e: ast.Name, env: dict[str, Any]) -> Any:
        return env[e.name]


_SYMPY = _Names(SymPyValues())

# Floating arguments of `toInt`: few small quarter-valued leaves, so that float32 computes
# them exactly (or far from an integer) and truncation cannot tell float32 from SymPy's
# exact arithmetic.
EXACT_FLOAT = st.recursive(FLOAT_LEAF, _grow(("+", "-", "*", "/")), max_leaves=3)  # type: ignore[arg-type]
TO_INT = EXACT_FLOAT.map(lambda e: Expr(f"toInt({e.text})", "int"))
INT_WITH_CONVERSIONS = st.recursive(
    st.one_of(INT_LEAF, TO_INT), _grow(INT_OPS), max_leaves=5  # type: ignore[arg-type]
)
SYMBOLIC_EXPRESSIONS = st.one_of(
    INT_WITH_CONVERSIONS,
    st.tuples(INT_WITH_CONVERSIONS, st.sampled_from(COMPARISONS), INT_WITH_CONVERSIONS).map(
        lambda p: Expr(f"{p[0].text} {p[1]} {p[2].text}", "bool")
    ),
)
# The four disagreements SymPy's floor and Mod had with C (docs/mcpl.md §6.1), as
# constants and with operands of unknown sign.
SYMPY_EDGES = [
    "((-7) / 2)", "((-7) % 2)", "(2 ^ (-1))", "toInt((-1.5))", "(i1 / i0)", "(i1 % i0)",
    "(i0 ^ i2)", "toInt((f1 / f0))", "(7 % (-2))", "((-8) >> 1)", "(i1 >> 2)",
]


def _parsed(expr: Expr) -> ast.Expr:
    stmt = _statements(parse_source(_module([expr]), "agree.mcpl"))[1].body.stmts[0]  # type: ignore[attr-defined]
    return stmt.cond if isinstance(stmt, ast.If) else stmt.value  # type: ignore[no-any-return]


def _number(value: Any) -> Any:
    """A SymPy number for a C value (a bool from a comparison stays a bool)."""
    if isinstance(value, bool | np.bool_):
        return bool(value)
    return sympy.Integer(int(value)) if isinstance(value, int) else sympy.Float(float(value))


def _agrees(symbolic: Any, c_value: Any) -> bool:
    if isinstance(c_value, bool | np.bool_):
        return symbolic in (sympy.true, sympy.false) and bool(symbolic) == bool(c_value)
    return bool(symbolic.is_Integer) and int(symbolic) == int(c_value)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(text="((-7) / 2)", values=((3, -7, 0), (1.25, -2.5, 0.0)))
@example(text="((-7) % 2)", values=((3, -7, 0), (1.25, -2.5, 0.0)))
@example(text="(2 ^ (-1))", values=((3, -7, 0), (1.25, -2.5, 0.0)))
@example(text="toInt((-1.5))", values=((3, -7, 0), (1.25, -2.5, 0.0)))
@example(text="(i1 / i0)", values=((2, -7, -1), (1.25, -2.5, 0.0)))
@example(text="(i1 % i0)", values=((2, -7, -1), (1.25, -2.5, 0.0)))
@example(text="(i0 ^ i2)", values=((2, -7, -1), (1.25, -2.5, 0.0)))
@example(text="toInt((f1 / f0))", values=((2, -7, -1), (1.0, -1.5, 0.0)))
@given(text=st.one_of(st.sampled_from(SYMPY_EDGES), SYMBOLIC_EXPRESSIONS.map(lambda e: e.text)),
       values=VALUES)
def test_sympy_domain_agrees_with_c_semantics(
    text: str, values: tuple[tuple[int, ...], tuple[float, ...]]
) -> None:
    expr = _parsed(Expr(text, "bool" if any(c in text for c in "<>=!") and
                        not any(s in text for s in ("<<", ">>")) else "int"))
    env: dict[str, Any] = {v: x for v, x in zip(INT_VARS, values[0], strict=True)}
    env.update({v: np.float32(x) for v, x in zip(FLOAT_VARS, values[1], strict=True)})
    try:
        c_value = evaluate(expr, dict(env))
    except MclError:
        return  # MCPL defines no value (overflow, division by zero, a shift past 31)
    numbers = {k: _number(v) for k, v in env.items()}
    constant = _SYMPY.value(expr, numbers)
    assert _agrees(constant, c_value), (text, env, constant, c_value)
    try:
        symbolic = _SYMPY.value(expr, {**INT_SYMBOLS, **FLOAT_SYMBOLS})
    except NotEvaluable:
        # No symbolic value (`&` of symbols, a shift by a count of unknown sign): the
        # feedback makes it an opaque symbol, an unknown, never a wrong figure.
        assert any(op in text for op in ("&", "|", "<<", ">>")), text
        return
    point = {INT_SYMBOLS[k]: numbers[k] for k in INT_VARS}
    point.update({FLOAT_SYMBOLS[k]: numbers[k] for k in FLOAT_VARS})
    substituted = symbolic.xreplace(point)
    assert _agrees(substituted, c_value), (text, env, symbolic, substituted, c_value)


def test_sympy_domain_keeps_simple_forms_for_sizes() -> None:
    """Where the kernel's sizes (positive integers) make the signs known, C's truncation is
    SymPy's floor and Mod, and the figures read as before: the usual non-negative index
    expressions do not grow a `trunc`."""
    n = sympy.Symbol("n", integer=True, positive=True)
    i = sympy.Symbol("i", integer=True)

    def value(text: str) -> Any:  # i0 is the size n
        return _SYMPY.value(_parsed(Expr(text, "int")), {"i0": n})

    assert value("(i0 - 1) / 2") == sympy.floor((n - 1) / 2)
    assert value("(i0 + 31) / 32") == sympy.ceiling(n / 32)
    assert value("i0 % 4") == sympy.Mod(n, 4)
    assert value("toInt(toFloat(i0) / 2.0)") == sympy.floor(n / 2.0)
    # A sign not known: C's truncation stays explicit.
    unknown = _SYMPY.value(_parsed(Expr("(i0 / 2)", "int")), {"i0": i})
    assert unknown == trunc(i / 2) and unknown.xreplace({i: -7}) == -3


class _Boxes(Evaluator[Interval, dict[str, Interval]]):
    def name(self, e: ast.Name, env: dict[str, Interval]) -> Interval:
        return env[e.name]


_INTERVALS = _Boxes(IntervalValues())
# How far each name's interval reaches below and above its value (quarters for floats).
REACH = st.tuples(*(st.tuples(st.integers(0, 6), st.integers(0, 6))
                    for _ in INT_VARS + FLOAT_VARS))


def _boxes(env: dict[str, Any], reach: tuple[tuple[int, int], ...]) -> dict[str, Interval]:
    boxes = {}
    for (name, value), (below, above) in zip(env.items(), reach, strict=True):
        if name in INT_VARS:
            boxes[name] = Interval(value - below, value + above)
        else:
            boxes[name] = Interval(float(value) - below / 4, float(value) + above / 4, "float")
    return boxes


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(text="(i1 / i0)", values=((2, -7, -1), (1.25, -2.5, 0.0)), reach=((0, 0),) * 6)
@example(text="(i1 % i0)", values=((2, -7, -1), (1.25, -2.5, 0.0)), reach=((1, 2),) * 6)
@example(text="(i0 ^ i2)", values=((2, -7, -1), (1.25, -2.5, 0.0)), reach=((0, 3),) * 6)
@example(text="(i1 ^ i0)", values=((2, -3, 0), (1.25, -2.5, 0.0)), reach=((1, 1),) * 6)
@example(text="toInt((f1 / f0))", values=((2, -7, -1), (1.0, -1.5, 0.0)), reach=((2, 1),) * 6)
@given(text=st.one_of(st.sampled_from(SYMPY_EDGES), SYMBOLIC_EXPRESSIONS.map(lambda e: e.text),
                      ARITHMETIC.map(lambda e: e.text)),
       values=VALUES, reach=REACH)
def test_interval_domain_contains_c_values(
    text: str, values: tuple[tuple[int, ...], tuple[float, ...]],
    reach: tuple[tuple[int, int], ...],
) -> None:
    """The C value at a point of the names' intervals lies in the expression's interval;
    with single values for the names (a constant) an int expression's interval is the one
    value, and there is always one."""
    comparison = any(c in text.replace("<<", "").replace(">>", "") for c in "<>=!")
    expr = _parsed(Expr(text, "bool" if comparison else "int"))
    env: dict[str, Any] = {v: x for v, x in zip(INT_VARS, values[0], strict=True)}
    env.update({v: np.float32(x) for v, x in zip(FLOAT_VARS, values[1], strict=True)})
    try:
        c_value = evaluate(expr, dict(env))
    except MclError:
        return  # MCPL defines no value here
    point = _INTERVALS.value(expr, _boxes(env, ((0, 0),) * len(reach)))
    number = float(c_value) if point.kind == "float" else int(c_value)
    assert number in point, (text, env, point, c_value)
    if point.kind == "int" and "toInt" not in text:
        assert point.lo == point.hi == number, (text, env, point, c_value)
    try:
        box = _INTERVALS.value(expr, _boxes(env, reach))
    except NotEvaluable:
        return  # no range given (an operation undefined somewhere in the box): no claim
    assert number in box, (text, env, reach, box, c_value)
