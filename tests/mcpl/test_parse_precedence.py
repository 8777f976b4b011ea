"""Operator precedence and associativity (mcpl.md §4; `ast.BINARY_PRECEDENCE`)."""

from __future__ import annotations

import pytest

from mcl.diagnostics import MclError
from mcl.mcpl import ast as A
from mcl.mcpl.parse import parse_source


def expr(src: str) -> A.Expr:
    m = parse_source(f"perfect void f() {{ x = {src}; }}")
    return m.functions[0].body.stmts[0].value


# Each pair: source without parentheses, and the same with the parenthesisation the
# precedence table implies. The fully parenthesised form cannot be misread.
SAME = [
    ("a || b && c", "a || (b && c)"),
    ("a && b | c", "a && (b | c)"),
    ("a | b & c", "a | (b & c)"),
    ("a & b == c", "a & (b == c)"),
    ("a == b < c", "a == (b < c)"),
    ("a < b == c < d", "(a < b) == (c < d)"),
    ("a != b <= c", "a != (b <= c)"),
    ("a < b << c", "a < (b << c)"),
    ("a << b + c", "a << (b + c)"),
    ("a >> b - c", "a >> (b - c)"),
    ("a + b * c", "a + (b * c)"),
    ("a - b % c", "a - (b % c)"),
    ("a - b - c", "(a - b) - c"),
    ("a / b / c", "(a / b) / c"),
    ("a % b * c", "(a % b) * c"),
    ("a << b << c", "(a << b) << c"),
    ("a || b || c", "(a || b) || c"),
    ("-a * b", "(-a) * b"),
    ("!a && b", "(!a) && b"),
    ("-a ^ 2", "(-a) ^ 2"),
    ("!a ^ b", "(!a) ^ b"),
    ("a ^ -b ^ c", "a ^ ((-b) ^ c)"),
    ("-a ^ b ^ c", "(-a) ^ (b ^ c)"),
    ("a ^ b ^ c", "a ^ (b ^ c)"),
    ("a ^ -b", "a ^ (-b)"),
    ("a ^ -b * c", "(a ^ (-b)) * c"),
    ("a * b ^ c", "a * (b ^ c)"),
    ("!a == b", "(!a) == b"),
    ("- -a", "-(-a)"),
    ("a[i] ^ f(x).y", "(a[i]) ^ (f(x).y)"),
    ("a + b * c ^ d - e", "(a + (b * (c ^ d))) - e"),
]


@pytest.mark.parametrize(("plain", "grouped"), SAME, ids=[p for p, _ in SAME])
def test_precedence(plain: str, grouped: str) -> None:
    assert expr(plain) == expr(grouped)


def test_power_is_right_associative_and_unary_minus_binds_tighter() -> None:
    # As in the original MCL and C: unary operators bind tighter than every binary one.
    assert expr("a ^ b ^ c") == A.Binary("^", A.Name("a"), A.Binary("^", A.Name("b"), A.Name("c")))
    assert expr("-a ^ 2") == A.Binary("^", A.Unary("-", A.Name("a")), A.IntLit(2))
    assert expr("-(a ^ 2)") == A.Unary("-", A.Binary("^", A.Name("a"), A.IntLit(2)))
    assert expr("-2 ^ 2") == A.Binary("^", A.IntLit(-2), A.IntLit(2))


def test_the_table_matches_the_parser() -> None:
    # For every pair of operators, `a op1 b op2 c` groups by the shared table.
    ops = [op for op in A.BINARY_PRECEDENCE if op != "^"]
    prec = A.BINARY_PRECEDENCE
    for op1 in ops:
        for op2 in ops:
            if prec[op1] == prec[op2] and op1 in A.NON_ASSOCIATIVE:
                continue  # comparisons do not chain; tested below
            e = expr(f"a {op1} b {op2} c")
            if prec[op1] >= prec[op2]:
                assert e.op == op2 and e.left.op == op1, (op1, op2)
            else:
                assert e.op == op1 and e.right.op == op2, (op1, op2)


@pytest.mark.parametrize("src", ["a < b < c", "a == b != c", "a <= b > c", "a < b + 1 >= c"])
def test_comparisons_do_not_chain(src: str) -> None:
    with pytest.raises(MclError) as exc:
        expr(src)
    (d,) = exc.value.diagnostics
    assert d.code == "mcpl-syntax"
    assert d.message.startswith("comparisons do not chain")
    assert "&&" in d.hint
    # The diagnostic points at the second comparison operator.
    line = f"perfect void f() {{ x = {src}; }}"
    second = line.rindex(d.message.split("`")[3])
    assert d.span.column == second + 1


def test_parenthesised_comparisons_may_be_compared() -> None:
    assert expr("(a < b) == (c < d)").op == "=="
    assert expr("(a == b) == c").left.op == "=="
