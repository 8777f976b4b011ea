"""The unit_counts analysis (docs/feedback.md, "Units beyond a par_group's limit") agrees
with the interpreter, which refuses a run that asks for more units than a par_group
allows: the warning appears exactly at the sizes the interpreter refuses."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import by_code, feedback_source

from mcl import pipeline
from mcl.diagnostics import MclError
from mcl.hdl.library import default_library
from mcl.interp import run_function
from mcl.mcpl.parse import parse_source

# gpu allows at most 1024 threads per block (gpu.hierarchy.blocks.threads.max_nr_units).
GPU = """\
gpu void scale(int n, dev float[n] a) {
  foreach (int b in 1 blocks) {
    foreach (int t in n threads) {
      a[t] = a[t] * 2.0;
    }
  }
}
"""


def _interpreter_refuses(n: int) -> bool:
    a = np.ones(n, dtype=np.float32)
    try:
        run_function(pipeline.check(parse_source(GPU), default_library()), "scale",
                     {"n": n, "a": a}, default_library())
    except MclError:
        return True
    return False


@pytest.mark.parametrize("n", [1, 1000, 1024, 1025, 1500])
def test_the_warning_appears_where_the_interpreter_refuses_the_run(n: int) -> None:
    warned = by_code(feedback_source(GPU, "gpu", {"n": n}), "units-over-limit")
    assert bool(warned) == _interpreter_refuses(n)
    if warned:
        (m,) = warned
        assert m.value_map["units"].numeric == n and m.value_map["limit"].numeric == 1024
        assert "the kernel cannot run as written" in m.text


def test_without_values_nothing_is_claimed() -> None:
    assert _interpreter_refuses(1025) and not _interpreter_refuses(1024)  # the case exists
    assert not by_code(feedback_source(GPU, "gpu"), "units-over-limit")
