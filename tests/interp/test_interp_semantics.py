"""Interpreter semantics (docs/interpreter.md): C arithmetic, float32 rounding, arrays,
tiles, views, user types, calls, built-ins, constants and foreach units."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from interp_helpers import library, run, run_error

from mcl.interp import StructValue
from mcl.mcpl.loader import load_program

ARITH = """
perfect void arith(int a, int b, main int[6] r) {
  r[0] = a / b;
  r[1] = a % b;
  r[2] = a * b - a;
  r[3] = a << 2;
  r[4] = a >> 1;
  r[5] = (a & 12) | (b & 3);
}
"""


def c_div(a: int, b: int) -> int:
    return int(math.trunc(a / b))


@settings(max_examples=60, deadline=None)
@given(st.integers(-200, 200), st.integers(-30, 30).filter(lambda b: b != 0))
def test_integer_arithmetic_is_c(a: int, b: int) -> None:
    r = np.zeros(6, dtype=np.int32)
    run(ARITH, "arith", {"a": a, "b": b, "r": r})
    assert r[0] == c_div(a, b)  # truncation toward zero, not Python's floor
    assert r[1] == a - c_div(a, b) * b  # the remainder takes the dividend's sign
    assert r[1] == int(math.fmod(a, b))
    assert r[2] == a * b - a
    assert r[3] == a << 2
    assert r[4] == a >> 1
    assert r[5] == (a & 12) | (b & 3)


def test_negative_division_examples() -> None:
    r = np.zeros(6, dtype=np.int32)
    run(ARITH, "arith", {"a": -7, "b": 2, "r": r})
    assert (r[0], r[1]) == (-3, -1)
    run(ARITH, "arith", {"a": 7, "b": -2, "r": r})
    assert (r[0], r[1]) == (-3, 1)


FLOATS = """
perfect void floats(float a, float b, int k, main float[4] r, main double[2] d) {
  r[0] = a + b;
  r[1] = a * b / 3.0;
  r[2] = k / 2;
  r[3] = k / 2.0;
  d[0] = 0.1;
  d[1] = toDouble(a) * 0.1;
}
"""


@settings(max_examples=40, deadline=None)
@given(
    st.floats(-1e6, 1e6, allow_nan=False, width=32),
    st.floats(-1e6, 1e6, allow_nan=False, width=32),
)
def test_float_operations_round_to_float32(a: float, b: float) -> None:
    r = np.zeros(4, dtype=np.float32)
    d = np.zeros(2, dtype=np.float64)
    run(FLOATS, "floats", {"a": a, "b": b, "k": 7, "r": r, "d": d})
    fa, fb = np.float32(a), np.float32(b)
    assert r[0] == fa + fb
    assert r[1] == fa * fb / np.float32(3.0)


def test_mixed_int_float_and_double_literals() -> None:
    r = np.zeros(4, dtype=np.float32)
    d = np.zeros(2, dtype=np.float64)
    run(FLOATS, "floats", {"a": 0.5, "b": 1.0, "k": 7, "r": r, "d": d})
    assert r[2] == 3.0  # int / int divides as integers first
    assert r[3] == 3.5  # int / float converts the int
    assert d[0] == 0.1  # a double keeps the literal's full precision
    assert d[1] == 0.5 * 0.1


def test_float_accumulation_matches_float32_not_float64() -> None:
    src = """
    perfect void acc(int n, main float[1] out) {
      float s = 0.0;
      for (int k = 0; k < n; k++) {
        s += 0.1;
      }
      out[0] = s;
    }
    """
    out = np.zeros(1, dtype=np.float32)
    run(src, "acc", {"n": 1000, "out": out})
    expected = np.float32(0)
    for _ in range(1000):
        expected = np.float32(expected + np.float32(0.1))
    assert out[0] == expected
    assert abs(float(out[0]) - 100.0) > 1e-4  # float64 would be ~1e-12 off


def test_power_comparisons_and_short_circuit() -> None:
    src = """
    perfect void logic(int n, main int[3] a, main int[4] r) {
      r[0] = 2 ^ 3 ^ 2;
      int i = n;
      if (i < n && a[i] > 0) { r[1] = 1; } else { r[1] = 2; }
      if (i >= n || a[i] > 0) { r[2] = 3; }
      if (!(i == n)) { r[3] = 4; } else { r[3] = 5; }
    }
    """
    r = np.zeros(4, dtype=np.int32)
    run(src, "logic", {"n": 3, "a": np.ones(3, dtype=np.int32), "r": r})
    assert list(r) == [2**9, 2, 3, 5]  # ^ is right-associative


def test_tiled_arrays_are_row_major_tiles_then_elements() -> None:
    src = """
    perfect void tiles(main int[2,2][3,3] d) {
      foreach (int ti in 2 threads) { foreach (int tj in 2 threads) {
        for (int ei = 0; ei < 3; ei++) { for (int ej = 0; ej < 3; ej++) {
          d[ti, tj][ei, ej] = ti * 1000 + tj * 100 + ei * 10 + ej;
        } }
      } }
    }
    """
    d = np.zeros((2, 2, 3, 3), dtype=np.int32)
    run(src, "tiles", {"d": d})
    flat = d.reshape(-1).tolist()
    expected = [
        ti * 1000 + tj * 100 + ei * 10 + ej
        for ti in range(2)
        for tj in range(2)
        for ei in range(3)
        for ej in range(3)
    ]
    assert flat == expected
    # A flat array with the same number of elements is seen through a view, in place.
    flat_arg = np.zeros(36, dtype=np.int32)
    run(src, "tiles", {"d": flat_arg})
    assert flat_arg.tolist() == expected


def test_nested_brackets_and_tiles_as_values() -> None:
    src = """
    perfect void rows(int h, int w, main float[h][w] img, main float[w] last) {
      for (int i = 0; i < h; i++) { for (int j = 0; j < w; j++) { img[i][j] = i * w + j; } }
      copyRow(w, last, img[h - 1]);
    }
    perfect void copyRow(int w, main float[w] dst, main float[w] src) {
      for (int j = 0; j < w; j++) { dst[j] = src[j]; }
    }
    """
    img = np.zeros((3, 4), dtype=np.float32)
    last = np.zeros(4, dtype=np.float32)
    run(src, "rows", {"h": 3, "w": 4, "img": img, "last": last})
    assert img.reshape(-1).tolist() == list(range(12))
    assert last.tolist() == [8, 9, 10, 11]  # a tile passed by reference


def test_views_alias_the_same_storage() -> None:
    src = """
    perfect void views(int n, int t, main float[n] a, main float[n] b) {
      a as float[n / t][t] a2;
      foreach (int i in n / t threads) {
        for (int j = 0; j < t; j++) { a2[i][j] = i * 10 + j; }
      }
      main float[n] tmp as float[n / t][t] tmp2;
      for (int k = 0; k < n; k++) { tmp[k] = a[k] * 2.0; }
      for (int i = 0; i < n / t; i++) { for (int j = 0; j < t; j++) { b[i * t + j] = tmp2[i][j]; } }
    }
    """
    a = np.zeros(12, dtype=np.float32)
    b = np.zeros(12, dtype=np.float32)
    run(src, "views", {"n": 12, "t": 4, "a": a, "b": b})
    assert a.tolist() == [i * 10 + j for i in range(3) for j in range(4)]
    assert b.tolist() == [2 * x for x in a.tolist()]


STRUCTS = """
type Complex { float real; float imag; }
type Tile(int n) { float[n] data; int count; }

