"""The numeric value of a figure's formula (mcl.feedback.facts.sums) is compiled once per
formula, whatever its symbols are called: the editor analyses a kernel again at every
edit with new counters and stand-ins, and the same formulas come back under new names
(docs/feedback.md, "Speed")."""

from __future__ import annotations

import sympy

from mcl.feedback.facts import sums


def test_a_formula_under_new_names_is_compiled_once_and_gives_the_same_numbers() -> None:
    sums._COMPILED.clear()
    i1, n1 = sympy.Symbol("i_1", integer=True), sympy.Symbol("n", integer=True)
    i2 = sympy.Symbol("i_2", integer=True)
    first = sympy.floor((3 * i1 + 1) / n1) + i1 ** 2
    again = first.xreplace({i1: i2})
    values = {n1: 7}
    for i in range(5):
        got, _ = sums.sum_number(first, {**values, i1: i})
        same, _ = sums.sum_number(again, {**values, i2: i})
        assert got == same == (3 * i + 1) // 7 + i * i
    assert len(sums._COMPILED) == 1


def test_symbols_with_other_assumptions_are_other_formulas() -> None:
    sums._COMPILED.clear()
    real, whole = sympy.Symbol("x", real=True), sympy.Symbol("y", integer=True)
    a, _ = sums.sum_number(sympy.floor(real) + 1, {real: 2.5})
    b, _ = sums.sum_number(sympy.floor(whole) + 1, {whole: 2})
    assert (a, b) == (3, 3)
    assert len(sums._COMPILED) == 2
