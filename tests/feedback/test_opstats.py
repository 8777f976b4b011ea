"""The operation statistics (paper 6.2; docs/feedback.md, "Operation statistics") as the
programmer reads them: the loads and stores of the summary are those a brute-force trace
of the kernel performs, at sizes that do not divide the translated kernels' tiles; the
per-space messages add up to the summary; the computational count is the paper's 2nmp for
matmul at every level; and an `if` the counts cannot see through is announced."""

from __future__ import annotations

import numpy as np
import pytest
from brute import Tracer
from cases import Case, load, reference
from conftest import KERNELS, by_code, feedback_source

from mcl import pipeline
from mcl.feedback import analyse
from mcl.hdl.library import default_library

MATMUL = KERNELS / "matmul" / "perfect.mcpl"


def _summary(case: Case, sizes: dict[str, int]) -> tuple[dict, list]:
    program, function, hwd = load(case)
    messages = analyse(function, pipeline.check(program, default_library()), hwd, sizes)
    (summary,) = by_code(messages, "opstats-summary")
    return {k: v.numeric for k, v in summary.values}, messages


@pytest.mark.parametrize("level", [None, "accelerator", "gpu", "fermi"])
@pytest.mark.parametrize("sizes", [{"n": 3, "m": 5, "p": 7}, {"n": 6, "m": 1, "p": 4}])
def test_loads_and_stores_are_those_of_a_trace(level: str | None, sizes: dict) -> None:
    case = Case(MATMUL, level)
    figures, messages = _summary(case, sizes)
    program, function, hwd = load(case)
    args = reference(MATMUL.parent).inputs(dict(sizes), np.random.default_rng(0))
    trace = Tracer(program, hwd).run(function, args)
    used = trace.per_slot()
    # matmul's memory traffic: the elements of a and b it reads, of c it writes
    loads = sum(used[k] for k, s in enumerate(trace.slots) if s.param and "r" in s.mode)
    stores = sum(used[k] for k, s in enumerate(trace.slots) if s.param and "w" in s.mode)
    assert (figures["loads"], figures["stores"]) == (loads, stores)
    assert figures["data_accesses"] == loads + stores
    n, m, p = sizes["n"], sizes["m"], sizes["p"]
    assert figures["computational"] == 2 * n * m * p  # Table II: 2nmp at every level
    per_space = by_code(messages, "opstats-memory")
    assert sum(x.value_map["loads"].numeric for x in per_space if "registers" not in x.text) \
        == loads


def test_an_if_on_data_makes_the_counts_upper_bounds() -> None:
    messages = feedback_source("""\
perfect void clip(int n, main float[n] a) {
  foreach (int i in n threads) {
    if (a[i] > 1.0) {
      a[i] = 1.0;
    }
  }
}
""", values={"n": 100})
    (note,) = by_code(messages, "opstats-approximate")
    assert "upper bounds" in note.text and note.approximate
    (summary,) = by_code(messages, "opstats-summary")
    assert summary.approximate
    assert summary.value_map["stores"].numeric == 100  # every unit may store