perfect void setReal(Complex c, float x) { c.real = x; }

perfect float norm2(Complex c) { return c.real * c.real + c.imag * c.imag; }

perfect void structs(int n, main float[4] out, main Complex[n] zs) {
  Complex u;
  u.real = 1.5;
  u.imag = 2.0;
  Complex v = u;
  v.real = 7.0;
  setReal(zs[1], 3.0);
  Tile(3) t;
  t.data[2] = 4.0;
  t.count = 1;
  out[0] = u.real;
  out[1] = v.real;
  out[2] = norm2(u);
  out[3] = t.data[2] + t.count;
}
"""


def test_user_types_copy_on_assignment_and_pass_by_reference() -> None:
    out = np.zeros(4, dtype=np.float32)
    zs = np.array(
        [StructValue("Complex", {"real": np.float32(0), "imag": np.float32(0)}) for _ in range(2)],
        dtype=object,
    )
    run(STRUCTS, "structs", {"n": 2, "out": out, "zs": zs})
    assert out.tolist() == [1.5, 7.0, 1.5 * 1.5 + 4.0, 5.0]
    assert zs[1].fields["real"] == 3.0 and zs[0].fields["real"] == 0.0


def test_calls_pass_written_scalars_by_reference_and_recurse() -> None:
    src = """
    perfect void inc(int x, const int by) { x += by; }
    perfect int fact(int k) { if (k <= 1) { return 1; } return k * fact(k - 1); }
    perfect void calls(main int[3] r) {
      int v = 5;
      inc(v, 2);
      inc(r[1], 10);
      r[0] = v;
      r[2] = fact(6);
    }
    """
    r = np.array([0, 1, 0], dtype=np.int32)
    run(src, "calls", {"r": r})
    assert r.tolist() == [7, 11, 720]


def test_return_value_is_reported() -> None:
    src = "perfect float half(float x) { return x / 2; }"
    assert run(src, "half", {"x": 3.0})["return"] == np.float32(1.5)


def test_builtins() -> None:
    src = """
    perfect void builtins(main float[6] f, main int[5] i) {
      f[0] = sqrt(2.0);
      f[1] = exp(1.0);
      float c = 0.0;
      f[2] = sincos(0.5, c);
      f[3] = c;
      f[4] = fabs(-2.5) + floor(1.7) + ceil(1.2);
      f[5] = pow(2.0, 0.5);
      i[0] = toInt(-2.7);
      i[1] = min(3, -4) + max(3, -4);
      i[2] = abs(-6);
      i[3] = atomicAdd(i[4], 5);
    }
    """
    f = np.zeros(6, dtype=np.float32)
    i = np.array([0, 0, 0, 0, 10], dtype=np.int32)
    run(src, "builtins", {"f": f, "i": i})
    assert f[0] == np.sqrt(np.float32(2.0))
    assert f[1] == np.exp(np.float32(1.0))
    assert f[2] == np.sin(np.float32(0.5)) and f[3] == np.cos(np.float32(0.5))
    assert f[4] == 2.5 + 1.0 + 2.0
    assert f[5] == pytest.approx(math.sqrt(2), rel=1e-6)
    assert i.tolist() == [-2, -1, 6, 10, 15]  # atomicAdd returns the old value


def test_standard_library_modules(tmp_path) -> None:
    (tmp_path / "uselib.mcpl").write_text("""
