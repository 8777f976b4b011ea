"""MCPL's operator semantics (docs/mcpl.md §6.1), one definition for every evaluator:
the decisions where C leaves a choice, seen through host evaluation and static counts
(the interpreter's view is tested in tests/interp, all three together on PoCL in
tests/codegen/test_operator_agreement.py)."""

from __future__ import annotations

import numpy as np
import pytest

from mcl.codegen.host_eval import evaluate
from mcl.diagnostics import MclError
from mcl.mcpl import ast
from mcl.mcpl import operators as ops
from mcl.mcpl.parse import parse_source
from mcl.translate.counts import StaticInts


def expr(text: str) -> ast.Expr:
    stmt = parse_source(f"perfect void f() {{ x = {text}; }}", "t.mcpl").functions[0].body.stmts[0]
    assert isinstance(stmt, ast.Assign)
    return stmt.value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("2 ^ -1", 0),  # int power: 1 / 2 truncated, not 0.5
        ("1 ^ -3", 1),
        ("(-1) ^ -3", -1),
        ("2 ^ 10", 1024),
        ("-7 / 2", -3),
        ("-7 % 2", -1),
        ("7 % -2", 1),
        ("-8 >> 1", -4),
        ("1 << 30", 1 << 30),
        ("2.0 ^ -1", 0.5),
        ("7 / 2.0", 3.5),
    ],
)
def test_host_evaluation_follows_the_shared_rules(text: str, value: float) -> None:
    assert evaluate(expr(text), {}) == value


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1 << 40", "shift count 40 is outside 0..31"),
        ("1 >> -1", "shift count -1 is outside 0..31"),
        ("1 << 31", "int overflow: 1 << 31 does not fit in 32 bits"),
        ("2147483647 + 1", "int overflow"),
        ("2 ^ 40", "int overflow"),
        ("-2147483647 - 1 - 1", "int overflow"),
        ("1 / 0", "division by zero"),
        ("0 ^ -1", "division by zero"),
        ("1.0 / 0.0", "not a finite number"),
        ("(0.0 - 8.0) ^ 0.5", "not a finite number"),
    ],
)
def test_undefined_operations_are_errors_on_the_host(text: str, message: str) -> None:
    with pytest.raises(MclError, match=message):
        evaluate(expr(text), {})


def test_float_literals_are_single_precision_on_the_host() -> None:
    # As in the interpreter and the generated code: 0.1 is the float nearest 0.1.
    assert evaluate(expr("0.1 + 0.2"), {}) == np.float32(0.1) + np.float32(0.2)
    assert isinstance(evaluate(expr("toDouble(1) / 3"), {}), np.float64)


@pytest.mark.parametrize(
    ("text", "value"),
    [("2 ^ -1", 0), ("1 << 4", 16), ("-7 / 2", -3), ("1 << 40", None), ("65536 * 65536", None),
     ("5 / 0", None), ("-(-2147483647 - 1)", None)],
)
def test_static_counts_use_the_same_rules(text: str, value: int | None) -> None:
    # An undefined count is unknown (None): the translation then keeps its guard.
    assert StaticInts({}, {}).value(expr(text)) == value


def test_binary_promotes_as_c() -> None:
    assert ops.binary("/", 7, 2) == 3
    assert isinstance(ops.binary("+", 1, np.float32(0.5)), np.float32)
    assert isinstance(ops.binary("+", np.float32(1), np.float64(0.5)), np.float64)
    assert ops.binary("<", 3, np.float32(3.5))
    with pytest.raises(ops.NotOnFloats):
        ops.binary("<<", np.float32(1), 2)
