"""Run-time problems are diagnostics with a source position, never tracebacks."""

from __future__ import annotations

import numpy as np
import pytest
from interp_helpers import FILE, parse, position, run, run_error

from mcl.diagnostics import MclError
from mcl.interp import run_function

MATMUL_OFF_BY_ONE = """
perfect void matmul(int n, int m, int p, main float[n, m] c, main float[n, p] a,
                    main float[p, m] b) {
  foreach (int i in n threads) {
    foreach (int j in m threads) {
      float sum = 0.0;
      for (int k = 0; k <= p; k++) {
        sum += a[i, k] * b[k, j];
      }
      c[i, j] = sum;
    }
  }
}
"""


def _matmul_args(n: int = 3, m: int = 4, p: int = 5) -> dict:
    return {
        "n": n,
        "m": m,
        "p": p,
        "c": np.zeros((n, m), dtype=np.float32),
        "a": np.ones((n, p), dtype=np.float32),
        "b": np.ones((p, m), dtype=np.float32),
    }


def test_read_out_of_bounds_names_the_access() -> None:
    d = run_error(MATMUL_OFF_BY_ONE, "matmul", _matmul_args())
    assert d.code == "interp-index-out-of-bounds"
    assert d.message == "index 5 is out of bounds for dimension 2 of 'a' (size 5)"
    assert d.span.file == FILE
    assert (d.span.line, d.span.column) == position(MATMUL_OFF_BY_ONE, "a[i, k]")


@pytest.mark.parametrize(
    ("statement", "needle", "message"),
    [
        ("out[i - 1] = 1.0;", "out[i - 1]", "index -1 is out of bounds for dimension 1 of 'out'"),
        ("out[i + 1] += 1.0;", "out[i + 1]", "index 4 is out of bounds for dimension 1 of 'out'"),
        ("out[i] = out[2 * i];", "out[2 * i]", "index 4 is out of bounds for dimension 1"),
    ],
)
def test_writes_and_negative_indices_are_checked(statement: str, needle: str, message: str) -> None:
    src = f"""
    perfect void k(int n, main float[n] out) {{
      foreach (int i in n threads) {{
        {statement}
      }}
    }}
    """
    d = run_error(src, "k", {"n": 4, "out": np.zeros(4, dtype=np.float32)})
    assert d.code == "interp-index-out-of-bounds"
    assert message in d.message
    assert (d.span.line, d.span.column) == position(src, needle)


def test_integer_division_by_zero() -> None:
    src = "perfect void d(int a, int b, main int[1] r) { r[0] = a / b; }"
    d = run_error(src, "d", {"a": 1, "b": 0, "r": np.zeros(1, dtype=np.int32)})
    assert d.code == "interp-division-by-zero"
    assert (d.span.line, d.span.column) == position(src, "a / b")
    d = run_error(
        src.replace("a / b", "a % b"), "d", {"a": 1, "b": 0, "r": np.zeros(1, dtype=np.int32)}
    )
    assert d.code == "interp-division-by-zero"


def test_float_division_by_zero_is_ieee() -> None:
    src = "perfect void d(float a, main float[2] r) { r[0] = a / 0.0; r[1] = 0.0 / 0.0; }"
    r = np.zeros(2, dtype=np.float32)
    run(src, "d", {"a": 1.0, "r": r})
    assert np.isinf(r[0]) and np.isnan(r[1])


def test_missing_argument() -> None:
    args = _matmul_args()
    del args["p"]
    d = run_error(MATMUL_OFF_BY_ONE, "matmul", args)
    assert d.code == "interp-missing-argument" and "'p'" in d.message
    assert d.span.line == position(MATMUL_OFF_BY_ONE, "int p")[0]


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"a": np.ones((3, 5), dtype=np.float64)}, "dtype float64"),
        ({"a": np.ones((3, 6), dtype=np.float32)}, "shape (3, 6)"),
        ({"a": np.ones((5, 3), dtype=np.float32).T}, "C-contiguous"),
        ({"a": [[1.0] * 5] * 3}, "numpy array"),
        ({"n": 2.5}, "integer"),
        ({"n": "3"}, "integer"),
    ],
)
def test_bad_arguments(change: dict, fragment: str) -> None:
    d = run_error(MATMUL_OFF_BY_ONE, "matmul", {**_matmul_args(), **change})
    assert d.code.startswith("interp-argument")
    assert fragment in d.message


def test_unknown_function_suggests_a_name() -> None:
    with pytest.raises(MclError) as exc:
        run_function(parse(MATMUL_OFF_BY_ONE), "matmull", _matmul_args(), None)
    assert "did you mean 'matmul'" in (exc.value.diagnostics[0].hint or "")


def test_missing_return_value() -> None:
    src = "perfect int f(int x) { if (x > 0) { return 1; } }"
    d = run_error(src, "f", {"x": -1})
    assert d.code == "interp-missing-return"


def test_nan_to_int_is_a_diagnostic() -> None:
    src = "perfect void f(float x, main int[1] r) { r[0] = toInt(x / 0.0 - x / 0.0); }"
    d = run_error(src, "f", {"x": 1.0, "r": np.zeros(1, dtype=np.int32)})
    assert d.code == "interp-arithmetic"
