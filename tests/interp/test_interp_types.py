"""The interpreter computes an operator or a built-in in the type the checker gives it:
one rule for both, C's usual arithmetic conversions with the integer promotions
(`mcl.mcpl.types.arithmetic`, docs/mcpl.md "Types and conversions"): a byte computes as
an int, as OpenCL's uchar does."""

from __future__ import annotations

from itertools import product

from interp_helpers import library, parse

from mcl import pipeline
from mcl.interp.compile_expr import ExprCompiler
from mcl.interp.engine import Engine
from mcl.mcpl import ast
from mcl.mcpl import types as T

NUMBERS = {"byte": "b", "int": "i", "float": "x", "double": "d"}
INTEGRAL = ("byte", "int")


def _expressions() -> list[str]:
    found = []
    for (lt, ln), (rt, rn) in product(NUMBERS.items(), repeat=2):
        found += [f"{ln} {op} {rn}" for op in ("+", "-", "*", "/")]
        found += [f"min({ln}, {rn})", f"max({ln}, {rn})", f"pow({ln}, {rn})"]
        if lt in INTEGRAL and rt in INTEGRAL:
            found += [f"{ln} {op} {rn}" for op in ("%", "&", "|", "<<")]
    for name in NUMBERS.values():
        found += [f"-{name}", f"abs({name})", f"sqrt({name})", f"toInt({name})"]
    return found


def test_the_interpreter_types_each_operator_and_builtin_as_the_checker() -> None:
    exprs = _expressions()
    body = "\n".join(f"  double r{k} = {e};" for k, e in enumerate(exprs))
    source = f"perfect void f(byte b, int i, float x, double d) {{\n{body}\n}}\n"
    checked = pipeline.check(parse(source), library())
    assert not checked.errors, checked.errors
    function = checked.main.functions[0]
    compiler = ExprCompiler(Engine(checked, library()), function)
    for p in function.params:
        compiler.declare(p)
    seen: dict[str, T.VType] = {}
    for text, stmt in zip(exprs, function.body.stmts, strict=True):
        assert isinstance(stmt, ast.Decl) and stmt.init is not None
        checker = checked.type_of(stmt.init)
        assert compiler.expr(stmt.init).type == checker, text
        seen[text] = checker
    # The rule itself: a byte computes as an int (C's integer promotions).
    assert seen["b + b"] == seen["b % b"] == seen["-b"] == seen["abs(b)"] == T.INT
    assert seen["min(b, b)"] == seen["b << i"] == T.INT
    assert seen["b * x"] == T.FLOAT and seen["i / d"] == T.DOUBLE
