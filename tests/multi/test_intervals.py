"""Interval bounds of index expressions (mcl.multi.intervals) against brute force: every
value the expression takes over small ranges of its variables lies inside the bound, and
the bound is reached where the expression is monotone."""

from __future__ import annotations

import itertools

import pytest

from mcl.mcpl import ast
from mcl.mcpl.operators import int_binary
from mcl.multi.intervals import IndexInterval, interval_of

NI, NJ = ast.Name("i"), ast.Name("j")


def lit(v: int) -> ast.IntLit:
    return ast.IntLit(v)


def b(op: str, left: ast.Expr, right: ast.Expr) -> ast.Binary:
    return ast.Binary(op, left, right)


def value(e: ast.Expr, env: dict[str, int]) -> int:
    """C's value of `e` at `env` (the operators' one definition)."""
    if isinstance(e, ast.IntLit):
        return e.value
    if isinstance(e, ast.Name):
        return env[e.name]
    if isinstance(e, ast.Unary):
        return -value(e.operand, env)
    if isinstance(e, ast.Call):
        args = [value(a, env) for a in e.args]
        return min(args) if e.func == "min" else max(args)
    assert isinstance(e, ast.Binary)
    return int(int_binary(e.op, value(e.left, env), value(e.right, env)))


EXPRESSIONS = [
    b("+", b("*", NI, lit(128)), NJ),  # a block's rows: bi * TILE + ti
    b("/", b("+", b("*", NI, lit(7)), NJ), lit(5)),
    b("%", b("+", b("*", NI, lit(7)), NJ), lit(5)),
    b("-", NJ, b("*", NI, lit(3))),
    b("/", b("-", NJ, lit(9)), lit(4)),  # a negative numerator: C truncates towards zero
    b("%", b("-", NJ, lit(9)), lit(4)),
    ast.Unary("-", b("*", NI, NJ)),
    ast.Call("min", (b("+", NI, lit(2)), b("*", NJ, lit(2)))),
    ast.Call("max", (NI, b("-", NJ, lit(5)))),
    b("*", b("-", NI, lit(2)), b("-", NJ, lit(3))),
]


@pytest.mark.parametrize("expr", EXPRESSIONS, ids=range(len(EXPRESSIONS)))
@pytest.mark.parametrize("ranges", [((0, 3), (0, 7)), ((2, 5), (1, 12)), ((4, 4), (0, 0))])
def test_bound_holds_every_value(expr: ast.Expr, ranges: tuple[tuple[int, int], ...]) -> None:
    (ilo, ihi), (jlo, jhi) = ranges
    bound = interval_of(expr, {"i": IndexInterval(ilo, ihi), "j": IndexInterval(jlo, jhi)})
    assert bound is not None
    values = [value(expr, {"i": i, "j": j})
              for i, j in itertools.product(range(ilo, ihi + 1), range(jlo, jhi + 1))]
    assert bound.lo <= min(values) and max(values) <= bound.hi


def test_affine_bounds_are_exact() -> None:
    """Rows of a block (bi * 128 + t) are bounded exactly: a range is given no extra row."""
    expr = EXPRESSIONS[0]
    bound = interval_of(expr, {"i": IndexInterval(2, 4), "j": IndexInterval(0, 127)})
    assert bound == IndexInterval(2 * 128, 4 * 128 + 127)


def test_unknown_without_an_integer_interval() -> None:
    assert interval_of(b("+", NI, ast.Name("data")), {"i": IndexInterval(0, 3)}) is None
    assert interval_of(ast.Index(ast.Name("a"), (NI,)), {"i": IndexInterval(0, 3)}) is None


def test_a_divisor_that_may_be_zero_bounds_the_defined_quotients() -> None:
    """i / j is undefined at j = 0 (C); the bound covers every quotient that is defined."""
    bound = interval_of(b("/", NI, NJ), {"i": IndexInterval(-3, 3), "j": IndexInterval(-1, 1)})
    assert bound is not None
    values = [int(int_binary("/", i, j)) for i in range(-3, 4) for j in (-1, 1)]
    assert bound.lo <= min(values) and max(values) <= bound.hi
    assert interval_of(b("/", NI, NJ), {"i": IndexInterval(0, 3), "j": IndexInterval(0, 0)}) is None
