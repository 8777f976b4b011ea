"""`identical` on formulas with unevaluated sums (mcl.feedback.facts.symbolic): SymPy
compares no `Sum` at a number, so the probes add the sums up (exactly where each is an
exact integer, else both sides in floating point), and two formulas that differ are told
apart without `sympy.simplify` (which took 0.4 s on the roofline's compulsory traffic of
gesummv hopper_v5, docs/feedback.md "Speed"); formulas that agree everywhere are never
called different, and an estimate or a rounding error disproves nothing."""

from __future__ import annotations

import pytest
import sympy

from mcl.feedback.facts import symbolic
from mcl.feedback.facts.symbolic import identical

n = sympy.Symbol("n", integer=True, positive=True)
t = sympy.Symbol("t", integer=True, nonnegative=True)
STEPS = sympy.Sum(32 * n * sympy.ceiling(-t / 256 + sympy.floor(n / 4) / 256), (t, 0, 31))


def _no_simplify(*args, **kwargs):
    raise AssertionError("sympy.simplify was called")


def test_the_compulsory_traffic_and_every_access_differ_without_simplify(monkeypatch):
    compulsory = 4 * n + sympy.Min(4 * n, 8 * n**2 + 4 * STEPS) \
        + 2 * sympy.Min(4 * n**2, 4 * n**2 + 4 * STEPS)
    every_access = 16 * n**2 + 4 * n + 12 * STEPS
    monkeypatch.setattr(sympy, "simplify", _no_simplify)
    assert not identical(compulsory, every_access)
    assert not identical(every_access, compulsory)


def _differ_at(a, b, size):
    return symbolic._differ_at(a, b, sympy.expand(a - b), {n: size})


@pytest.mark.parametrize("summand, closed", [
    (2 * t, n * (n - 1)),  # exact integers
    (t / 3, n * (n - 1) / 6),  # fractions: compared in floating point
    (t / 10, n * (n - 1) / 20),  # 53096.5 against 53096.50000000001 at n = 1031
])
def test_formulas_with_sums_that_agree_are_not_called_different(summand, closed):
    # a sum against its closed form: equal at every point, so no probe may disprove it
    summed = sympy.Sum(summand, (t, 0, n - 1))
    for probe in symbolic._PROBES:
        assert not _differ_at(summed, closed, probe[0])
        assert not _differ_at(closed, summed, probe[0])
    assert identical(summed + 4 * STEPS, 4 * STEPS + summed)


def test_a_sum_off_by_one_is_told_apart(monkeypatch):
    monkeypatch.setattr(sympy, "simplify", _no_simplify)
    assert not identical(STEPS + 1, STEPS)
    assert not identical(sympy.Sum(t, (t, 0, n)), sympy.Sum(t, (t, 0, n - 1)))


def test_a_sum_inside_another_goes_with_the_outer_one(monkeypatch):
    monkeypatch.setattr(sympy, "simplify", _no_simplify)
    u = sympy.Symbol("u", integer=True, nonnegative=True)
    triangle = sympy.Sum(sympy.Sum(1, (u, 0, t)), (t, 0, n - 1))
    for probe in symbolic._PROBES:
        assert not _differ_at(triangle, n * (n + 1) / 2, probe[0])
    assert not identical(sympy.Min(4 * n, triangle), sympy.Min(4 * n, n * (n + 1) / 2 + 1))


def test_a_sum_of_fractions_off_by_one_is_told_apart(monkeypatch):
    # the sum is no exact integer: its side's number in floating point decides
    monkeypatch.setattr(sympy, "simplify", _no_simplify)
    assert not identical(sympy.Sum(t / 3, (t, 0, n - 1)), n * (n - 1) / 6 + 1)


def test_a_difference_below_rounding_error_is_told_apart_exactly(monkeypatch):
    # 10^12 against 10^12 + 1 at n = 2: equal in floating point, not as integers
    monkeypatch.setattr(sympy, "simplify", _no_simplify)
    summed = sympy.Sum(10**12 * t, (t, 0, n - 1))
    closed = 10**12 * n * (n - 1) / 2
    assert not _differ_at(summed, closed, 2)
    assert _differ_at(summed, closed + 1, 2)
    assert not identical(summed, closed + 1)


def test_an_estimated_sum_is_never_taken_as_exact(monkeypatch):
    # an estimate that happens to be a whole number is no exact value either
    from mcl.feedback.facts import sums

    monkeypatch.setattr(sums, "sum_number", lambda *args, **kwargs: (10, True))
    summed = sympy.Sum(t, (t, 0, n - 1))
    assert symbolic._exact_sums({summed}, {n: 5}) == {}
    assert not _differ_at(summed, n * (n - 1) / 2 + 1, 5)


@pytest.mark.parametrize("size", [1000003])
def test_a_sum_too_long_to_add_up_decides_nothing(size):
    # 10^12 terms: estimated from samples (off by far more than rounding error for a
    # sum of squares), which proves no difference, exactly or not
    long = sympy.Sum(t**2, (t, 0, n**2))
    closed = n**2 * (n**2 + 1) * (2 * n**2 + 1) / 6
    assert not _differ_at(long, closed, size)
    assert not _differ_at(long, closed + sympy.Rational(1, 3), size)


def test_formulas_without_sums_do_not_import_numpy():
    # facts.sums imports numpy: about 80 ms of the start of a check that has no sums
    import subprocess
    import sys

    script = ("import sys, sympy\n"
              "from mcl.feedback.facts.symbolic import identical\n"
              "n = sympy.Symbol('n', integer=True, positive=True)\n"
              "assert not identical(sympy.Min(n, 4) + 1, sympy.Min(n, 4) + 2)\n"
              "assert identical(2 * n, n + n)\n"
              "assert 'numpy' not in sys.modules, 'numpy imported'\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
