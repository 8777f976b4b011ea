"""Edge guards decided at the sizes given (issue 11, item 5: noise).

A tiled kernel guards its edges with `if`s the operation counts cannot collapse
symbolically (`i = bi * TILE + e / TILE_K`); they then warn that the counts are upper
bounds. At a multiple of the tiles every such `if` takes the same branch in every
iteration, and the counts are exact: no warning, and the figures must equal a
brute-force trace. At sizes that cut a tile the warning stays.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from brute import Tracer
from conftest import KERNELS, by_code, feedback, load_kernel
from oracle import _number, check_data_accesses, traced_accesses

from mcl import pipeline
from mcl.feedback.facts.costs import DATA, function_costs
from mcl.feedback.facts.kernel import build_facts


def _run(name: str, sizes: dict[str, int]) -> tuple[Any, Any]:
    program, library = load_kernel(KERNELS / "matmul" / f"{name}.mcpl")
    function = program.main.function("matmul")
    hwd = library.get(function.hwd)
    facts = build_facts(function, pipeline.check(program, library), hwd)
    n, m, p = sizes["n"], sizes["m"], sizes["p"]
    rng = np.random.default_rng(0)
    args = {"n": n, "m": m, "p": p, "c": np.zeros((n, m), np.float32),
            "a": rng.random((n, p), dtype=np.float32),
            "b": rng.random((p, m), dtype=np.float32)}
    return facts, Tracer(program, hwd).run(function, args)


@pytest.mark.parametrize(("name", "sizes"), [
    ("hopper_v1", {"n": 128, "m": 128, "p": 16}),
    # the trace of fermi_v1's 16 x 256 x 256 takes about 9 s: the slow tier runs it
    pytest.param("fermi_v1", {"n": 16, "m": 256, "p": 256}, marks=pytest.mark.slow),
])
def test_at_a_multiple_of_the_tiles_the_counts_are_exact_and_match_a_trace(
        name: str, sizes: dict[str, int]) -> None:
    facts, trace = _run(name, sizes)
    symbolic = function_costs(facts)
    assert symbolic.approximations  # without sizes: upper bounds
    decided = function_costs(facts, sizes)
    assert decided.decided and not decided.approximations
    assert not check_data_accesses(facts, trace, sizes)
    for kind, seen in traced_accesses(facts, trace).items():  # exact: equal to the trace
        assert seen and _number(decided.total(DATA, kind), sizes) == seen
    # The upper bound without sizes holds: each if/else counts its larger branch there
    # (the zero padding of a tile never adds to the copy it replaces), each if without
    # else its branch in full.
    stores = _number(decided.total(DATA, "store"), sizes)
    assert stores is not None and stores <= _number(symbolic.total(DATA, "store"), sizes)


def test_sizes_that_cut_a_tile_keep_the_warning() -> None:
    messages = feedback(KERNELS / "matmul" / "hopper_v1.mcpl",
                        values={"n": 2000, "m": 2048, "p": 2048})
    assert by_code(messages, "opstats-approximate")
    messages = feedback(KERNELS / "matmul" / "hopper_v1.mcpl",
                        values={"n": 2048, "m": 2048, "p": 2048})
    assert not by_code(messages, "opstats-approximate")
    (summary,) = by_code(messages, "opstats-summary")
    assert "the same branch in every iteration, as at the sizes given" in summary.text
