"""The numeric value of a figure's formula (mcl.feedback.facts.sums) is compiled once per
formula, whatever its symbols are called: the editor analyses a kernel again at every
edit with new counters and stand-ins, and the same formulas come back under new names
(docs/feedback.md, "Speed"). The number of a formula at given values is kept too."""

from __future__ import annotations

import sympy

from mcl.feedback.facts import sums


def test_a_formula_under_new_names_is_compiled_once_and_gives_the_same_numbers() -> None:
    sums._COMPILED.store.clear()
    sums._NUMBERS.clear()
    i1, n1 = sympy.Symbol("i_1", integer=True), sympy.Symbol("n", integer=True)
    i2 = sympy.Symbol("i_2", integer=True)
    first = sympy.floor((3 * i1 + 1) / n1) + i1 ** 2
    again = first.xreplace({i1: i2})
    values = {n1: 7}
    for i in range(5):
        got, _ = sums.sum_number(first, {**values, i1: i})
        same, _ = sums.sum_number(again, {**values, i2: i})
        assert got == same == (3 * i + 1) // 7 + i * i
    assert len(sums._COMPILED.store) == 1


def test_symbols_with_other_assumptions_are_other_formulas() -> None:
    sums._COMPILED.store.clear()
    sums._NUMBERS.clear()
    real, whole = sympy.Symbol("x", real=True), sympy.Symbol("y", integer=True)
    a, _ = sums.sum_number(sympy.floor(real) + 1, {real: 2.5})
    b, _ = sums.sum_number(sympy.floor(whole) + 1, {whole: 2})
    assert (a, b) == (3, 3)
    assert len(sums._COMPILED.store) == 2


def _figure() -> tuple[sympy.Expr, sympy.Symbol]:
    """A figure of gesummv hopper_v5's roofline: a `Min` of a sum."""
    n = sympy.Symbol("n", integer=True, positive=True)
    t = sympy.Symbol("t", integer=True, nonnegative=True)
    inner = sympy.Sum(32 * n * sympy.ceiling(-t / 256 + sympy.floor(n / 4) / 256), (t, 0, 31))
    return 4 * n + sympy.Min(4 * n, 8 * n**2 + 4 * inner), n


def test_a_figure_is_added_up_once_per_formula_and_values(monkeypatch) -> None:
    sums._NUMBERS.clear()
    computed = []
    number = sums._number
    monkeypatch.setattr(sums, "_number", lambda *a: computed.append(a) or number(*a))
    figure, n = _figure()
    # by hand: 4n + min(4n, 8n^2 + 4 * 32n * sum of the row's groups per step)
    def by_hand(size: int) -> int:
        steps = sum(-(-(size // 4 - t) // 256) for t in range(32))
        return 4 * size + min(4 * size, 8 * size * size + 128 * size * steps)
    assert sums.sum_number(figure, {n: 2048}) == (by_hand(2048), False)
    again, n_again = _figure()  # the next analysis builds the same formula anew
    assert sums.sum_number(again, {n_again: 2048}) == (by_hand(2048), False)
    assert len(computed) == 1
    # other values (and a formula with another symbol) are other numbers
    assert sums.sum_number(figure, {n: 100}) == (by_hand(100), False)
    assert len(computed) == 2
    # the same as without the store
    assert sums._number(figure, {n: 100.0}, sums.POINTS) == (by_hand(100), False)


def test_the_kept_numbers_are_bounded() -> None:
    sums._NUMBERS.clear()
    x = sympy.Symbol("x", integer=True)
    for k in range(3 * sums._NUMBERS.size):
        assert sums.sum_number(x + 1, {x: k}) == (k + 1, False)
        assert len(sums._NUMBERS) <= sums._NUMBERS.size
