"""Exact symbolic counting: distinct values of affine indices, triangular and tiled
loop nests, guards from translation (mcl.feedback.facts.counting)."""

from __future__ import annotations

import itertools

import pytest
import sympy
from conftest import by_code, feedback_source
from hypothesis import given, settings
from hypothesis import strategies as st

from mcl.feedback.facts.counting import Condition, _passing_points, distinct_values
from mcl.feedback.values import evaluate

h, fh, w = sympy.symbols("h fh w", integer=True, positive=True)


def brute_distinct(terms: list[tuple[int, int]]) -> int:
    return len({sum(c * t for (c, _), t in zip(terms, ts, strict=True))
                for ts in itertools.product(*[range(n) for _, n in terms])})


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([1, 2, 3, 4, 6, 8, 12, -1, -2, 0]),
                          st.integers(1, 7)), min_size=1, max_size=3))
def test_distinct_values_exact_or_upper_bound(terms: list[tuple[int, int]]) -> None:
    count, exact = distinct_values(terms)
    truth = brute_distinct(terms)
    if exact:
        assert int(count) == truth
    else:
        assert int(count) >= truth


def test_distinct_values_symbolic_forms() -> None:
    assert distinct_values([(1, h), (1, fh)]) == (fh + h - 1, True)  # convolution rows
    assert distinct_values([(w, h), (1, w)])[0] == h * w  # row-major i * w + j
    assert distinct_values([(1024, h), (1, 1024)])[0] == 1024 * h  # bj * 1024 + tj
    count, exact = distinct_values([(2, h), (1, fh)])  # strided: 2 * i + y
    assert exact and count.subs({h: 5, fh: 3}) == brute_distinct([(2, 5), (1, 3)])


TRIANGULAR = """
perfect void tri(int n, main float[n, n] a, main float[n] s) {
  foreach (int i in n threads) {
    float sum = 0.0;
    for (int j = i + 1; j < n; j += 2) {
      sum += a[i, j];
    }
    s[i] = sum;
  }
}
"""


def test_triangular_strided_loop_is_summed_exactly() -> None:
    (summary,) = by_code(feedback_source(TRIANGULAR), "opstats-summary")
    loads = summary.value_map["loads"].symbolic
    for size in range(1, 9):
        expected = sum(len(range(i + 1, size, 2)) for i in range(size))
        assert evaluate(loads, {"n": size}).numeric == expected
    assert not summary.approximate


TILED = """
perfect void tiled(int p, main float[p] a, main float[1] out) {
  foreach (int t in 1 threads) {
    float sum = 0.0;
    for (int kb = 0; kb < (p + 15) / 16; kb++) {
      int len = min(16, p - kb * 16);
      for (int k = 0; k < len; k++) {
        sum += a[kb * 16 + k];
      }
    }
    out[t] = sum;
  }
}
"""


def test_tiling_idiom_sums_to_the_full_range() -> None:
    (summary,) = by_code(feedback_source(TILED), "opstats-summary")
    p = sympy.Symbol("p", integer=True, positive=True)
    assert summary.value_map["loads"].symbolic == p  # sum(min(16, p - 16 kb)) = p
    assert not summary.approximate


GUARDED = """
gpu void g(int n, dev float[n] a, dev float[n] b) {
  int nrT = gpu.hierarchy.blocks.block.threads.max_nr_units;
  foreach (int bi in (n + nrT - 1) / nrT blocks) {
    foreach (int ti in nrT threads) {
      int i = bi * nrT + ti;
      if (i < n) {
        b[i] = a[i];
      } else {
        b[0] = 0.0;
      }
    }
  }
}
"""


