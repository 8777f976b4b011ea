"""Run-time problems are diagnostics with a source position, never tracebacks."""

from __future__ import annotations

import numpy as np
import pytest
from interp_helpers import FILE, parse, position, run, run_error

from mcl import pipeline
from mcl.diagnostics import MclError
from mcl.hdl.library import default_library
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
        run_function(pipeline.check(parse(MATMUL_OFF_BY_ONE), default_library()), "matmull",
                     _matmul_args(), None)
    assert "did you mean 'matmul'" in (exc.value.diagnostics[0].hint or "")


def test_missing_return_value() -> None:
    src = "perfect int f(int x) { if (x > 0) { return 1; } }"
    d = run_error(src, "f", {"x": -1})
    assert d.code == "interp-missing-return"


def test_nan_to_int_is_a_diagnostic() -> None:
    src = "perfect void f(float x, main int[1] r) { r[0] = toInt(x / 0.0 - x / 0.0); }"
    d = run_error(src, "f", {"x": 1.0, "r": np.zeros(1, dtype=np.int32)})
    assert d.code == "interp-arithmetic"


# --- 32-bit int semantics: an overflow is an error at the operation, never a silently
# different value (Python ints would grow where a device wraps or misbehaves).

INT_CASES = [
    ("int x = 2147483647; x = x + 1; r[0] = x / 2;", "x + 1", "2147483647 + 1"),
    ("int x = 2147483647; if (x + 1 > x) { r[0] = 1; }", "x + 1", "2147483647 + 1"),
    ("int x = 65536; r[0] = x * x;", "x * x", "65536 * 65536"),
    ("int x = 0 - 2147483647 - 1; r[0] = x / (0 - 1);", "x / (0 - 1)", "-2147483648 / -1"),
    ("int x = 0 - 2147483647 - 1; r[0] = -x;", "-x", "-(-2147483648)"),
    ("int x = 2147483647; x++;", "x++", "2147483647 + 1"),
    ("int x = 3; x *= 1000000000;", "x *= 1000000000", "3 * 1000000000"),
    ("int x = 2; r[0] = x ^ 40;", "x ^ 40", "2 ^ 40"),
    ("int x = 2; r[0] = x ^ 1000000000;", "x ^ 1000000000", "2 ^ 1000000000"),
    ("int x = 1; r[0] = x << 31;", "x << 31", "1 << 31"),
]


@pytest.mark.parametrize(("body", "needle", "operation"), INT_CASES, ids=[c[2] for c in INT_CASES])
def test_int_overflow_is_reported_at_the_operation(body: str, needle: str, operation: str) -> None:
    src = f"perfect void f(main int[1] r) {{\n  {body}\n}}"
    d = run_error(src, "f", {"r": np.zeros(1, dtype=np.int32)})
    assert d.code == "interp-int-overflow"
    assert d.message == f"int overflow: {operation} does not fit in 32 bits"
    assert (d.span.line, d.span.column) == position(src, needle)


@pytest.mark.parametrize("count", ["32", "0 - 1"])
def test_shift_counts_outside_0_to_31_are_errors(count: str) -> None:
    src = f"perfect void f(int s, main int[1] r) {{\n  r[0] = s << ({count});\n}}"
    d = run_error(src, "f", {"s": 1, "r": np.zeros(1, dtype=np.int32)})
    assert d.code == "interp-shift"
    assert (d.span.line, d.span.column) == position(src, "s << ")


def test_constant_operations_that_fail_are_errors_only_when_they_run() -> None:
    # Folding `1 << -1` or `1 / 0` while compiling raised a raw ValueError (a traceback)
    # or an error for code that never runs.
    src = ("perfect void f(main int[2] r) {\n"
           "  if (false) { r[0] = 1 << -1; r[0] = 1 / 0; }\n  r[1] = 5;\n}")
    r = np.zeros(2, dtype=np.int32)
    run(src, "f", {"r": r})
    assert r.tolist() == [0, 5]
    src = "perfect void f(main int[1] r) {\n  r[0] = 1 << -1;\n}"
    d = run_error(src, "f", {"r": np.zeros(1, dtype=np.int32)})
    assert d.code == "interp-shift" and d.span.line == 2


