"""A figure's formula is printed once per process (mcl.feedback.messages.formula_text):
the text must be `str` of that very formula, also where formulas that print differently
hash alike (numbers of different types or precisions, symbols with other assumptions)."""

from __future__ import annotations

from typing import Any

import pytest
import sympy

from mcl.feedback.messages import Value, formula_text

n = sympy.Symbol("n", integer=True, positive=True)
alike = [
    [1, 1.0, True, sympy.Integer(1), sympy.Float(1.0), sympy.Float(1.0, 4)],
    [sympy.Float(0.1, 4), sympy.Float(0.1, 15), sympy.Rational(1, 10)],
    [n + 2, n + sympy.Float(2.0), sympy.Symbol("n") + 2, sympy.Dummy("n") + 2],
    [sympy.Min(n, 8), sympy.Min(8, n), sympy.ceiling(n / 8), 2 * n + 2],
    [sympy.Matrix([[1, n]]), sympy.ImmutableMatrix([[1, n]])],  # the first has no hash
]


@pytest.mark.parametrize("group", alike)
def test_the_text_is_the_formula_printed_whatever_came_before(group: list[Any]) -> None:
    for _ in range(2):  # the second round is answered from the cache
        for expr in group:
            assert formula_text(expr) == str(expr)
            assert Value(expr).text == str(expr)


def test_an_equal_formula_built_again_gives_the_kept_text() -> None:
    first = sympy.expand((n + 1) * (n + 3))
    assert formula_text(first) == str(first)
    again = sympy.Add(*reversed(first.args), evaluate=True)
    assert again == first
    assert formula_text(again) == str(first) == str(again)


def test_the_least_bound_is_min_of_those_very_bounds() -> None:
    """`counting.least`, kept per process like the printed text: equal bounds, the same
    least; bounds that differ only in a number's type or precision are other bounds."""
    from mcl.feedback.facts.counting import least

    m = sympy.Symbol("m", integer=True, positive=True)
    for bounds in [(n * m, n + m - 1), (n + sympy.Float(2.0), n + 2), (n + 2, n + 3),
                   (sympy.Float(0.1, 4) * n, sympy.Float(0.1, 15) * n)]:
        for _ in range(2):
            assert least(*bounds) == sympy.Min(*bounds)
            assert str(least(*bounds)) == str(sympy.Min(*bounds))
