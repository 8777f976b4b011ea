"""`if (t == 0)` — the first unit of a reduction writes the result — is counted exactly
(issue 11: it left every reduction's counts as upper bounds with a warning)."""

from __future__ import annotations

import numpy as np
import pytest
from brute import Tracer
from conftest import by_code, feedback_source
from oracle import _number

from mcl import pipeline
from mcl.feedback.facts.costs import DATA, function_costs
from mcl.feedback.facts.kernel import build_facts
from mcl.hdl.library import default_library
from mcl.mcpl.parse import parse_source

SOURCE = """
gpu void f(int n, dev float[n] y, dev float[n, 8] x) {
  foreach (int b in n blocks) {
    foreach (int t in 8 threads) {
      if (t == 0 && b < n) {
        y[b] = x[b, t];
      }
      if (t != 0) {
        x[b, t] = 1.0;
      }
    }
  }
}
"""


def test_no_warning_for_a_first_unit_guard() -> None:
    assert not by_code(feedback_source(SOURCE, "gpu", {"n": 10}), "opstats-approximate")


@pytest.mark.parametrize("n", [1, 3, 10])
def test_first_unit_counts_match_a_trace(n: int) -> None:
    module = parse_source(SOURCE)
    function = module.functions[-1]
    hwd = default_library().get("gpu")
    facts = build_facts(function, pipeline.check(module, default_library()), hwd)
    costs = function_costs(facts)
    assert not costs.approximations
    trace = Tracer(module, hwd).run(function, {
        "n": n, "y": np.zeros(n, np.float32), "x": np.zeros((n, 8), np.float32)})
    used = trace.per_slot()
    loads = sum(used[k] for k, s in enumerate(trace.slots) if "r" in s.mode)
    stores = sum(used[k] for k, s in enumerate(trace.slots) if "w" in s.mode)
    assert (loads, stores) == (n, n + 7 * n)
    assert _number(costs.total(DATA, "load"), {"n": n}) == loads
    assert _number(costs.total(DATA, "store"), {"n": n}) == stores
