"""GPU idioms counted exactly, checked against a brute-force trace (brute.py): a tree
reduction's `for (s = 128; s > 0; s >>= 1)` with `if (t < s)` inside (counted per
iteration, no `-D iters_s`), a halving loop written `s = s / 2`, the shipped gpu
reduction's `t % (2 * s) == 0`, and an if/else whose branches different threads take,
each branch counted for the threads that take it."""

from __future__ import annotations

import numpy as np
import oracle
import pytest
from brute import Tracer

from mcl import pipeline
from mcl.feedback.facts.costs import executions
from mcl.feedback.facts.kernel import build_facts
from mcl.feedback.registry import analyse
from mcl.hdl.library import default_library
from mcl.mcpl.loader import load_program

TREE = """
LEVEL void tree(int n, global float[n / 256] partial, global float[n] x) {
  int blocks = n / 256;
  foreach (int b in blocks blocks) {
    shared float[256] tmp;
    foreach (int w in 8 warps) {
      foreach (int tt in 32 threads) {
        tmp[w * 32 + tt] = x[b * 256 + w * 32 + tt];
        int t = w * 32 + tt;
        barrier(shared);
        for (int s = 128; s > 0; s >>= 1) {
          if (t < s) {
            tmp[t] += tmp[t + s];
          }
          barrier(shared);
        }
        for (int h = 64; h >= 2; h = h / 2) {
          if (t < h && h > 8) {
            tmp[t] += 1.0;
          }
        }
        if (t == 0) {
          partial[b] = tmp[0];
        }
      }
    }
  }
}
"""

# A double-buffered pass of a block scan: the even and odd threads take different
# branches, and the step loop doubles its offset.
SCAN = """
LEVEL void scan(int n, global float[n] y, global float[n] x) {
  foreach (int b in n / 64 blocks) {
    shared float[2][64] buf;
    foreach (int w in 2 warps) {
      foreach (int tt in 32 threads) {
        int t = w * 32 + tt;
        buf[0][t] = x[b * 64 + t];
        barrier(shared);
        for (int d = 1; d < 64; d *= 2) {
          if (t >= d) {
            buf[1][t] = buf[0][t] + buf[0][t - d];
          } else {
            buf[1][t] = buf[0][t];
          }
          barrier(shared);
          buf[0][t] = buf[1][t];
          barrier(shared);
        }
        if (t % 2 == 0) {
          y[b * 64 + t] = buf[0][t];
        } else {
          y[b * 64 + t] = 2.0 * buf[0][t];
        }
      }
    }
  }
}
"""


@pytest.fixture(scope="module")
def library():
    return default_library()


def _case(tmp_path, source, level, library):
    path = tmp_path / f"k_{level}.mcpl"
    path.write_text(source.replace("LEVEL", level))
    program = load_program(path, (), library)
    function = program.main.functions[0]
    return program, function, library.get(function.hwd)


def _check(program, function, hwd, sizes, arrays):
    facts = build_facts(function, pipeline.check(program, default_library()), hwd)
    rng = np.random.default_rng(3)
    args = {**sizes, **{name: rng.random(size) for name, size in arrays.items()}}
    trace = Tracer(program, hwd).run(function, args)
    problems = (oracle.check_executions(facts, trace, sizes)
                + oracle.check_data_accesses(facts, trace, sizes))
    assert not problems, problems
    return facts


@pytest.mark.parametrize("level", ["fermi", "hopper"])
@pytest.mark.parametrize("n", [256, 1024])
def test_tree_reduction_is_counted_per_iteration(tmp_path, library, level, n):
    program, function, hwd = _case(tmp_path, TREE, level, library)
    facts = _check(program, function, hwd, {"n": n}, {"partial": n // 256, "x": n})
    inexact = [item.span for item in facts.items if not executions(facts, item)[1]]
    assert not inexact, inexact  # every count exact: the brute force checked equality
    messages = analyse(function, pipeline.check(program, library), hwd, {"n": n})
    assert not [m for m in messages if m.code in ("opstats-approximate", "values-needed")]
    assert not any("iters_" in m.text or "iters_" in (m.hint or "") for m in messages)


@pytest.mark.parametrize("level", ["fermi", "hopper"])
def test_if_else_counts_each_branch_for_the_threads_that_take_it(tmp_path, library, level):
    program, function, hwd = _case(tmp_path, SCAN, level, library)
    facts = _check(program, function, hwd, {"n": 128}, {"y": 128, "x": 128})
    inexact = {item.span.line for item in facts.items if not executions(facts, item)[1]}
    # the step loop's `t >= d` / else (a closed form per iteration of d) and the branches
    # on `t % 2` (the 64 threads enumerated): exact, and equal to the brute force
    assert not inexact, inexact


def test_the_shipped_reduction_tree_is_exact(library):
    """kernels/reduction/gpu_v1.mcpl: `if (t % (2 * s) == 0 && t + s < BLOCK)` in
    `for (s = 1; s < BLOCK; s *= 2)`: 255 additions per block, as the trace counts."""
    from mcl.resources import kernels_dir

    path = kernels_dir() / "reduction" / "gpu_v1.mcpl"
    program = load_program(path, (), library)
    function = program.main.function("reduction")
    hwd = library.get(function.hwd)
    sizes = {"n": 700, "chunk": 300}
    facts = _check(program, function, hwd, sizes, {"partial": 3, "x": 700})
    tree = [item for item in facts.items if item.kind == "stmt" and item.span is not None
            and item.span.line == 31]
    assert tree and all(executions(facts, item)[1] for item in tree)
