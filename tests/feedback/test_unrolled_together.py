"""A guard inside a short constant loop (mcl.feedback.facts.counting._unrolled): where its
conditions need only constant loops' counters, the loop's values and the other counters
are enumerated together; otherwise the loop is followed value by value (a SymPy relation
per value). Both must count the same: every call below is answered both ways and the
answers compared (the value as SymPy builds it, its exactness, what is left), and the
counts of a convolution's tile loops are checked against a brute-force trace."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import oracle
import pytest
from brute import Tracer
from conftest import KERNELS, feedback, feedback_source

from mcl import pipeline
from mcl.feedback.facts import counting
from mcl.feedback.facts.kernel import build_facts
from mcl.hdl.library import default_library
from mcl.mcpl.loader import load_program

# The two guards of convolution/hopper_v2 that took most of an edit's analysis: the load
# of a tile by `l` rounds of all threads (`if (ii < IN_H)`, ii = (l * 128 + tid) / IN_W)
# and the rows of the filter a row of the tile meets (`if (ir - r >= 0 && ir - r < FH)`).
TILES = """
hopper void tiles(int n, global float[n, 40] y, global float[n * 4] x) {
  foreach (int b in n blocks) {
    shared float[40][72] t;
    foreach (int ty in 4 warps) {
      foreach (int tx in 32 threads) {
        int tid = ty * 32 + tx;
        for (int l = 0; l < 23; l++) {
          int e = l * 128 + tid;
          int ii = e / 72;
          if (ii < 40) {
            t[ii][e % 72] = x[b * 4 + ty];
          }
        }
        barrier(shared);
        float s = 0.0;
        for (int ir = 0; ir < 16; ir++) {
          for (int r = 0; r < 8; r++) {
            if (ir - r >= 0 && ir - r < 9) {
              s += t[ir][tx];
            }
          }
        }
        y[b, ty * 8 + tx % 8] = s;
      }
    }
  }
}
"""

# `i + k < n` needs the size n and the counter of a loop of n iterations: not enumerable,
# counted value by value of k (a closed form in n per value).
SIZED = """
perfect void sized(int n, main float[n] y) {
  foreach (int i in n threads) {
    for (int k = 0; k < 8; k++) {
      if (i + k < n) {
        y[i] += 1.0;
      }
    }
  }
}
"""


@contextmanager
def both_ways() -> Iterator[dict[str, list[Any]]]:
    """Every `_unrolled` call answered also value by value (its former only way), the
    two answers kept; the value-by-value answer is the one the analysis goes on with."""
    calls: dict[str, list[Any]] = {"pairs": [], "together": []}
    unrolled, enumerated = counting._unrolled, counting._enumerated

    def by_values(ev: Any, loops: Any, conds: Any, weight: Any, unresolved: Any) -> Any:
        for loop in counting._unrollable(ev, loops, unresolved):
            counted = counting._per_iteration(ev, loops, conds, weight, loop)
            if counted is not None:
                return counted
        return None

    def spy_unrolled(ev: Any, loops: Any, conds: Any, weight: Any, unresolved: Any) -> Any:
        ours = unrolled(ev, loops, conds, weight, unresolved)
        theirs = by_values(ev, loops, conds, weight, unresolved)
        calls["pairs"].append((ours, theirs))
        return theirs

    def spy_enumerated(*args: Any) -> Any:
        counted = enumerated(*args)
        if len(args) > 5 and args[5] > counting.MAX_ENUMERATED and counted is not None:
            calls["together"].append(counted)
        return counted

    counting._unrolled = spy_unrolled
    counting._enumerated = spy_enumerated  # type: ignore[assignment]
    try:
        yield calls
    finally:
        counting._unrolled = unrolled
        counting._enumerated = enumerated


def _same(ours: Any, theirs: Any) -> bool:
    if ours is None or theirs is None:
        return ours is theirs
    return (ours[0] == theirs[0] and str(ours[0]) == str(theirs[0])
            and ours[1] == theirs[1] and list(ours[2]) == list(theirs[2]))


def test_together_and_value_by_value_agree_on_the_tile_loops() -> None:
    with both_ways() as calls:
        feedback_source(TILES, "hopper")
    assert calls["together"], "the loops' values were never enumerated together"
    assert len(calls["together"]) >= 2  # `l` with tx, ty; `ir` with r
    assert all(_same(ours, theirs) for ours, theirs in calls["pairs"]), calls["pairs"]


def test_a_guard_with_a_size_is_still_counted_value_by_value() -> None:
    with both_ways() as calls:
        feedback_source(SIZED)
    assert calls["pairs"] and not calls["together"]
    assert any(theirs is not None and theirs[1] for _, theirs in calls["pairs"])
    assert all(_same(ours, theirs) for ours, theirs in calls["pairs"]), calls["pairs"]


@pytest.mark.parametrize("name", ["convolution/hopper_v2", "convolution/hopper_v3",
                                  "reduction/gpu_v1"])
def test_together_and_value_by_value_agree_on_shipped_kernels(name: str) -> None:
    with both_ways() as calls:
        feedback(KERNELS / f"{name}.mcpl")
    assert calls["pairs"]
    if name.startswith("convolution"):
        assert calls["together"]
    assert all(_same(ours, theirs) for ours, theirs in calls["pairs"]), calls["pairs"]


@pytest.mark.parametrize("n", [1, 3])
def test_tile_loops_count_what_a_trace_counts(tmp_path: Any, n: int) -> None:
    path = tmp_path / "tiles.mcpl"
    path.write_text(TILES)
    library = default_library()
    program = load_program(path, (), library)
    function = program.main.functions[0]
    hwd = library.get(function.hwd)
    facts = build_facts(function, pipeline.check(program, library), hwd)
    rng = np.random.default_rng(5)
    trace = Tracer(program, hwd).run(function, {"n": n, "y": rng.random((n, 40)),
                                                "x": rng.random(n * 4)})
    problems = oracle.check_executions(facts, trace, {"n": n})
    assert not problems, problems
