"""Formulas compiled by position and the bounded store (mcl.feedback.facts.compiled): the
sums and the irregular analysis compile through one compiler, and what the feedback keeps
by formula for the process stays bounded (docs/feedback.md, "Speed")."""

from __future__ import annotations

import math

import sympy

from mcl.feedback.analyses import irregular
from mcl.feedback.facts import sums
from mcl.feedback.facts.compiled import Compiler, Store


def test_a_tuple_of_formulas_under_new_names_is_compiled_once() -> None:
    compiler = Compiler("math")
    i1, i2 = sympy.Dummy("t_i", integer=True), sympy.Dummy("t_i", integer=True)
    n = sympy.Symbol("n", integer=True, positive=True)
    first = compiler((i1, n), (i1 + n, sympy.floor(i1 / n)))
    again = compiler((i2, n), (i2 + n, sympy.floor(i2 / n)))
    assert first is again and len(compiler.store) == 1
    assert first(7, 3) == [10, 2]
    # an argument the formulas do not hold still takes its place
    assert compiler((i1, n), (n + 1,))(100, 3) == [4]
    # the same formula with symbols of other assumptions is another formula
    real = sympy.Symbol("x", real=True)
    assert compiler((real, n), (real + n, sympy.floor(real / n))) is not first


def test_one_expression_gives_one_result() -> None:
    compiler = Compiler([{"ceil": math.ceil}, "math"])
    x = sympy.Symbol("x", real=True)
    assert compiler((x,), sympy.ceiling(x) + 1)(2.5) == 4


def test_the_sums_and_the_irregular_analysis_compile_through_one_compiler() -> None:
    assert isinstance(sums._COMPILED, Compiler) and isinstance(irregular._COMPILED, Compiler)
    assert isinstance(sums._SUMS, Store) and isinstance(sums._NUMBERS, Store)


def test_a_store_is_emptied_when_full() -> None:
    store: Store[int, str] = Store(3)
    for k in range(3):
        store.put(k, str(k))
    assert len(store) == 3 and store.get(0) == "0"
    store.put(3, "3")  # full: starts again with this one
    assert len(store) == 1 and store.get(0) is None and store.get(3) == "3"
    assert 3 in store and 0 not in store
