"""A loop bound that divides by zero, and a roof that is no number (docs/reliability.md:
when an analysis cannot be sure it says so, never crashes, never prints a wrong figure).

`1.0 / 0` is SymPy's `zoo`: times a loop counter it stayed in a trip count
(`ceiling(zoo*w)`), the counts of the loop became `nan`, and `sympy.Min` of the roofline's
roofs raised "The argument 'nan' is not comparable". Such a value is now unknown statically,
as data is: the loop's count is an unknown `iters_x`, and the message says why."""

from __future__ import annotations

import math

import pytest
import sympy
from conftest import by_code, feedback_source

from mcl.feedback.analyses.roofline import Level, Roofline

KERNEL = """
hopper void k(int n, global float[n] a, global float[n] b) {
  foreach (int bi in n blocks) {
    shared float[256] s;
    foreach (int w in 8 warps) {
      foreach (int t in 32 threads) {
        s[w * 32 + t] = a[bi];
        for (float x = 0.0; x < BOUND; x += 1.0) {
          s[w * 32 + t] = s[w * 32 + t] * 2.0;
        }
        b[bi] = s[w * 32 + t];
      }
    }
  }
}
"""


@pytest.mark.parametrize("bound", [
    "w * (1.0 / 0)",  # nan bytes in shared memory: the least roof (`_attainable`)
    "1.0 / 0",  # zoo: the loop's clamp at 0 iterations (`Max(0, zoo)`)
    "1.0 / 0.0",  # mpmath raises ZeroDivisionError
    "w * (1.0 / (0.0 * n))",
    "1.0 / (n - n + 0.0)",
])
@pytest.mark.parametrize("values", [{}, {"n": 4096, "iters_x": 10}])
def test_a_bound_that_divides_by_zero_is_unknown_not_a_crash(bound, values):
    messages = feedback_source(KERNEL.replace("BOUND", bound), "hopper", values)
    for m in messages:
        assert "nan" not in m.text and "zoo" not in m.text, m.text
        for name, value in m.values:
            assert "nan" not in value.text and "zoo" not in value.text, name
            assert value.numeric is None or math.isfinite(value.numeric), name
    (count,) = [m for m in by_code(messages, "opstats-approximate") if "loop x" in m.text]
    assert "for-loop x divide by zero" in count.text
    (roof,) = by_code(messages, "roofline")
    assert "iters_x" in roof.value_map["intensity_shared"].text


N = sympy.Symbol("n", integer=True, positive=True)


@pytest.mark.parametrize("flops, level", [
    (sympy.nan, Level("global", 4 * N, 3.35e12)),
    (2 * N, Level("global", sympy.zoo * N, 3.35e12)),
    # an unlimited bandwidth times an intensity of 0: `oo * 0`
    (2 * N, Level("global", sympy.oo, math.inf)),
])
def test_roofs_that_are_no_numbers_give_no_attainable_figure(flops, level):
    roof = Roofline("hopper", "float", flops, 66.9e12, (level,))
    assert roof.attainable_symbolic() is None
    assert roof.times({"n": 4096}) is None


def test_roofs_that_are_numbers_give_the_least():
    roof = Roofline("hopper", "float", 2 * N, 66.9e12, (Level("global", 12 * N, 3.35e12),))
    assert not roof.undefined()
    assert float(roof.attainable_symbolic()) == pytest.approx(3350 / 6, rel=1e-3)
