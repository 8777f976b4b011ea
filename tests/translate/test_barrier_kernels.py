"""Guards around work between barriers, run in the reference interpreter: hand-written gpu
kernels whose thread count does not divide fermi's warps of 32 translate to fermi and
compute what they computed at gpu (the interpreter rejects a barrier that some units of
its group miss, and any access outside an array)."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from mcl import pipeline
from mcl.hdl.library import HwdLibrary, default_library
from mcl.interp import run_function
from mcl.mcpl import ast
from mcl.mcpl.check import check_program
from mcl.mcpl.loader import Program
from mcl.mcpl.parse import parse_source
from mcl.translate import translate_module, translate_program


@cache
def library() -> HwdLibrary:
    return default_library()


# Every thread reads its right neighbour's value three times, with barriers in the loop;
# `acc` is declared before the loop and read after it, `mine` before a barrier and after.
NEIGHBOURS = """
gpu void neighbours(int n, int m, dev float[n, m] a, dev float[n, m] out) {
  foreach (int i in n blocks) {
    local float[m] row;
    foreach (int t in m threads) {
      float mine = a[i, t];
      float acc = 0.0;
      for (int r = 0; r < 3; r++) {
        row[t] = mine * (r + 1);
        barrier(local);
        acc += row[(t + 1) % m];
        barrier(local);
      }
      if (m > 1) {
        row[t] = mine;
        barrier(local);
      }
      out[i, t] = acc + row[t] - mine;
    }
  }
}
"""


def program(src: str) -> Program:
    module = parse_source(src, file="neighbours.mcpl")
    return Program(main=module, modules={"neighbours": module})


@pytest.mark.parametrize("level", ["nvidia", "fermi", "hopper"])
@pytest.mark.parametrize("m", [1, 13, 37, 64])
def test_barriers_in_loops_and_ifs_stay_reachable_for_any_thread_count(level: str, m: int):
    n = 3
    a = np.random.default_rng(m).uniform(-1, 1, (n, m)).astype(np.float32)
    source = program(NEIGHBOURS)
    result = translate_program(source, level, library())
    assert [d for d in check_program(result.program, library()) if d.severity == "error"] == []
    outputs = {}
    for name, prog in (("gpu", source), (level, result.program)):
        out = np.zeros((n, m), dtype=np.float32)
        run_function(pipeline.check(prog, library()), "neighbours",
                     {"n": n, "m": m, "a": a.copy(), "out": out}, library())
        outputs[name] = out
    # row[t] ends as `mine` after the if; with one thread the if is skipped and row[t]
    # still holds 3 * mine from the loop.
    expected = 6 * np.roll(a, -1, axis=1) if m > 1 else 8 * a
    np.testing.assert_allclose(outputs["gpu"], expected, rtol=1e-6)
    assert np.array_equal(outputs[level], outputs["gpu"])


def test_the_if_with_a_uniform_condition_keeps_its_barrier_unguarded():
    f = translate_module(parse_source(NEIGHBOURS), "fermi", library()).module.functions[0]
    uniform_ifs = [n for n in ast.walk(f) if isinstance(n, ast.If) and "m > 1" in _text(n.cond)]
    (uniform_if,) = uniform_ifs
    assert isinstance(uniform_if.then.stmts[-1], ast.Barrier)


def _text(e: ast.Expr) -> str:
    from mcl.mcpl.printer import print_expr

    return print_expr(e)


# `q` is computed from the thread index before a barrier and read after it, so it must be
# declared before the guard. Hoisting the whole declaration made the threads past `m`
# evaluate `100 / (m - t)` too, dividing by zero at t == m (a crash on a CPU device).
DIVIDES_BY_DISTANCE = """
gpu void distance(int m, dev int[m] out) {
  foreach (int b in 1 blocks) {
    local int[m] l;
    foreach (int t in m threads) {
      int q = 100 / (m - t);
      l[t] = q;
      barrier(local);
      out[t] = l[(t + 1) % m] + q - q;
    }
  }
}
"""


@pytest.mark.parametrize("m", [1, 31, 33])
def test_threads_past_the_count_never_evaluate_per_thread_arithmetic(m: int):
    source = program(DIVIDES_BY_DISTANCE)
    result = translate_program(source, "fermi", library())
    out = np.zeros(m, dtype=np.int32)
    run_function(pipeline.check(result.program, library()), "distance", {"m": m, "out": out},
                 library())
    assert out.tolist() == [100 // (m - (t + 1) % m) for t in range(m)]
