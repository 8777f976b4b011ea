"""What `python -m mcl.fuzz` found after round 3 (docs/reliability.md, "Fuzzing"), each
as the smallest input that showed it: a geometric trip count evaluated where its closed
form does not hold, and feedback functions that ran far past the analyses' time budget
on a deep `if` nest."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import sympy

from mcl.feedback.facts import strides, sums
from mcl.feedback.values import evaluate
from tests.fuzz.checking import run_json as _check


def _kernel(body: str) -> str:
    return ("perfect void k(int n, int m, main float[n] a, main float[n] b) {\n"
            "  foreach (int i in n threads) {\n    float s = 0.0;\n"
            f"    {body}\n    a[i] = s;\n  }}\n}}\n")


def _trips(start: int, bound: int, inclusive: bool) -> int:
    count, k = 0, start
    while ((k <= bound) if inclusive else (k < bound)) and count < 100:
        count, k = count + 1, k * 2
    return count


DOUBLING = _kernel("for (int k0 = m; k0 <= i; k0 *= 2) { s += b[i]; }")


@pytest.mark.parametrize("m, why", [(0, "leaves it there"), (-1, "only makes it smaller")])
def test_a_doubling_loop_that_starts_at_a_value_not_above_0_is_an_endless_loop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], m: int, why: str
) -> None:
    """`-D m=0` made the trip count ceiling(log(Max(1, i/m))/log(2)) 'zoo': an internal
    error in the cache analysis, and numpy's warnings on the terminal. The loop does not
    end for any unit (k0 stays 0, or falls, while k0 <= i), which is what is reported."""
    code, doc, err = _check(tmp_path, capsys, DOUBLING,
                            ["--level", "fermi", "-D", "n=64", "-D", f"m={m}"])
    assert code == 1
    found = [d for d in doc["files"][0]["diagnostics"] if d["code"] == "values-endless-loop"]
    assert len(found) == 1 and found[0]["line"] == 4 and found[0]["severity"] == "error"
    assert why in found[0]["message"] and f"m = {m}" in found[0]["message"]
    assert "Warning" not in err and "internal error" not in err


@pytest.mark.parametrize("m", [1, 3, 64])
def test_a_doubling_loop_from_a_positive_value_counts_like_a_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], m: int
) -> None:
    code, doc, _ = _check(tmp_path, capsys, DOUBLING, ["-D", "n=50", "-D", f"m={m}"])
    assert code == 0
    summary = next(x for x in doc["messages"] if x["code"] == "opstats-summary")
    expected = sum(_trips(m, i, True) for i in range(50))
    assert summary["values"]["loads"]["numeric"] == expected


def test_a_literal_zero_start_is_an_unknown_count_not_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The values check names only starts that the user's values make 0; a literal 0
    is left to the analyses, which cannot count the loop and say so."""
    source = _kernel("for (int k0 = 0; k0 < i; k0 *= 2) { s += b[i]; }")
    code, doc, _ = _check(tmp_path, capsys, source, ["-D", "n=50", "-D", "m=0"])
    assert code == 0
    assert any(x["code"] == "opstats-approximate" for x in doc["messages"])


def test_values_outside_a_closed_form_give_no_figure_not_an_exception() -> None:
    """The analyses' other ways to put values in are total as well: a comparison
    undecided, a figure without a number, a sum with no value; never numpy's warnings."""
    n = sympy.Symbol("n", integer=True, positive=True)
    m = sympy.Symbol("m", integer=True, positive=True)
    trips = sympy.ceiling(sympy.log(sympy.Max(1, n / m)) / sympy.log(2))
    assert strides.compare(trips, "==", 3, {"n": 8, "m": 0}) is None
    assert strides.compare(trips, "==", 3, {"n": 8, "m": 1}) is True
    assert evaluate(trips, {"n": 8, "m": 0}).numeric is None
    t = sympy.Symbol("t", integer=True, nonnegative=True)
    total = sympy.Sum(sympy.ceiling(sympy.log(n / (m * t)) / sympy.log(2)), (t, 0, n - 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sums.sum_number(total, {n: 8, m: 0}) == (None, False)
        value, _ = sums.sum_number(sympy.Sum(t * m, (t, 0, n - 1)), {n: 8, m: 2})
    assert value == 2 * sum(range(8))


def _if_nest(depth: int) -> str:
    body = "s += b[i];"
    for level in range(depth):
        body = f"if (i > {level}) {{ {body} }}"
    return body


def test_feedback_functions_stop_at_their_time_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A halving loop around a 235-deep `if` nest kept fermi's divergence function busy
    for minutes (1,024 lanes decided for each `if`): the budget of mcl.feedback.budget
    was asked only by the analyses' SymPy steps, never by the kernel interface the
    functions compute with. Now every value it computes asks, and a function past the
    budget stops with a warning, and shows nothing it found; the other analyses, each
    with a budget of its own, keep their figures."""
    from mcl.feedback.analyses import functions

    monkeypatch.setattr(functions, "FUNCTIONS_BUDGET", 0.001)  # the functions' only
    source = _kernel("for (int k0 = i; k0 > 0; k0 >>= 1) { " + _if_nest(60) + " }")
    code, doc, err = _check(tmp_path, capsys, source,
                            ["--level", "fermi", "-v", "-D", "n=32", "-D", "m=4096"])
    assert code == 0 and "internal error" not in err
    cut = [x for x in doc["messages"]
           if x["code"] == "feedback-budget" and "performance feedback function" in x["message"]]
    assert cut and all(x["severity"] == "warning" for x in cut)
    assert all("not analysed" in x["message"] for x in cut)
    assert any(x["code"] == "opstats-summary" for x in doc["messages"])


def test_divergence_of_a_nest_is_decided_lane_by_lane(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With time enough, each `if` of a nest splits the lanes of the first warp that reach
    it as a brute-force count over the lanes says (`if (i > 0) { if (i > 1) ...`: lane L
    is the last that skips the L-th `if`)."""
    levels = [0, 1, 5, 30]
    body = "s += b[i];"
    for level in reversed(levels):
        body = f"if (i > {level}) {{ {body} }}"
    code, doc, _ = _check(tmp_path, capsys, _kernel(body),
                          ["--level", "fermi", "-v", "-D", "n=64", "-D", "m=1"])
    assert code == 0
    found = sorted((x["values"]["lanes_then"]["numeric"], x["values"]["lanes_else"]["numeric"])
                   for x in doc["messages"] if x["code"] == "divergence")
    expected = []
    for depth, level in enumerate(levels):
        active = [i for i in range(32) if all(i > outer for outer in levels[:depth])]
        taken = sum(1 for i in active if i > level)
        if 0 < taken < len(active):
            expected.append((taken, len(active) - taken))
    assert found == sorted(expected) and len(expected) == 4


def test_proving_two_figures_equal_does_not_add_up_sums(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A geometric loop with a float-dependent bound inside one that multiplies by 3:
    the roofline's test whether two traffic figures are equal ran `sympy.simplify` on a
    difference of nested sums, which tried to add them up symbolically for minutes.
    Simplifying leaves the sums alone now; the figures stay (approximate)."""
    source = _kernel("for (int k0 = 1; k0 != -5; k0 *= 3) { for (int k1 = 1; "
                     "k1 <= toInt(toFloat(i) * 100.0); k1 *= 2) { s += b[i]; } }")
    code, doc, err = _check(tmp_path, capsys, source,
                            ["--level", "hopper", "-D", "n=7", "-D", "m=32"])
    assert code == 0 and "internal error" not in err
    assert any(x["code"] == "roofline" for x in doc["messages"])
