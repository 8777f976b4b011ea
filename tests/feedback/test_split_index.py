"""A flat thread index split into 2-D (`tid / 16`, `tid % 16`, 256 threads): two affine
pieces of the thread loop (mcl.feedback.facts.counting.split_counters), so the reuse
and cache-footprint figures come out; held against a brute-force trace (brute.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import sympy
from conftest import KERNELS, by_code, feedback, load_kernel
from test_memory_served import _run
from warp_trace import LINE, count_lines, numeric_values, warp_addresses

from mcl import pipeline
from mcl.feedback.facts.counting import split_counters
from mcl.feedback.facts.kernel import build_facts
from mcl.feedback.facts.reuse import RatioReuse, Unpredictable, find_reuse
from mcl.feedback.values import evaluate

TILE = Path(__file__).parent / "kernels" / "split_tile_hopper.mcpl"
D = 16  # the kernel's divisor: a 16 x 16 tile of 256 threads


@pytest.mark.parametrize("n", [32, 48])
def test_split_reuse_figures_match_the_trace(n: int) -> None:
    sizes = {"n": n}
    _, facts, trace = _run(TILE, sizes)
    (read,) = [a for a in facts.accesses if a.reads and a.element
               and a.binding.root.name == "a"]
    findings = [f for f in find_reuse(facts) if f.access is read]
    assert findings and not [f for f in findings if isinstance(f, Unpredictable)]
    ((site, group),) = trace.sites(id(read.node))
    names = [next(x.name for x in facts.loops if id(x.node) == k) for k in site.loops]

    def pieces(values: tuple[int, ...], used: set[str]) -> tuple[int, ...]:
        """The loop values the figure counts: t as its pieces t / 16 and t % 16."""
        out: list[int] = []
        for name, v in zip(names, values, strict=True):
            if name == "t":
                out += [v // D] if "q" in used else []
                out += [v % D] if "r" in used else []
            elif name in used:
                out.append(v)
        return tuple(out)

    checked = set()
    for f in findings:
        assert isinstance(f, RatioReuse) and f.exact
        accesses = evaluate(f.accesses, sizes).numeric
        distinct = evaluate(f.distinct, sizes).numeric
        if f.dimension is None:
            assert accesses == len(group)
            assert distinct == len({index for index, _ in group})
        else:
            d = f.dimension
            used = {x.name for x in f.loops}
            # which pieces of t the dimension uses: the row uses t / 16, the column t % 16
            used |= {"q"} if d == 0 else {"r"}
            assert accesses == len({pieces(v, used) for _, v in group}), d
            assert distinct == len({index[d] for index, _ in group}), d
        checked.add(f.dimension)
    assert checked == {1, None}  # the row index has no reuse: 16 threads x 16 rows


def test_split_only_for_a_trip_count_that_the_divisor_divides() -> None:
    t, u = sympy.symbols("t u", integer=True, nonnegative=True)
    assert split_counters([sympy.floor(t / 16), sympy.Mod(t, 16)], {t: 256}) is not None
    assert split_counters([sympy.floor(t / 24)], {t: 256}) is None  # 256 = 10 * 24 + 16
    assert split_counters([sympy.floor(t / 16), sympy.Mod(t, 8)], {t: 256}) is None
    assert split_counters([t + u], {t: 256, u: 4}) is None  # nothing to split
    split = split_counters([sympy.floor(t / 16) * 20 + sympy.Mod(t, 16)], {t: 64})
    assert split is not None
    ((q, r),) = split.pieces.values()
    assert split.exprs == [20 * q + r] and split.trips == {q: 4, r: 16}


def test_split_tile_gets_the_cache_fact_with_a_bound_the_trace_respects() -> None:
    sizes = {"n": 64}
    messages, facts, trace = _run(TILE, sizes)
    (served,) = by_code(messages, "memory-cache-serves")
    assert served.text.startswith("a[i, j + x]")
    block = [a for warp in warp_addresses(trace, facts, "a[i, j + x]", "r").values()
             for a in warp]
    touched = count_lines(block, LINE) * LINE
    # 16 rows of 18 floats: 1 or 2 lines each
    assert touched <= numeric_values(served)["footprint_bytes"] <= 2 * 16 * LINE
    assert not by_code(feedback(TILE, values={"n": 1024}), "reuse-unpredictable")


@pytest.mark.parametrize("version", ["hopper_v1", "hopper_v3"])
def test_the_shipped_hopper_matmul_tiles_get_exact_figures(version: str) -> None:
    """matmul hopper (v1, v3) read their shared tiles at `ti + THREADS_I * ei` and
    `ei / VEC * THREADS_I * VEC + ti * VEC + ei % VEC`, ti = tid % THREADS_I: split, the
    reads of l_a and l_b get exact ratios (test_brute_force.py holds them against the
    trace) instead of reuse-unpredictable."""
    program, library = load_kernel(KERNELS / "matmul" / f"{version}.mcpl")
    function = program.main.functions[-1]
    facts = build_facts(function, pipeline.check(program, library), library.get(function.hwd))
    tiles = [f for f in find_reuse(facts) if f.access.binding.root.name in ("l_a", "l_b")]
    assert {f.access.binding.root.name for f in tiles} == {"l_a", "l_b"}
    assert all(isinstance(f, RatioReuse) and f.exact for f in tiles)