@pytest.mark.parametrize(
    ("body", "needle", "fragment"),
    [
        ("float x = 1.0e30; r[0] = toInt(x);", "toInt(x)", "does not fit in a 32-bit int"),
        ("float x = 3.0e10; int y = 0; y = x;", "y = x;", "does not fit in a 32-bit int"),
        ("r[0] = 99999999999;", "99999999999", "does not fit in a 32-bit int"),
    ],
)
def test_conversions_to_int_are_range_checked(body: str, needle: str, fragment: str) -> None:
    src = f"perfect void f(main int[1] r) {{\n  {body}\n}}"
    d = run_error(src, "f", {"r": np.zeros(1, dtype=np.int32)})
    assert fragment in d.message
    assert (d.span.line, d.span.column) == position(src, needle)


def test_int_builtins_that_overflow_are_reported_at_the_call() -> None:
    src = "perfect void f(main int[1] r) {\n  r[0] = 2147483647;\n  atomicAdd(r[0], 1);\n}"
    d = run_error(src, "f", {"r": np.zeros(1, dtype=np.int32)})
    assert d.code == "interp-int-overflow" and "'atomicAdd' gives 2147483648" in d.message
    assert (d.span.line, d.span.column) == position(src, "atomicAdd")
    src = "perfect void f(int x, main int[1] r) {\n  r[0] = abs(x);\n}"
    d = run_error(src, "f", {"x": -(2**31), "r": np.zeros(1, dtype=np.int32)})
    assert d.code == "interp-int-overflow" and "'abs' gives 2147483648" in d.message
    assert (d.span.line, d.span.column) == position(src, "abs(x)")


def test_int_extremes_still_work() -> None:
    src = """perfect void f(int big, main int[4] r) {
  r[0] = big;
  r[1] = -big - 1;
  r[2] = (0 - 1) ^ (0 - 3);
  r[3] = (0 - 8) >> 1;
}"""
    r = np.zeros(4, dtype=np.int32)
    run(src, "f", {"big": 2**31 - 1, "r": r})
    assert r.tolist() == [2**31 - 1, -(2**31), -1, -4]


def test_an_int_argument_outside_32_bits_is_a_diagnostic() -> None:
    d = run_error("perfect void f(int n) { }", "f", {"n": 2**40})
    assert d.code == "interp-argument" and "32-bit" in d.message


def test_compiling_constant_float_operations_prints_no_numpy_warning() -> None:
    import warnings

    src = "perfect void f(main float[1] r) { r[0] = 1.0 % 0.0; }"
    r = np.zeros(1, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run(src, "f", {"r": r})
    assert np.isnan(r[0])


def test_an_array_too_large_for_memory_is_a_diagnostic() -> None:
    src = "perfect void f(main int[1] r) {\n  float[1000000, 1000000] big;\n  r[0] = 1;\n}"
    d = run_error(src, "f", {"r": np.zeros(1, dtype=np.int32)})
    assert d.code == "interp-size" and "no memory" in d.message and d.span.line == 2


def test_a_description_constant_beyond_32_bits_is_a_diagnostic() -> None:
    # hopper's 80 GB memory used to become an int of 85899345920, silently wider than C's.
    src = "hopper void k(global int[1] r) {\n  r[0] = hopper.mem.capacity / 1024;\n}"
    d = run_error(src, "k", {"r": np.zeros(1, dtype=np.int32)})
    assert d.code == "interp-int-overflow"
    assert d.message == "hopper.mem.capacity = 85899345920 does not fit in a 32-bit int"
    assert (d.span.line, d.span.column) == position(src, "hopper.mem")
