"""Counts whose loop bound depends on an outer counter through a minimum stay unevaluated
sums of minima (spmv hopper_v7 to v9: block pb's share of the non-zeros ends at
`min(nnz, pb * chunk)`). What the feedback asks of them must not make SymPy compare the
minima's arguments again at every question (docs/feedback.md, "Speed"): the answers here
are SymPy's own, and the rebuilds of a `Min` are counted."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import sympy
from sympy.functions.elementary.miscellaneous import MinMaxBase

from mcl.feedback.facts import symbolic
from mcl.feedback.facts.counting import Sum
from mcl.mcpl.symbolic_values import SymPyValues, by_position, nonnegative, renamed

NNZ = sympy.Symbol("nnz", integer=True, positive=True)
PB = sympy.Symbol("pb", integer=True, nonnegative=True)
CHUNK = sympy.ceiling(NNZ / sympy.Min(1056, sympy.ceiling(NNZ / 3328)))
START = sympy.Min(NNZ, PB * CHUNK)
TILES = sympy.ceiling((sympy.Min(NNZ, CHUNK + START) - START) / 3328)
BLOCKS = sympy.Min(1056, sympy.ceiling(NNZ / 3328))


@contextmanager
def counted_comparisons() -> Iterator[list[int]]:
    """How often a `Min` or `Max` compares its arguments (built or rebuilt, evaluated)."""
    calls = [0]
    original = MinMaxBase.__dict__["_find_localzeros"]

    def counting(cls: Any, values: Any, **options: Any) -> Any:
        calls[0] += 1
        return original.__func__(cls, values, **options)

    MinMaxBase._find_localzeros = classmethod(counting)  # type: ignore[method-assign,assignment]
    try:
        yield calls
    finally:
        MinMaxBase._find_localzeros = original  # type: ignore[method-assign]


@pytest.mark.parametrize("limits", [
    ((PB, 0, BLOCKS - 1),),
    ((PB, 0, BLOCKS - 1), (sympy.Symbol("k", integer=True), 0, NNZ)),
    ((sympy.Symbol("k", integer=True), 0, PB), (PB, 1, NNZ)),
])
def test_the_free_symbols_of_a_count_are_sympys_without_rebuilding_it(limits: Any) -> None:
    summand = TILES * (1 + sympy.Symbol("k", integer=True))
    ours, sympys = Sum(summand, *limits), sympy.Sum(summand, *limits)
    with counted_comparisons() as calls:
        found = ours.free_symbols
        assert ours.free_symbols == found  # kept: a copy each time, as SymPy gives
    assert calls == [0]
    assert found == sympys.free_symbols
    found.add(sympy.Symbol("other"))
    assert ours.free_symbols == sympys.free_symbols


def test_what_sympy_rebuilds_of_a_count_is_a_count_and_prints_as_sympys() -> None:
    ours = Sum(TILES, (PB, 0, BLOCKS - 1))
    assert type(2 * ours) is sympy.Mul and type((2 * ours).args[1]) is Sum
    assert type(ours.xreplace({NNZ: NNZ + 1})) is Sum
    assert str(ours) == str(sympy.Sum(TILES, (PB, 0, BLOCKS - 1)))
    # the order of terms follows the class names: the same as with SymPy's Sum
    mixed = sympy.Max(NNZ, 3) + ours
    assert str(mixed) == str(sympy.Max(NNZ, 3) + sympy.Sum(TILES, (PB, 0, BLOCKS - 1)))


def test_a_renaming_rebuilds_minima_as_they_were() -> None:
    t = sympy.Dummy("t_pb", integer=True, nonnegative=True)
    expr = 256 * TILES.xreplace({PB: t}) + sympy.Max(0, t - NNZ)
    with counted_comparisons() as calls:
        got = renamed(expr, {t: PB})
    assert calls == [0]
    assert got == expr.xreplace({t: PB})
    assert renamed(expr, {}) is expr


def test_nonnegative_answers_as_before_under_any_names() -> None:
    t = sympy.Dummy("t_pb", integer=True, nonnegative=True)
    tiles = sympy.Min(NNZ, CHUNK + START) - START + 3327
    cases = [tiles, tiles.xreplace({PB: t}), NNZ - 1, NNZ + BLOCKS - 1, -NNZ, PB - NNZ]
    for e in cases:
        shifted = {s: sympy.Dummy(s.name, integer=True, nonnegative=True) + 1
                   for s in e.free_symbols if s.is_integer and s.is_positive}
        expected = bool(e.is_nonnegative) or (
            bool(shifted) and e.xreplace(shifted).is_nonnegative is True)
        assert nonnegative(e) is expected, e
    again = tiles.xreplace({PB: sympy.Dummy("t_pb", integer=True, nonnegative=True)})
    with counted_comparisons() as calls:
        assert nonnegative(again) is nonnegative(cases[1])
    assert calls == [0]  # asked before under other names: no comparison again


def test_min_and_max_of_symbolic_values_are_sympys_under_any_names() -> None:
    values = SymPyValues()
    for t in (PB, sympy.Dummy("t_pb", integer=True, nonnegative=True),
              sympy.Dummy("t_pb", integer=True, nonnegative=True)):
        args = [NNZ, t * CHUNK]
        assert values.call("min", args) == sympy.Min(*args)
        assert values.call("max", [NNZ + 1, t * CHUNK]) == sympy.Max(NNZ + 1, t * CHUNK)
    assert values.call("min", [sympy.Integer(3), sympy.Integer(5)]) == 3
    assert by_position([NNZ, PB])[PB] == sympy.Symbol("_arg1", integer=True, nonnegative=True)


def test_identical_disproves_a_difference_of_sums_at_the_probes(monkeypatch: Any) -> None:
    """The roofline asks whether the compulsory traffic is the counted one; SymPy cannot
    tell whether a number with an unevaluated sum in it is zero, so such a difference
    went to `simplify` (seconds). The sums are added up at the probe points instead."""
    def no_simplify(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("simplify was asked")

    monkeypatch.setattr(sympy, "simplify", no_simplify)
    counted = 4 * Sum(TILES, (PB, 0, BLOCKS - 1)) + 4 * NNZ
    assert symbolic.identical(0, counted) is False
    assert symbolic.identical(counted, counted + 1) is False
    assert symbolic.identical(counted, 4 * NNZ + 4 * Sum(TILES, (PB, 0, BLOCKS - 1))) is True


def test_a_level_without_known_compulsory_traffic_counts_its_accesses() -> None:
    """spmv hopper_v8 reads every array in global memory through a subscript the analysis
    cannot follow (`len`, set under an `if`; `x[cols[k]]`): no byte is known to be
    compulsory, and an intensity against 0 bytes printed as SymPy's infinity (`zoo`).
    The accesses as counted stand instead."""
    from conftest import KERNELS, by_code, feedback

    (m,) = by_code(feedback(KERNELS / "spmv" / "hopper_v8.mcpl"), "roofline")
    values = m.value_map
    assert "zoo" not in m.text and "compulsory" not in m.text
    assert values["bytes_global"].symbolic != 0 and "bytes_global_no_reuse" not in values
    assert not values["intensity_global"].symbolic.has(sympy.zoo)
