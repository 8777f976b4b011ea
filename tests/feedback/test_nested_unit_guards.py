"""A guard on one unit nested in a range guard over the units (`if (tx == 0)` inside
`if (i < nx - 1 && j < ny - 1)`, i = bx * 32 + tx) is counted exactly, not as true for
every unit; and the cache advice for an access under guards counts the lines of the
lanes that run it (a halo column read by 8 lanes of a warp: 8 line fetches, not 32).
Each against a brute-force trace (brute.py) at two sizes."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from brute import Trace, Tracer
from conftest import by_code, load_kernel
from oracle import _TRACE_KIND, _number, check_data_accesses, check_executions

from mcl import pipeline
from mcl.feedback.facts.costs import executions, function_costs
from mcl.feedback.facts.kernel import KernelFacts, build_facts
from mcl.feedback.registry import analyse

HERE = Path(__file__).parent / "kernels"


def _trace(name: str, nx: int, ny: int, width: int) -> tuple[KernelFacts, Trace]:
    program, library = load_kernel(HERE / f"{name}.mcpl")
    function = program.main.functions[-1]
    facts = build_facts(function, pipeline.check(program, library), library.get(function.hwd))
    rng = np.random.default_rng(nx * ny)
    args = {"nx": nx, "ny": ny, "out": np.zeros((ny, nx), np.float32),
            "u": rng.random((ny, width), dtype=np.float32)}
    return facts, Tracer(program, facts.hwd).run(function, args)


def _halo_items(facts: KernelFacts, line: int) -> list[Any]:
    return [item for item in facts.items if item.span is not None and item.span.line == line
            and item.kind == "stmt"]


@pytest.mark.parametrize(("nx", "ny"), [(70, 20), (45, 33)])
def test_a_unit_guard_inside_a_range_guard_is_counted_exactly(nx: int, ny: int) -> None:
    facts, trace = _trace("nested_unit_guard", nx, ny, nx)
    sizes = {"nx": nx, "ny": ny}
    assert not function_costs(facts).approximations  # every count exact, for every size
    assert not check_executions(facts, trace, sizes)
    assert not check_data_accesses(facts, trace, sizes)
    (halo,) = _halo_items(facts, 17)  # t[ty][BW] = u[j, min(i + BW, nx - 1)];
    count, exact, _ = executions(facts, halo)
    seen = trace.counts[(id(halo.node), _TRACE_KIND[halo.kind])]
    # the first thread of every row of every block that has a unit inside the guard
    assert exact and _number(count, sizes) == seen == (ny - 1) * ((nx - 2) // 32 + 1)


@pytest.mark.parametrize(("nx", "ny"), [(70, 100), (45, 130)])
def test_a_guard_on_a_split_thread_index_is_counted_thread_by_thread(nx: int, ny: int
                                                                     ) -> None:
    facts, trace = _trace("nested_split_guard", nx, ny, nx)
    sizes = {"nx": nx, "ny": ny}
    assert not check_executions(facts, trace, sizes)  # bounds hold, exact counts equal
    (halo,) = _halo_items(facts, 19)  # t[ty][BW] = u[j, min(i + BW, nx - 1)];
    count, exact, unresolved = executions(facts, halo)
    seen = trace.counts[(id(halo.node), _TRACE_KIND[halo.kind])]
    assert exact and not unresolved
    assert _number(count, sizes) == seen == (ny - 1) * ((nx - 2) // 4 + 1)


def _lines_per_warp(trace: Trace, facts: KernelFacts, line: int, width: int) -> int:
    """The most 128 B lines one warp's lanes touch at the access on `line` (u's rows are
    `width` floats)."""
    (node,) = {id(a.node) for a in facts.accesses
               if a.node.span is not None and a.node.span.line == line
               and a.binding.root.name == "u"}
    lines: dict[tuple[int, ...], set[int]] = defaultdict(set)
    for slot, values in trace.sites(node):
        for index, loop_values in values:
            # the loops around the access: by, bx, w, l; a warp is (by, bx, w)
            lines[loop_values[:3]].add((index[0] * width + index[1]) * 4 // 128)
        assert slot.loops
    return max(len(v) for v in lines.values())


@pytest.mark.parametrize(("nx", "ny"), [(64, 16), (96, 24)])
def test_the_cache_advice_counts_the_active_lanes(nx: int, ny: int) -> None:
    width = nx + 32
    facts, trace = _trace("halo_column", nx, ny, width)
    fetched = _lines_per_warp(trace, facts, 16, width)
    assert fetched == 8  # 8 lanes, one row each
    program, library = load_kernel(HERE / "halo_column.mcpl")
    function = program.main.functions[-1]
    messages = analyse(function, pipeline.check(program, library), library.get("hopper"),
                       {"nx": nx, "ny": ny})
    (advice,) = [m for m in by_code(messages, "cache-no-benefit")
                 if m.span.line == 16 and "in loop l " in m.text]
    assert "the 8 active threads of a warp" in advice.text
    assert "32 line fetches" not in advice.text
    assert advice.value_map["best_lines"].numeric == fetched


def test_an_edge_guard_the_counts_cannot_collapse_leaves_one_estimate() -> None:
    """The range guards of the split kernel (`i < nx - 1` with i = bx * 4 + l % 4) stay
    upper bounds: the roofline's least time takes their skip, but the time model,
    whose `if`s do not depend on data, keeps one estimate."""
    program, library = load_kernel(HERE / "nested_split_guard.mcpl")
    function = program.main.functions[-1]
    messages = analyse(function, pipeline.check(program, library), library.get("hopper"),
                       {"nx": 4096, "ny": 4096})
    (roof,) = by_code(messages, "roofline")
    assert "with the smaller branch of the ifs at lines 16 and 23" in roof.text
    (estimate,) = by_code(messages, "time-estimate")
    assert "cannot decide" not in estimate.text
    assert "estimated_seconds_least" not in estimate.value_map
