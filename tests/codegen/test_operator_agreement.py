"""Differential test of MCPL's operator semantics (`mcl.mcpl.operators`): random int and
float expressions give the same value in the reference interpreter, in host evaluation
(`mcl.codegen.host_eval`, what the generated host computes for sizes) and in the
generated OpenCL run on the PoCL device.

Each example is a batch of expressions compiled into one kernel, so the OpenCL compiler
runs once per example. An expression MCPL leaves undefined (int overflow, a shift count
outside 0..31, division by zero) must be an error in both Python evaluators; the device
may compute anything for it, so it is not compared there."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, Phase, example, given, seed, settings
from hypothesis import strategies as st

from mcl.codegen.host_eval import evaluate
from mcl.diagnostics import MclError
from mcl.interp import run_function
from mcl.mcpl import ast
from mcl.mcpl.parse import parse_source

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
        run_function(single, "agree", {**env, "ri": ri, "rf": rf}, library())
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
