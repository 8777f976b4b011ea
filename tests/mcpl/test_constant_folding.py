"""Constant folding computes what the device computes (docs/checker.md, rule 2): a
`float` constant in single precision, a `double` one in double, as C's usual arithmetic
conversions pick; a float constant that overflows to infinity (or is NaN) in that
precision is `mcpl-float-range`. The extents check evaluates through the same walk,
`mcl.mcpl.evaluate.Evaluator`."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from check_support import check_text
from hypothesis import given
from hypothesis import strategies as st

from mcl.mcpl import ast
from mcl.mcpl.constfold import Double, FoldError, fold, fold_binary, fold_unary
from mcl.mcpl.extents import extent_errors
from mcl.mcpl.operators import binary, to_single
from mcl.mcpl.parse import parse_source


def _codes(tmp_path: Path, text: str) -> list[tuple[int, str]]:
    return [(d.span.line if d.span else 0, d.code) for d in check_text(tmp_path, text)]


def test_a_float_constant_that_overflows_a_float_is_an_error(tmp_path: Path) -> None:
    found = check_text(tmp_path, "module k;\nconst float BIG = 1e20 * 1e20;\n")
    assert [(d.code, d.severity.value) for d in found] == [("mcpl-float-range", "error")]
    assert "in float arithmetic" in found[0].message
    assert found[0].span is not None and (found[0].span.line, found[0].span.column) == (2, 19)


def test_a_double_constant_folds_in_double(tmp_path: Path) -> None:
    # 1e30 * 1e30 overflows a float, not a double: D is declared double.
    text = ("module k;\nconst double D = 1e30;\nconst double E = D * D;\n"
            "const float F = 1e30;\nconst float G = F * F;\n"
            "const double H = E * E * E * E * E * E;\n")
    assert _codes(tmp_path, text) == [(5, "mcpl-float-range"), (6, "mcpl-float-range")]


def test_a_nan_is_an_error_and_a_division_by_zero_is_ieee(tmp_path: Path) -> None:
    text = ("module k;\nconst float M = 0.0 - 8.0;\nconst float P = M ^ (1.0 / 3.0);\n"
            "const float I = 1.0 / 0.0;\nconst float Q = 2.0 ^ 0.5;\n")
    assert _codes(tmp_path, text) == [(3, "mcpl-float-range")]


def test_float_folding_rounds_each_step_to_single_precision() -> None:
    third = fold_binary("/", 1.0, 3.0)
    assert third == float(np.float32(1.0) / np.float32(3.0)) and third != 1.0 / 3.0
    assert fold_binary("/", Double(1.0), 3.0) == 1.0 / 3.0  # a double operand: double
    assert isinstance(fold_unary("-", Double(2.0)), Double)
    assert fold_binary("+", 16777216, 1.0) == 16777216.0  # 2^24 + 1 is no float
    with pytest.raises(FoldError):
        fold_binary("*", 3e38, 2)


_FLOATS = st.floats(min_value=-2.0**100, max_value=2.0**100, allow_nan=False, width=32)


@given(_FLOATS, _FLOATS, st.sampled_from(["+", "-", "*", "/"]))
def test_float_folding_agrees_with_the_interpreters_float32(a: float, b: float, op: str) -> None:
    """The operators on numpy float32, as the interpreter and host evaluation compute."""
    device = float(binary(op, np.float32(a), np.float32(b)))
    try:
        folded = fold_binary(op, a, b)
    except FoldError:
        assert math.isinf(device)
        return
    if folded is None:  # a division by zero: IEEE's infinity or NaN, not a constant
        assert op == "/" and b == 0
    else:
        assert folded == device


def test_to_single_rounds_to_nearest_and_overflows_to_infinity() -> None:
    largest = float(np.finfo(np.float32).max)
    assert to_single(largest) == largest
    assert to_single(0.1) == float(np.float32(0.1))
    assert to_single(3.5e38) == math.inf and to_single(-1e39) == -math.inf


def test_fold_is_the_evaluator_walk_with_names_from_the_lookup() -> None:
    module = parse_source("module k;\nconst float X = (N + 1) * 0.5;\n", "k.mcpl")
    init = module.constants[0].init
    assert init is not None
    assert fold(init, {"N": 2}.get) == 1.5
    assert fold(init, {}.get) is None


_KERNEL = """module k;
perfect void f(int n, float[4] a) {
  foreach (int i in n threads) {
    if (i > 2 || i / 0 == 1) {
      a[i + 3] = 1.0;
    }
    a[min(i, 3)] = 2.0;
    a[max(i, 2)] = 3.0;
  }
}
"""


def _function(text: str) -> ast.Function:
    return parse_source(text, "k.mcpl").functions[0]


def test_extents_find_a_witness_through_min_and_a_short_circuit() -> None:
    function = _function(_KERNEL)
    # The search tries each loop's ends: i = 3 passes `i > 2` without evaluating the
    # division by zero (which has no value), and a[6] is outside; at i = 0 the condition
    # has no value, so the access is not reported there.
    errors = extent_errors(function, {"n": 4})
    assert [d.message.split(", outside")[0] for d in errors] == [
        "with n = 4 and i = 3, 'i + 3' is 6"]
    # max(i, 2) at i = 7 is 7: outside too; min(i, 3) never is.
    errors = extent_errors(function, {"n": 8})
    assert [d.message.split(", outside")[0] for d in errors] == [
        "with n = 8 and i = 7, 'i + 3' is 10", "with n = 8 and i = 7, 'max(i, 2)' is 7"]
