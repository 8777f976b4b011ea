"""An `if … else` whose condition depends on data counts as its larger branch, per kind
of operation (docs/feedback.md, "Operation statistics"): every unit that runs the `if`
runs one branch, so the larger count of each kind bounds either path. Checked against a
brute-force trace (brute.py) of each path: the count is at least each path's and equals
the larger per kind."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from brute import Tracer
from conftest import KERNELS, by_code, feedback_source, load_kernel
from oracle import _TRACE_KIND as TRACE_KIND
from oracle import _number, check_data_accesses, traced_accesses

from mcl import pipeline
from mcl.feedback.facts.costs import (
    COMPUTATIONAL,
    DATA,
    executions,
    function_costs,
    part_costs,
)
from mcl.feedback.facts.kernel import build_facts
from mcl.mcpl.loader import load_program

# Per kind the larger branch differs: the then-branch has more loads and arithmetic, the
# else-branch more stores; the loop inside the else-branch runs 3 times per unit.
PICK = """
perfect void pick(int n, main float[n] y, main float[n] z, main float[n] x) {
  foreach (int i in n threads) {
    if (x[i] > 0.5) {
      y[i] = x[i] * 2.0 + x[i] * 3.0 + 1.0;
    } else {
      for (int k = 0; k < 3; k++) {
        z[i] = 1.0;
      }
      y[i] = 4.0;
    }
  }
}
"""

KINDS = ((COMPUTATIONAL, None), (DATA, "load"), (DATA, "store"))


def _path(facts: Any, program: Any, x: np.ndarray) -> dict[tuple[str, Any], int]:
    """What the kernel does on input `x`, per kind: each statement's cost per run (its
    counted cost over its count) times how often the trace saw it run."""
    n = len(x)
    sizes = {"n": n}
    trace = Tracer(program, facts.hwd).run(
        facts.function, {"n": n, "x": x, "y": np.zeros(n), "z": np.zeros(n)})
    out = dict.fromkeys(KINDS, 0)
    for item in facts.items:
        count = _number(executions(facts, item)[0], sizes)
        seen = trace.counts[(id(item.node), TRACE_KIND[item.kind])]
        alone = part_costs(facts, {}, {item})
        for cat, kind in KINDS:
            total = _number(alone.total(cat, kind), sizes)
            if count:
                out[(cat, kind)] += total * seen // count
    return out


@pytest.fixture
def pick(tmp_path, library):
    path = tmp_path / "pick.mcpl"
    path.write_text(PICK)
    program = load_program(path, (), library)
    function = program.main.functions[0]
    facts = build_facts(function, pipeline.check(program, library), library.get("perfect"))
    return program, facts


@pytest.mark.parametrize("n", [8, 37])
def test_undecided_if_else_counts_the_larger_branch(pick, n):
    program, facts = pick
    costs = function_costs(facts, {"n": n})
    counted = {k: _number(costs.total(*k), {"n": n}) for k in KINDS}
    then = _path(facts, program, np.ones(n))
    orelse = _path(facts, program, np.zeros(n))
    mixed = _path(facts, program, np.random.default_rng(n).random(n))
    assert then != orelse  # the branches differ, and in different kinds
    assert then[(DATA, "load")] > orelse[(DATA, "load")]
    assert then[(DATA, "store")] < orelse[(DATA, "store")]
    for k in KINDS:
        assert counted[k] >= mixed[k]
        assert counted[k] == max(then[k], orelse[k]), k
    assert costs.approximations  # an upper bound, and said to be one


@pytest.mark.parametrize("n", [8, 37])
def test_the_lower_counts_take_the_smaller_branch(pick, n):
    """The lower bound (`function_costs(least=True)`, what the roofline's least time is
    built from) takes each kind at its smaller branch: at most what any path does."""
    program, facts = pick
    least = function_costs(facts, {"n": n}, least=True)
    counted = {k: _number(least.total(*k), {"n": n}) for k in KINDS}
    then = _path(facts, program, np.ones(n))
    orelse = _path(facts, program, np.zeros(n))
    mixed = _path(facts, program, np.random.default_rng(n).random(n))
    for k in KINDS:
        assert counted[k] <= mixed[k]
        assert counted[k] == min(then[k], orelse[k]), k


def test_the_message_says_the_larger_branch_was_counted():
    messages = feedback_source(PICK)
    (summary,) = by_code(messages, "opstats-summary")
    assert summary.approximate
    (note,) = {m.text for m in by_code(messages, "opstats-approximate")}
    assert "if/else at line 4" in note and "larger branch" in note


NESTED = """
perfect void nested(int n, main float[n] y, main float[n] x) {
  foreach (int i in n threads) {
    if (x[i] > 0.5) {
      if (x[i] > 0.7) {
        y[i] = x[i] * 2.0;
      }
    } else {
      y[i] = 1.0;
    }
  }
}
"""

VARYING = """
perfect void varying(int n, main float[n] y, main float[n] x) {
  foreach (int i in n threads) {
    if (x[i] > 0.5) {
      for (int k = 0; k < i; k++) {
        y[i] = 1.0;
      }
    } else {
      y[i] = 2.0;
    }
  }
}
"""

# `i < n / 2` bounds the then-branch to half the units; the else-branch runs for all.
LIMITED = """
perfect void limited(int n, main float[n] y, main float[n] x) {
  foreach (int i in n threads) {
    if (i < n / 2 && x[i] > 0.5) {
      y[i] = x[i] * 2.0 + x[i] * 3.0;
    } else {
      y[i] = 1.0;
    }
  }
}
"""


@pytest.mark.parametrize("source", [NESTED, VARYING, LIMITED])
def test_branches_whose_cost_varies_stay_summed(source):
    """An `if` inside a branch, or a loop whose iterations depend on the unit, make a
    branch cost differ from run to run, and a condition that limits one branch counts
    the branches over different units: the larger total need not bound a mix of the
    two, so both branches are counted in full, as before."""
    texts = {m.text for m in by_code(feedback_source(source), "opstats-approximate")}
    assert texts and not any("larger branch" in t for t in texts)
    assert any("at line 4 may limit" in t for t in texts)


@pytest.mark.slow
def test_the_shipped_prefetch_store_is_counted_once_per_unit():
    """kernels/matmul/hopper_v4.mcpl stores each prefetched element, or a zero past the
    last phase, under `if ((l + 1) * TILE_K + e % TILE_K < p) … else …`: at p = 24 (three
    phases) both branches run, neither in every iteration. Each unit stores once either
    way, so the larger branch is the trace's count."""
    program, library = load_kernel(KERNELS / "matmul" / "hopper_v4.mcpl")
    function = program.main.function("matmul")
    facts = build_facts(function, pipeline.check(program, library), library.get(function.hwd))
    sizes = {"n": 128, "m": 128, "p": 24}
    rng = np.random.default_rng(0)
    trace = Tracer(program, facts.hwd).run(function, {
        **sizes, "c": np.zeros((128, 128), np.float32),
        "a": rng.random((128, 24), dtype=np.float32),
        "b": rng.random((24, 128), dtype=np.float32)})
    assert not check_data_accesses(facts, trace, sizes)
    costs = function_costs(facts, sizes)
    assert any("if/else at line 186" in why for _, why in costs.approximations)
    for kind, seen in traced_accesses(facts, trace).items():
        assert seen and _number(costs.total(DATA, kind), sizes) == seen, kind