def test_guard_on_a_split_index_is_exact_in_both_branches() -> None:
    (memory,) = [m for m in by_code(feedback_source(GUARDED, "gpu"), "opstats-memory")]
    n = sympy.Symbol("n", integer=True, positive=True)
    assert memory.value_map["loads"].symbolic == n
    stores = memory.value_map["stores"].symbolic  # n in the then-branch, the rest in else
    for size in (1, 1000, 1024, 1025, 5000):
        assert stores.subs(n, size) == 1024 * ((size + 1023) // 1024)
    assert not memory.approximate


DATA_DEPENDENT = """
perfect void d(int n, main int[n] len, main float[n] s) {
  foreach (int i in n threads) {
    float sum = 0.0;
    for (int k = 0; k < len[i]; k++) {
      if (k > 2) {
        sum += 1.0;
      }
    }
    s[i] = sum;
  }
}
"""


def test_data_dependent_bounds_and_ifs_are_flagged_and_named() -> None:
    messages = feedback_source(DATA_DEPENDENT)
    (summary,) = by_code(messages, "opstats-summary")
    assert summary.approximate
    assert "iters_k" in summary.needs  # the value the user can give with -D iters_k=...
    reasons = " ".join(m.text for m in by_code(messages, "opstats-approximate"))
    assert "for-loop k" in reasons and "the if at line 6" in reasons


def test_points_passing_conditions_are_counted_as_sympy_decides_them() -> None:
    """The enumeration of a guard's points (a reduction tree's `t % (2 * s) == 0`)
    evaluates the compiled conditions; it counts what SymPy's substitution decides, and
    declines a condition that needs a size."""
    t, u = sympy.symbols("t u", integer=True, nonnegative=True)
    n = sympy.Symbol("n", integer=True, positive=True)
    conditions = [Condition(sympy.Eq(sympy.Mod(t, 4), 0), True, None),  # type: ignore[arg-type]
                  Condition(t + 3 * u < 20, False, None),  # type: ignore[arg-type]
                  Condition(sympy.Gt(t / 3 - u / 2, -1), True, None)]  # type: ignore[arg-type]
    want = 0
    for a, b in itertools.product(range(16), range(9)):
        at = {t: a, u: b}
        want += all((c.rel.xreplace(at) is sympy.true) == c.holds for c in conditions)
    assert 0 < want < 16 * 9
    assert _passing_points(conditions, [t, u], [16, 9]) == want
    needs_size = [Condition(t < n, True, None)]  # type: ignore[arg-type]
    assert _passing_points(needs_size, [t], [16]) is None


# A loop `for (e = t; e < 256; e += 32)` runs ceiling((256 - t) / 32) times in thread t;
# its header and body over a warp's threads are a sum over t with no closed form.
@pytest.mark.parametrize("offset", [0, 3, 7])
def test_a_sum_over_the_threads_is_added_up_and_shows_no_internal_counter(offset: int
                                                                           ) -> None:
    """Over the 32 threads (the analysis's counter `_t_t` of loop t) a sum of numbers is
    a number, equal to the brute-force sum; one that still holds a size (w) stays a sum,
    over the loop's own name `t`, and equals the brute-force sum at every w."""
    from mcl.feedback.facts.counting import _sum

    t = sympy.Dummy("t_t", integer=True, nonnegative=True)
    numbers = sympy.ceiling((256 - t - offset) / 32) + sympy.ceiling(-t / 256 - offset / 8) + 1
    total = _sum(numbers, t, sympy.Integer(32))
    assert total.is_Integer
    assert total == sum(-(-(256 - x - offset) // 32) + -(-(-x - 32 * offset) // 256) + 1
                        for x in range(32))
    sized = sympy.ceiling((w - t) / 256) * h + offset
    summed = _sum(sized, t, sympy.Integer(32))
    assert "_t_" not in str(summed) and summed.has(sympy.Sum)
    (bound,) = {v for s in summed.atoms(sympy.Sum) for v in s.variables}
    assert bound.name == "t"
    for h_, w_ in [(1, 5), (3, 300), (2, 1000)]:
        value = evaluate(summed, {"h": h_, "w": w_}).numeric
        assert value == sum(-(-(w_ - x) // 256) * h_ + offset for x in range(32))
