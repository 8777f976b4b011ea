"""A shared-memory access that only the grid's last block runs (the zeros stored past n
under the `else` of `if (i < n)`, as a work-efficient scan pads its chunk) is surveyed
in that block (mcl.feedback.lockstep.last_block): its bank-conflict degree against a
brute-force trace's worst warp, and no figure where no block runs it."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from brute import Tracer
from conftest import by_code, feedback_source
from warp_trace import WARP, conflict_degree, numeric_values

from mcl.hdl.library import default_library
from mcl.mcpl.parse import parse_source

SOURCE = """
hopper void pad(int n, global float[n] y, global float[n] x) {
  foreach (int b in (n + 255) / 256 blocks) {
    shared float[512] buf;
    foreach (int w in 8 warps) {
      foreach (int t in 32 threads) {
        int tid = w * 32 + t;
        int i = b * 256 + tid;
        if (i < n) {
          buf[tid] = x[i];
        } else {
          buf[2 * tid] = 0.0;
        }
        barrier(shared);
        if (i < n) {
          y[i] = buf[tid];
        }
      }
    }
  }
}
"""
ZEROS_LINE = next(n for n, text in enumerate(SOURCE.splitlines(), 1)
                  if "buf[2 * tid] = 0.0;" in text)


def _traced_degree(n: int) -> int | None:
    """The worst warp's conflict degree at the zeros' store over every block, or None
    where no unit stores a zero."""
    module = parse_source(SOURCE)
    function = module.functions[-1]
    trace = Tracer(module, default_library().get("hopper")).run(function, {
        "n": n, "y": np.zeros(n, np.float32), "x": np.ones(n, np.float32)})
    nodes = {id(node): node for node in _walk(function)}
    warps: dict[tuple[int, ...], list[int]] = defaultdict(list)
    for k, (slot, index, values) in enumerate(trace.log):
        site = trace.slots[slot]
        node = nodes.get(site.node)
        if node is None or node.span is None or node.span.line != ZEROS_LINE \
                or "w" not in site.mode:
            continue
        block, warp, lane = values[:3]
        warps[(block, warp)].append(int(index[0]) * 4)
        assert len(trace.memory[k][0].shape) == 1 and lane < WARP
    return max((conflict_degree(a) for a in warps.values()), default=None)


def _walk(function: object) -> list[object]:
    from mcl.mcpl import ast

    return list(ast.walk(function))


def _stated(n: int) -> int | None:
    found = [m for m in by_code(feedback_source(SOURCE, "hopper", {"n": n}), "bank-conflict")
             if m.span is not None and m.span.line == ZEROS_LINE]
    return numeric_values(found[0])["conflict_degree"] if found else None


@pytest.mark.parametrize("n", [456, 300])
def test_the_tail_blocks_conflict_is_the_traced_one(n: int) -> None:
    """n = 456: the last block's tids 200..255 store zeros at even words, 2-way in warp
    7; n = 300: tids 44..255, 2-way as well (warp 1 has lanes 12..31 only)."""
    degree = _traced_degree(n)
    assert degree == 2
    assert _stated(n) == degree


def test_no_figure_where_no_block_stores_zeros() -> None:
    assert _traced_degree(512) is None
    assert _stated(512) is None
