"""mcl.feedback.exact: a compiled expression gives what SymPy's substitution gives, as the
same SymPy objects, and declines what it cannot compute exactly."""

from __future__ import annotations

import itertools
from fractions import Fraction
from pathlib import Path

import pytest
import sympy

from mcl.feedback import kernel_api
from mcl.feedback.exact import as_sympy, exact_function
from mcl.feedback.stage import FeedbackOptions
from mcl.hdl.library import load_library
from mcl.pipeline import check_source

KERNELS = Path(__file__).resolve().parents[2] / "kernels"

t = sympy.Dummy("t", integer=True, nonnegative=True)
w = sympy.Dummy("w", integer=True, nonnegative=True)
n = sympy.Symbol("n")

# What the lock-step walk evaluates (hopper_v2's guards and addresses), and the rest of
# what the compiler prints: rationals, negative powers, Min/Max/Abs, Not, Or, Eq, Ne.
EXPRESSIONS = [
    128 * w * n + 4 * sympy.Mod(t, 16) + 64 * n * sympy.floor(t / 4),
    sympy.And(128 * w + sympy.Mod(t, 4) < n, 4 * sympy.floor(t / 16) >= w - 3),
    sympy.Or(sympy.Eq(t, w), sympy.Ne(sympy.Mod(t + 32 * w, 128), 7)),
    sympy.Not(t <= w),
    t - sympy.ceiling(n / 8) + 1,
    sympy.Rational(3, 7) * t + (w + 1) ** -2,
    sympy.Max(t, w, n / 3) - sympy.Min(t - w, 2) + sympy.Abs(t - w),
    sympy.floor(sympy.Rational(1, 3) * t - w / 5) * sympy.Mod(t - 5 * w, 3),
    sympy.Integer(8),
    # rounding of rational coefficients is printed as integer division: negative
    # arguments, a constant term, a factor that is itself a fraction
    sympy.ceiling(-t / 3 + w / 2 - sympy.Rational(5, 4)) + sympy.floor(-t / 6 + n / 4),
    sympy.floor(t / (3 * (w + 1))) - sympy.ceiling(sympy.Rational(7, 2) * t / (w + 2)),
    sympy.true,
    # the halving step of a reduction tree: the exponent is computed
    t - sympy.floor(32 * 2 ** (-w - 1)) + (sympy.Rational(2, 3)) ** (w - 4),
]


@pytest.mark.parametrize("expr", EXPRESSIONS, ids=str)
def test_compiled_equals_sympy(expr: sympy.Basic) -> None:
    function = exact_function(expr, [t, w], {n: 37})
    assert function is not None
    for a, b in itertools.product(range(0, 40, 3), range(0, 9)):
        want = expr.xreplace({t: a, w: b, n: 37})
        got = as_sympy(function(a, b))
        assert type(got) is type(want) and got == want, (a, b)


def test_division_by_zero_raises_for_sympy_to_answer() -> None:
    function = exact_function(1 / t, [t], {})
    assert function is not None
    with pytest.raises(ArithmeticError):
        function(0)
    assert as_sympy(function(4)) == sympy.Rational(1, 4)


def test_a_fractional_computed_exponent_raises_for_sympy_to_answer() -> None:
    function = exact_function(4 ** (t / 2), [t], {})
    assert function is not None
    assert as_sympy(function(6)) == 64
    with pytest.raises(ArithmeticError):
        function(1)


@pytest.mark.parametrize("expr", [t * sympy.Float(1.5), sympy.sqrt(t), t ** sympy.Rational(1, 2),
                                  sympy.Piecewise((t, t > 2), (w, True)), t + sympy.oo,
                                  t + n],
                         ids=str)
def test_what_is_not_exact_is_not_compiled(expr: sympy.Basic) -> None:
    # floats round step by step in SymPy, roots and Piecewise are not printed, and a
    # symbol with no value (n here) is the caller's error to report
    assert exact_function(expr, [t, w], {}) is None


def test_feedback_functions_evaluate_as_sympy_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every evaluation of the feedback functions on a kernel whose warps are walked lane
    by lane (guards, addresses, trip counts) gives what SymPy's substitution gives, as a
    SymPy value and as a plain number, and most are compiled."""
    fast = kernel_api.NumericEvaluator._evaluate
    lanes = kernel_api.NumericEvaluator._compiled_each
    seen = {"compiled": 0, "all": 0, "numbers": 0, "lanes": 0}

    def same(self: kernel_api.NumericEvaluator, expr: object, got: object) -> None:
        want = self._substitute(sympy.sympify(expr))
        value = as_sympy(got) if isinstance(got, (int, Fraction)) else got
        assert type(value) is type(want) and value == want, expr
        if isinstance(want, sympy.Number):
            number, plain = kernel_api.number(want), kernel_api.evaluated_number(got)
            assert type(plain) is type(number) and plain == number, expr
            seen["numbers"] += 1

    def both(self: kernel_api.NumericEvaluator, expr: object) -> object:
        got = fast(self, expr)
        same(self, expr, got)
        seen["all"] += 1
        seen["compiled"] += self._compiled.get(sympy.sympify(expr)) is not None
        return got

    def each(self: kernel_api.NumericEvaluator, cursor: kernel_api.UnitCursor,
             units: list[int], expr: object) -> list[object] | None:
        # a warp's lanes computed together: each lane is what SymPy gives at that lane
        got = lanes(self, cursor, units, expr)
        for unit, value in zip(units, got or (), strict=False):
            cursor.seek(unit)
            same(self, expr, value)
            seen["lanes"] += 1
        return got

    monkeypatch.setattr(kernel_api.NumericEvaluator, "_evaluate", both)
    monkeypatch.setattr(kernel_api.NumericEvaluator, "_compiled_each", each)
    library = load_library(partial=True)
    options = FeedbackOptions(defines=("n=200", "m=130", "p=70"))
    found = check_source(KERNELS / "matmul" / "fermi_v1.mcpl", [], library, None, options)
    assert found.feedback is not None and found.feedback.messages
    assert seen["all"] > 10 and seen["compiled"] > seen["all"] // 2 and seen["numbers"] > 50
    assert seen["lanes"] > 1000  # the walk's lanes, computed together