import perfect;
import lib.math.common;
import lib.atomic;

perfect void uselib(int n, main float[2] out, main int[1] count) {
  foreach (int i in n threads) {
    atomicInc(count[0]);
  }
  out[0] = sqr(3.0) + PI;
  out[1] = clamp(5.0, 0.0, 1.0) + rsqrt(4.0) + erf(0.0);
}
""")
    program = load_program(tmp_path / "uselib.mcpl", (), library())
    out = np.zeros(2, dtype=np.float32)
    count = np.zeros(1, dtype=np.int32)
    from mcl import pipeline
    from mcl.interp import run_function

    run_function(pipeline.check(program, library()), "uselib",
                 {"n": 13, "out": out, "count": count}, library())
    assert out[0] == np.float32(9.0) + np.float32(math.pi)
    assert out[1] == 1.5
    assert count[0] == 13


def test_hardware_description_constants() -> None:
    src = """
    gpu void consts(dev int[1] r) {
      int t = gpu.hierarchy.blocks.block.threads.max_nr_units;
      r[0] = t;
    }
    """
    r = np.zeros(1, dtype=np.int32)
    run(src, "consts", {"r": r})
    expected = library().get("gpu").value("gpu.hierarchy.blocks.block.threads.max_nr_units")
    assert r[0] == expected.value


def test_unlimited_hardware_constant_is_an_error() -> None:
    src = "perfect void u(main int[1] r) { r[0] = perfect.hierarchy.threads.max_nr_units; }"
    d = run_error(src, "u", {"r": np.zeros(1, dtype=np.int32)})
    assert d.code == "interp-hwd-constant" and "unlimited" in d.message


def test_top_level_constants() -> None:
    src = """
    const int SIZE = 4 * 3;
    const float HALF = 1.0 / 2;
    perfect void k(main float[SIZE] a) { a[SIZE - 1] = HALF; }
    """
    a = np.zeros(12, dtype=np.float32)
    run(src, "k", {"a": a})
    assert a[11] == 0.5


def test_foreach_units_have_their_own_variables() -> None:
    src = """
    perfect void units(int n, int m, main int[n, m] out) {
      foreach (int i in n threads) {
        int base = i * 100;
        foreach (int j in m threads) {
          int v = base + j;
          out[i, j] = v;
          if (j == 1) { return; }
          out[i, j] = v + 1;
        }
      }
    }
    """
    out = np.zeros((3, 4), dtype=np.int32)
    run(src, "units", {"n": 3, "m": 4, "out": out})
    # `return` ends one unit only: j == 1 keeps its first value.
    assert out.tolist() == [[i * 100 + j + (j != 1) for j in range(4)] for i in range(3)]


def test_uninitialised_memory_is_poisoned() -> None:
    src = """
    perfect void poison(main float[2] out, main int[1] iout) {
      main float[3] t;
      int k;
      out[0] = t[1];
      out[1] = t[1] + 1.0;
      iout[0] = k;
    }
    """
    out = np.zeros(2, dtype=np.float32)
    iout = np.zeros(1, dtype=np.int32)
    run(src, "poison", {"out": out, "iout": iout})
    assert np.isnan(out).all()
    assert iout[0] == -(2**31)


def test_swap() -> None:
    src = """
    perfect void sw(main float[3] a, main float[3] b) {
      float x = 1.0;
      float y = 2.0;
      x <=> y;
      a[0] <=> a[2];
      a[1] = x;
      b[0] = y;
    }
    """
    a = np.array([1, 0, 3], dtype=np.float32)
    b = np.zeros(3, dtype=np.float32)
    run(src, "sw", {"a": a, "b": b})
    assert a.tolist() == [3, 2, 1] and b[0] == 1


def test_values_supply_missing_sizes() -> None:
    src = "perfect void fill(int n, main int[n] a) { foreach (int i in n threads) { a[i] = i; } }"
    a = np.zeros(5, dtype=np.int32)
    result = run(src, "fill", {"a": a}, values={"n": 5})
    assert a.tolist() == [0, 1, 2, 3, 4]
    assert result["a"] is a and result["n"] == 5
