"""Data reuse over a grid-stride loop (issue 11): the units and the loop are counted as
one index over [0, n), and the figures agree with a brute-force trace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import oracle
import pytest
from brute import Tracer
from conftest import by_code, feedback, load_kernel

from mcl import pipeline
from mcl.feedback.facts.kernel import build_facts
from mcl.feedback.facts.reuse import RatioReuse, Unpredictable, find_reuse

KERNEL = Path(__file__).parent / "kernels" / "grid_stride_reuse.mcpl"


def _facts() -> tuple[Any, Any, Any, Any]:
    program, library = load_kernel(KERNEL)
    function = program.main.function("smooth")
    hwd = library.get(function.hwd)
    return program, function, hwd, build_facts(function, pipeline.check(program, library), hwd)


def test_the_grid_stride_loop_is_one_index_over_the_problem() -> None:
    *_, facts = _facts()
    findings = [f for f in find_reuse(facts) if f.access.binding.name == "x"]
    assert findings and not [f for f in findings if isinstance(f, Unpredictable)]
    (ratio,) = [f for f in findings if isinstance(f, RatioReuse)]
    assert ratio.exact
    assert oracle._number(ratio.accesses, {"n": 100}) == 300
    assert oracle._number(ratio.distinct, {"n": 100}) == 102


def test_no_internal_counter_reaches_a_message() -> None:
    messages = feedback(KERNEL, values={"n": 1000})
    (msg,) = by_code(messages, "reuse-ratio")
    assert "_t_" not in msg.text and "approximation" not in msg.text
    assert msg.value_map["distinct"].numeric == 1002


@pytest.mark.parametrize("n", [1, 5, 31, 32, 33, 70])
def test_reuse_figures_match_a_brute_force_trace(n: int) -> None:
    program, function, hwd, facts = _facts()
    rng = np.random.default_rng(n)
    args = {"n": n, "y": np.zeros(n, np.float32),
            "x": rng.random(n + 2).astype(np.float32)}
    trace = Tracer(program, hwd).run(function, args)
    assert not oracle.check_reuse(facts, trace, {"n": n})
    # and directly: the elements the trace read against the finding
    (ratio,) = [f for f in find_reuse(facts) if isinstance(f, RatioReuse)]
    (site, entries), = [s for s in trace.sites(id(ratio.access.node)) if "r" in s[0].mode]
    assert len(entries) == oracle._number(ratio.accesses, {"n": n})
    assert len({index for index, _ in entries}) == oracle._number(ratio.distinct, {"n": n})
