"""mcl.mcpl.rounding gives what SymPy's floor and ceiling give, object for object."""

from __future__ import annotations

import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from mcl.mcpl import rounding

_SYMBOLS = [sympy.Symbol("m", integer=True, positive=True),
            sympy.Symbol("iters_k", integer=True, nonnegative=True),
            sympy.Symbol("x", real=True), sympy.Symbol("e", integer=True, even=True),
            sympy.Symbol("z", integer=True, nonpositive=True), sympy.Symbol("u")]
_RATIONALS = st.builds(sympy.Rational, st.integers(-70, 70), st.integers(1, 70))


def _same(a: object, b: object) -> bool:
    return a == b and type(a) is type(b) and sympy.srepr(a) == sympy.srepr(b)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(_SYMBOLS), _RATIONALS, _RATIONALS, st.integers(0, 3))
def test_same_as_sympy(symbol: sympy.Symbol, r: sympy.Rational, c: sympy.Rational,
                       shape: int) -> None:
    x = [symbol, r * symbol, r * symbol + c, r][shape]
    for ours, theirs in ((rounding.ceiling, sympy.ceiling), (rounding.floor, sympy.floor)):
        assert _same(ours(x), theirs(x)), (x, ours(x), theirs(x))


def test_shortcut_taken_for_sizes_only() -> None:
    m, even = _SYMBOLS[0], _SYMBOLS[3]
    assert rounding._known(sympy.ceiling, m / 1024) is not None
    assert rounding._known(sympy.floor, m) is m
    assert rounding._known(sympy.ceiling, even / 2) is None  # SymPy knows even/2 is whole
    assert rounding._known(sympy.ceiling, -m / 4) is None
    assert rounding._known(sympy.ceiling, m / 4 + 1) is None
    assert rounding.ceiling(even / 2) == even / 2
