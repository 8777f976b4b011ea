"""The warp analyses of the GPU leaves (fermi, hopper): lines per warp, bank-conflict
degree and divergence, for the active lanes of guarded statements, checked against a
brute-force trace (brute.py) of the first block: the trace's accesses at one site,
grouped into warps, give the lines and bank words that mcl.feedback.lockstep must
report, computed here without it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from brute import Trace, Tracer
from warp_trace import (
    LINE,
    conflict_degree,
    count_lines,
    find_message,
    least_lines,
    numeric_values,
    warp_addresses,
)

from mcl import pipeline
from mcl.feedback.facts.kernel import build_facts
from mcl.feedback.messages import Message
from mcl.feedback.registry import analyse
from mcl.hdl.library import default_library
from mcl.mcpl import ast
from mcl.mcpl.loader import load_program
from mcl.mcpl.printer import print_expr

# A halo tile: the interior loaded by every thread, the top row by 7 threads of warp 0
# (5 apart), the bottom row by the last warp only (`ty == BH - 1`), read back twice.
HALO = """
LEVEL void halo(int h, int w, global float[h + 2, w + 2] a, global float[h, w] b) {
  foreach (int bi in h / 8 blocks) {
    foreach (int bj in w / 32 blocks) {
      shared float[10][72] tile;
      foreach (int ty in 8 warps) {
        foreach (int tx in 32 threads) {
          tile[ty + 1][tx + 1] = a[bi * 8 + ty + 1, bj * 32 + tx];
          if (ty == 0 && tx < 7) {
            tile[0][tx * 5] = a[bi * 8, bj * 32 + tx * 5];
          }
          if (ty == 8 - 1) {
            tile[9][tx] = a[bi * 8 + 9, bj * 32 + tx];
          }
          barrier(shared);
          b[bi * 8 + ty, bj * 32 + tx] = tile[ty][tx] + tile[ty + 2][tx * 2 + 1];
        }
      }
    }
  }
}
"""

# An unpadded tile transpose: the column read tile[tx][ty] is a 32-way conflict; a
# guarded one (the lanes tx < 4 only) is a 4-way one.
TRANSPOSE = """
LEVEL void transpose(int n, global float[n, n] dst, global float[n, n] src) {
  foreach (int bi in n / 32 blocks) {
    foreach (int bj in n / 32 blocks) {
      shared float[32][32] tile;
      foreach (int ty in 32 warps) {
        foreach (int tx in 32 threads) {
          tile[ty][tx] = src[bi * 32 + ty, bj * 32 + tx];
          barrier(shared);
          dst[bj * 32 + ty, bi * 32 + tx] = tile[tx][ty];
          if (tx < 4) {
            dst[bj * 32 + ty, bi * 32 + tx] = tile[tx][31 - ty] + 1.0;
          }
        }
      }
    }
  }
}
"""

# Odd and even lanes on different paths; a branch on the warp index is uniform.
ODD_EVEN = """
LEVEL void oddeven(int n, global float[n] dst, global float[n] src) {
  foreach (int b in n / 256 blocks) {
    foreach (int w in 8 warps) {
      foreach (int t in 32 threads) {
        int i = b * 256 + w * 32 + t;
        if (t % 2 == 0) {
          dst[i] = src[i] * 2.0;
        } else {
          dst[i] = src[i] + 1.0;
        }
        if (w < 4) {
          dst[i] = dst[i] + 1.0;
        }
      }
    }
  }
}
"""


@pytest.fixture(scope="module")
def library():
    return default_library()


def _load(tmp_path: Path, source: str, level: str, library):
    path = tmp_path / f"k_{level}.mcpl"
    path.write_text(source.replace("LEVEL", level))
    program = load_program(path, (), library)
    function = program.main.functions[0]
    return program, function, library.get(function.hwd)


def _feedback(program, function, hwd, sizes) -> list[Message]:
    return analyse(function, pipeline.check(program, default_library()), hwd, sizes,
                   only=["functions"])


def _trace(program, function, hwd, sizes) -> Trace:
    rng = np.random.default_rng(1)
    args: dict = dict(sizes)
    for p in function.params:
        if isinstance(p.type, ast.ArrayType):
            shape = tuple(int(eval(print_expr(d), {}, dict(sizes)))  # noqa: S307
                          for g in p.type.dims for d in g)
            args[p.name] = rng.random(shape)
    return Tracer(program, hwd).run(function, args)


def _check_accesses(tmp_path, source, level, sizes, library, sites) -> list[Message]:
    """For each (text, mode, banked) site: the reported lines / conflict degree and
    active lanes are those of the worst warp of the brute-force trace."""
    program, function, hwd = _load(tmp_path, source, level, library)
    messages = _feedback(program, function, hwd, sizes)
    facts = build_facts(function, pipeline.check(program, library), hwd)
    trace = _trace(program, function, hwd, sizes)
    for text, mode, banked in sites:
        warps = warp_addresses(trace, facts, text, mode)
        assert warps, text
        kind = "load" if mode == "r" else "store"
        if banked:
            degree, lanes = max((conflict_degree(a), len(a)) for a in warps.values())
            message = find_message(messages, "bank-conflict", f"{kind} of {text} ")
            if degree == 1:
                assert message is None, message
            else:
                assert message is not None, (text, degree)
                assert numeric_values(message)["conflict_degree"] == degree
                assert numeric_values(message)["active_lanes"] == lanes
        else:
            size = LINE if level == "fermi" else 32  # hopper moves 32 B sectors
            worst = max(warps.values(), key=lambda a: count_lines(a, size) - least_lines(a, size))
            lines, minimum = count_lines(worst, size), least_lines(worst, size)
            message = find_message(messages, "uncoalesced", f"{kind} of {text} ")
            if lines == minimum:
                assert message is None, message
            else:
                assert message is not None, (text, lines, minimum)
                v = numeric_values(message)
                assert (v["lines"], v["minimum_lines"], v["active_lanes"]) == (
                    lines, minimum, len(worst))
    return messages


HALO_SITES = [("a[bi * 8 + ty + 1, bj * 32 + tx]", "r", False),
              ("a[bi * 8, bj * 32 + tx * 5]", "r", False),
              ("a[bi * 8 + 9, bj * 32 + tx]", "r", False),
              ("tile[0][tx * 5]", "w", True),
              ("tile[9][tx]", "w", True),
              ("tile[ty + 2][tx * 2 + 1]", "r", True),
              ("b[bi * 8 + ty, bj * 32 + tx]", "w", False)]


@pytest.mark.parametrize("level", ["fermi", "hopper"])
@pytest.mark.parametrize("w", [64, 96, 126])
def test_guarded_halo_loads_count_only_their_active_lanes(tmp_path, library, level, w):
    messages = _check_accesses(tmp_path, HALO, level, {"h": 16, "w": w}, library,
                               HALO_SITES)
    top = find_message(messages, "uncoalesced", "a[bi * 8, bj * 32 + tx * 5]")
    if w == 126 and level == "fermi":  # rows of 128 floats: 7 lanes' 31 floats, one line
        assert top is None
    # the stride-5 store of 7 lanes: words 0, 5, ..., 30 fall in 7 different banks
    assert find_message(messages, "bank-conflict", "tile[0][tx * 5]") is None


@pytest.mark.parametrize("level", ["fermi", "hopper"])
def test_unpadded_transpose_is_a_32_way_conflict_and_a_guard_limits_it(tmp_path, library,
                                                                       level):
    sites = [("tile[tx][ty]", "r", True), ("tile[ty][tx]", "w", True),
             ("tile[tx][31 - ty]", "r", True),
             ("src[bi * 32 + ty, bj * 32 + tx]", "r", False)]
    messages = _check_accesses(tmp_path, TRANSPOSE, level, {"n": 64}, library, sites)
    conflicts = sorted(numeric_values(m)["conflict_degree"] for m in messages
                       if m.code == "bank-conflict")
    # as the trace says: the unguarded column read is 32-way, the one under tx < 4 4-way
    # estimated gain: per warp, the row store takes 1 pass of the banks, the column read
    # 32 and the guarded read 4 (its 4 lanes): 31 and 3 of the 37 passes are the conflicts
    gains = sorted(numeric_values(m)["transactions_saved"] for m in messages
                   if m.code == "bank-conflict")
    assert gains == pytest.approx([3 / 37, 31 / 37])
    assert all(m.severity.value == "suggestion" for m in messages
               if m.code == "bank-conflict")
    assert conflicts == [4, 32]


@pytest.mark.parametrize("level", ["fermi", "hopper"])
def test_odd_and_even_lanes_diverge_and_a_branch_on_the_warp_does_not(tmp_path, library,
                                                                      level):
    program, function, hwd = _load(tmp_path, ODD_EVEN, level, library)
    sizes = {"n": 512}
    messages = [m for m in _feedback(program, function, hwd, sizes)
                if m.code == "divergence"]
    facts = build_facts(function, pipeline.check(program, library), hwd)
    trace = _trace(program, function, hwd, sizes)
    then = warp_addresses(trace, facts, "src[i]", "r")  # both branches read src[i]: all lanes
    doubled = {w: [a for a in addresses if (a // 4) % 2 == 0] for w, addresses in
               then.items()}  # the lanes whose element is even ran the then-branch
    (message,) = messages
    assert message.span.line == 7 and message.severity.value == "suggestion"
    v = numeric_values(message)
    assert v["lanes_then"] == len(doubled[0]) == 16 and v["lanes_else"] == 16
    assert v["lane_efficiency"] == pytest.approx(0.5)
    # the branch on w < 4: every warp's lanes agree (the trace: warps 0-3 ran it, all
    # 32 lanes each, and warps 4-7 not at all)
    added = warp_addresses(trace, facts, "dst[i]", "r")
    assert sorted(added) == [0, 1, 2, 3] and {len(a) for a in added.values()} == {32}


@pytest.mark.parametrize("level", ["fermi", "hopper"])
@pytest.mark.parametrize(("h", "w"), [(16, 64), (24, 96)])
def test_halo_rows_are_counted_for_the_units_that_load_them(tmp_path, library, level, h, w):
    """`ty == 0 && tx < 7` and the last-row guard `ty == 8 - 1` are counted exactly (the
    brute force agrees on every count and reuse figure); the loads that fill the shared
    tile are neither reuse nor a candidate for shared memory."""
    import oracle

    program, function, hwd = _load(tmp_path, HALO, level, library)
    sizes = {"h": h, "w": w}
    facts = build_facts(function, pipeline.check(program, library), hwd)
    trace = _trace(program, function, hwd, sizes)
    problems = (oracle.check_executions(facts, trace, sizes)
                + oracle.check_data_accesses(facts, trace, sizes)
                + oracle.check_reuse(facts, trace, sizes))
    assert not problems, problems
    messages = analyse(function, pipeline.check(program, library), hwd, sizes)
    assert not [m for m in messages if m.code == "opstats-approximate"]
    fills = [m for m in messages if m.code in ("memory-faster-space", "reuse-independent")
             and m.span is not None and m.span.line in (7, 9, 12)]
    assert not fills, fills
    (memory,) = [m for m in messages if m.code == "opstats-memory" and "global" in m.text]
    blocks = (h // 8) * (w // 32)
    assert numeric_values(memory)["loads"] == blocks * (256 + 7 + 32) == sum(
        n for k, n in trace.per_slot().items()
        if trace.slots[k].param == "a" and "r" in trace.slots[k].mode)


# Each warp reads 4 rows of 8 floats of a (4 lines of 128 B, but 4 sectors of 32 B: all
# bytes used), and each thread stores and reads VEC = 4 neighbouring floats in a loop.
VECTORS = """
LEVEL void vectors(int n, global float[n, 64] a, global float[n, 128] c,
                   global float[n] d) {
  foreach (int b in n / 4 blocks) {
    shared float[1024] tile;
    foreach (int w in 1 warps) {
      foreach (int t in 32 threads) {
        float x = a[b * 4 + t / 8, t % 8];
        for (int v = 0; v < 4; v++) {
          tile[t * 4 + v] = x;
          c[b * 4, t * 4 + v] = x;
        }
        barrier(shared);
        float s = 0.0;
        for (int v = 0; v < 4; v++) {
          s += tile[t * 8 + v] + tile[t * 32 + v];
        }
        d[b * 4 + t % 4] = s;
      }
    }
  }
}
"""


def _lanes(trace: Trace, facts, text: str, mode: str) -> list[tuple[int, int, int]]:
    """(lane, iteration of the innermost for-loop, byte address) of warp 0 of block 0."""
    loops = {id(x.node): x for x in facts.loops}
    nodes = {id(a.node) for a in facts.accesses if print_expr(a.node) == text}
    out = []
    for n, (slot, index, values) in enumerate(trace.log):
        site = trace.slots[slot]
        if site.node not in nodes or mode not in site.mode:
            continue
        at = {loops[k].name: v for k, v in zip(site.loops, values, strict=True)}
        if at["b"] or at["w"]:
            continue
        array = trace.memory[n][0]
        out.append((at["t"], at.get("v", 0),
                    int(np.ravel_multi_index(index, array.shape)) * 4))
    return out


def _units(addresses: list[int], size: int) -> int:
    return len({b // size for a in addresses for b in (a, a + 3)})


@pytest.mark.parametrize("level", ["fermi", "hopper"])
def test_lines_sectors_and_wide_shared_accesses(tmp_path, library, level):
    program, function, hwd = _load(tmp_path, VECTORS, level, library)
    sizes = {"n": 8}
    messages = _feedback(program, function, hwd, sizes)
    facts = build_facts(function, pipeline.check(program, library), hwd)
    trace = _trace(program, function, hwd, sizes)
    size = 128 if level == "fermi" else 32  # fermi's L1 lines, hopper's sectors
    rows = [a for _, _, a in _lanes(trace, facts, "a[b * 4 + t / 8, t % 8]", "r")]
    wanted = (_units(rows, size), -(-len(rows) * 4 // size))
    found = find_message(messages, "uncoalesced", "a[b * 4 + t / 8, t % 8]")
    assert wanted == ((4, 1) if level == "fermi" else (4, 4))
    if wanted[0] == wanted[1]:
        assert found is None
    else:
        assert found is not None
        assert (numeric_values(found)["lines"], numeric_values(found)["minimum_lines"]) == wanted
    # c[b * 4, t * 4 + v]: one iteration of v leaves 3 of 4 floats of each line unused;
    # the 4 iterations fill every line, as the trace's union shows, but a store is written
    # through request by request: each iteration's request is judged alone (the device's
    # L2 write sectors of such stores, docs/validation.md)
    stores = _lanes(trace, facts, "c[b * 4, t * 4 + v]", "w")
    first = [a for _, v, a in stores if v == 0]
    every = [a for _, _, a in stores]
    wanted = (_units(first, size), -(-len(first) * 4 // size))
    assert wanted[0] > wanted[1]
    assert _units(every, size) == -(-len(every) * 4 // size)
    found = find_message(messages, "uncoalesced", "c[b * 4, t * 4 + v]")
    assert found is not None and numeric_values(found)["store"] == 1
    assert (numeric_values(found)["lines"], numeric_values(found)["minimum_lines"]) == wanted
    # the VEC = 4 floats of a thread are one 128-bit access, served a quarter warp (8
    # threads) at a time: the worst bank of any quarter
    for text, scalar in (("tile[t * 4 + v]", 4), ("tile[t * 8 + v]", 8),
                         ("tile[t * 32 + v]", 32)):
        accesses = _lanes(trace, facts, text, "w" if text == "tile[t * 4 + v]" else "r")
        assert conflict_degree([a for _, v, a in accesses if v == 0]) == scalar
        quarters = max(conflict_degree([a for lane, _, a in accesses if q <= lane < q + 8])
                       for q in range(0, 32, 8))
        found = find_message(messages, "bank-conflict", f"of {text} ")
        if quarters == 1:
            assert found is None, found
        else:
            assert found is not None and numeric_values(found)["conflict_degree"] == quarters
    assert {numeric_values(m)["conflict_degree"] for m in messages if m.code == "bank-conflict"
            } == {2, 8}


# Each thread reads 10 neighbouring words of a shared row from word 2 t + START: from an
# even word the compiler reads them as five 64-bit loads (convolution hopper_v2's
# `l_a[..][COLS * tx + k]`, all 64-bit in Nsight Compute's access sizes), from an odd one
# it cannot, and each 4-byte read of the warp hits every second bank twice.
PAIRS = """
LEVEL void pairs(int n, global float[n, 32] out) {
  foreach (int b in n blocks) {
    shared float[96] row;
    foreach (int w in 1 warps) {
      foreach (int t in 32 threads) {
        for (int r = 0; r < 3; r++) {
          row[r * 32 + t] = 1.0;
        }
        barrier(shared);
        float s = 0.0;
        for (int v = 0; v < 10; v++) {
          s += row[2 * t + START + v];
        }
        out[b, t] = s;
      }
    }
  }
}
"""


@pytest.mark.parametrize("start", [0, 1])
def test_neighbouring_words_from_an_aligned_word_are_read_in_wide_accesses(tmp_path, library,
                                                                           start):
    source = PAIRS.replace("START", str(start))
    program, function, hwd = _load(tmp_path, source, "hopper", library)
    sizes = {"n": 2}
    messages = _feedback(program, function, hwd, sizes)
    facts = build_facts(function, pipeline.check(program, library), hwd)
    trace = _trace(program, function, hwd, sizes)
    text = f"row[2 * t + {start} + v]"
    reads = _lanes(trace, facts, text, "r")
    assert len(reads) == 32 * 10
    if start == 0:  # five 64-bit loads, each served a half warp at a time
        degree = max(conflict_degree([a for lane, k, a in reads
                                      if k // 2 == pair and half <= lane < half + 16])
                     for pair in range(5) for half in (0, 16))
    else:  # ten 4-byte loads
        degree = max(conflict_degree([a for _, k, a in reads if k == one])
                     for one in range(10))
    assert degree == (1 if start == 0 else 2)
    found = find_message(messages, "bank-conflict", "of row[")
    if degree == 1:
        assert found is None, found
    else:
        assert found is not None and numeric_values(found)["conflict_degree"] == degree


def test_a_conflict_that_saves_under_three_percent_is_a_fact(library):
    """gesummv hopper (v2): the last steps of its row reduction read l_tmp with 2 active
    threads, 2 ways: real, but a sliver of the shared-memory traffic of the kernel."""
    from mcl.resources import kernels_dir

    path = kernels_dir() / "gesummv" / "hopper_v2.mcpl"
    program = load_program(path, (), library)
    function = program.main.functions[0]
    messages = [m for m in _feedback(program, function, library.get(function.hwd),
                                     {"n": 4096}) if m.code == "bank-conflict"]
    assert messages
    for m in messages:
        assert m.severity.value == "info" and numeric_values(m)["transactions_saved"] < 0.03
        assert "fixing it saves under 1% of the kernel's shared memory" in m.text


# A tree reduction whose steps `s` below the warp's size split warp 0 (`tid < s`), a loop
# whose if/else splits every warp in all but its first iteration (`tid % 8 < 2 * k`), and
# a loop whose branch does not depend on it (`tid % 2 == 0`: alike in every iteration).
STEPS = """
LEVEL void steps(int n, global float[n] x, global float[n / 256] out,
                 global float[n] hits, global float[n] misses) {
  foreach (int b in n / 256 blocks) {
    shared float[256] tmp;
    foreach (int w in 8 warps) {
      foreach (int t in 32 threads) {
        int tid = w * 32 + t;
        tmp[tid] = x[b * 256 + tid];
        barrier(shared);
        for (int s = 128; s > 0; s >>= 1) {
          if (tid < s) {
            tmp[tid] += tmp[tid + s];
          }
          barrier(shared);
        }
        for (int k = 0; k < 4; k++) {
          if (tid % 8 < 2 * k) {
            hits[b * 256 + tid] = tmp[0];
          } else {
            misses[b * 256 + tid] = tmp[0];
          }
        }
        for (int r = 0; r < 4; r++) {
          if (tid % 2 == 0) {
            x[b * 256 + tid] = tmp[r];
          }
        }
        if (tid == 0) {
          out[b] = tmp[0];
        }
      }
    }
  }
}
"""


def _lanes_per_step(trace, facts, text: str) -> dict[tuple[int, tuple], int]:
    """From the trace: per (warp, loop values) of the first block, the lanes that ran the
    access printed `text` (the lanes on the path that holds it)."""
    return {key: len(a) for key, a in
            warp_addresses(trace, facts, text, "r" if "+ s" in text else "w",
                           by_iteration=True).items()}


@pytest.mark.parametrize("level", ["fermi", "hopper"])
def test_the_steps_of_a_loop_that_split_a_warp_are_counted(tmp_path, library, level):
    """Each iteration of the loops around a branch is decided lane by lane: the divergent
    iterations, their loop values and the idle lane slots are those of the brute-force
    trace (a lane is idle in a warp that splits: while the then-branch runs, if it skips
    it; with an else, during the path it does not take)."""
    program, function, hwd = _load(tmp_path, STEPS, level, library)
    sizes = {"n": 256}
    facts = build_facts(function, pipeline.check(program, library), hwd)
    trace = _trace(program, function, hwd, sizes)
    messages = {m.span.line: m for m in _feedback(program, function, hwd, sizes)
                if m.code == "divergence"}
    warps, lanes = 8, 32
    reduce, pick, alike, last = (next(n for n, text in enumerate(STEPS.splitlines(), 1)
                                      if f"if ({c})" in text)
                                 for c in ("tid < s", "tid % 8 < 2 * k", "tid % 2 == 0",
                                           "tid == 0"))

    tree = _lanes_per_step(trace, facts, "tmp[tid + s]")  # (warp, (s,)) -> lanes adding
    steps = [128 >> k for k in range(8)]
    split = {s: [n for (w, (v,)), n in tree.items() if v == s and 0 < n < lanes]
             for s in steps}
    divergent = [s for s in steps if split[s]]
    assert divergent == [16, 8, 4, 2, 1]  # warp 0 alone, once s is below 32
    v = numeric_values(messages[reduce])
    assert v["divergent_iterations"] == len(divergent) and v["iterations"] == len(steps)
    assert v["idle_lanes"] == sum(lanes - n for s in steps for n in split[s]) == 129
    assert (v["lanes_then"], v["lanes_else"]) == (16, 16)
    assert "(s = 16, 8, 4, 2, 1)" in messages[reduce].text

    hits = _lanes_per_step(trace, facts, "hits[b * 256 + tid]")  # (warp, (k,)) -> lanes
    both = [k for k in range(4) if any(0 < hits.get((w, (k,)), 0) < lanes
                                       for w in range(warps))]
    assert both == [1, 2, 3]
    v = numeric_values(messages[pick])
    assert v["divergent_iterations"] == len(both) and v["iterations"] == 4
    # an if/else: every lane of a split warp waits while the other path runs
    assert v["idle_lanes"] == warps * lanes * len(both)
    assert (v["lanes_then"], v["lanes_else"]) == (16, 16)
    assert messages[pick].severity.value == "suggestion"
    # `tid == 0` has no loop around it, and `tid % 2 == 0` does not depend on `r`: their
    # messages are as without loops, without iterations
    for line in (alike, last):
        assert "iterations" not in numeric_values(messages[line])
    assert (numeric_values(messages[alike])["lanes_then"],
            numeric_values(messages[alike])["lanes_else"]) == (16, 16)


SCAN = Path(__file__).resolve().parents[1] / "mcpl" / "barrier_kernels" / "blelloch_scan.mcpl"
# The shared accesses of the scan's sweeps: (text, mode, line)
SWEEPS = [("temp[bi]", "r", 21), ("temp[bi]", "w", 21), ("temp[ai]", "r", 21),
          ("temp[ai]", "r", 33), ("temp[ai]", "w", 34), ("temp[bi]", "r", 34),
          ("temp[bi]", "r", 35), ("temp[bi]", "w", 35)]


# The scan's loads and stores of a thread's two neighbouring words (offset to the lower):
# the compiler issues each pair as one 64-bit access.
PAIRED = {"temp[2 * tid]": 0, "temp[2 * tid + 1]": 4}
# The lines of each sweep: within one, a load (store) whose lanes' words lie one word from
# another load's (store's) of the same level is one 64-bit access with it (off = 1: ai =
# 2 * tid, bi = ai + 1), as the compiler issues them once it unrolls the levels.
SWEEP_LINES = ({21}, {33, 34, 35})


def _one_word_apart(found: dict, site: tuple, key: object) -> int | None:
    """Where another site of `site`'s sweep and mode has, at iteration `key`, each lane's
    word one word from this site's, with the lower 8-byte aligned: the offset to the lower
    (0 or -4), else None."""
    text, mode, line = site
    mine = found[site][key]
    for other, there in found.items():
        if other == site or other[1] != mode or \
                not any({line, other[2]} <= group for group in SWEEP_LINES):
            continue
        words = there.get(key, [])
        for offset in (0, -4):
            lower = [a + offset for a in mine]
            if len(words) == len(mine) and all(
                    b - a in (-4, 4) and min(a, b) == low and low % 8 == 0
                    for a, b, low in zip(mine, words, lower, strict=True)):
                return offset
    return None


def _paired_passes(lower: list[int]) -> float:
    """Passes over the banks per 4-byte access of a 64-bit request of the lanes' `lower`
    words and the words after them: each half warp's 32 words at once."""
    halves = [conflict_degree([w for a in lower[h:h + 16] for w in (a, a + 4)])
              for h in (0, 16) if lower[h:h + 16]]
    return sum(halves) / len(halves)


def test_a_scans_conflicts_are_surveyed_over_every_level(library):
    """A work-efficient scan's `ai = off * (2 * tid + 1) - 1`: each level of off has its own
    conflict (2-, 4-, 8-, 16-way). The message gives the worst level and the wavefronts
    per request over every level's requests, and the time model's share saved is the
    extra wavefronts of the access over all shared wavefronts: each figure as the
    brute-force trace's warps count them, level by level. A thread's two neighbouring
    words are one 64-bit access, served a half warp at a time: no conflict."""
    program = load_program(SCAN, (), library)
    function = program.main.functions[0]
    hwd = library.get(function.hwd)
    sizes = {"nb": 2}
    messages = _feedback(program, function, hwd, sizes)
    facts = build_facts(function, pipeline.check(program, library), hwd)
    trace = _trace(program, function, hwd, sizes | {"N": 512})  # (N: the array shapes')
    # every shared request of one block: its degree, by site
    requests = {}
    sites = {(print_expr(a.node), a.node.span.line) for a in facts.accesses
             if print_expr(a.node).startswith("temp[")}
    found = {(text, mode, line): warp_addresses(trace, facts, text, mode, by_iteration=True,
                                                line=line)
             for text, line in sites for mode in "rw"}
    found = {site: words for site, words in found.items() if words}
    for (text, mode, line), words in found.items():
        if text in PAIRED:
            requests[(text, mode, line)] = {
                k: _paired_passes([x - PAIRED[text] for x in a]) for k, a in words.items()}
            continue
        requests[(text, mode, line)] = {}
        for k, a in words.items():
            offset = _one_word_apart(found, (text, mode, line), k)
            requests[(text, mode, line)][k] = conflict_degree(a) if offset is None or \
                conflict_degree(a) == 1 else _paired_passes([x + offset for x in a])
    for text in PAIRED:  # the neighbouring words, one 64-bit access: no conflict
        assert {d for (t, _, _), r in requests.items() if t == text for d in r.values()} == {1}
        assert not [m for m in messages if m.code == "bank-conflict" and f" {text} " in m.text]
    total = sum(sum(r.values()) for r in requests.values())
    seen_levels = set()
    for text, mode, line in SWEEPS:
        degrees = requests[(text, mode, line)]
        worst = max(degrees.values())
        first = next(k for k, d in degrees.items() if d == worst)  # in execution order
        average = sum(degrees.values()) / len(degrees)
        kind = "load" if mode == "r" else "store"
        message = [m for m in messages if m.code == "bank-conflict" and m.span.line == line
                   and m.text.startswith(f"{kind} of {text} ")]
        assert len(message) == 1, (text, mode, line)
        values = numeric_values(message[0])
        assert values["conflict_degree"] == worst
        assert values["wavefronts_per_request"] == pytest.approx(round(average, 2))
        assert f"at off = {first[1][0]} (the worst of the 9 iterations" in message[0].text
        extra = sum(d - 1 for d in degrees.values())
        assert values["transactions_saved"] == pytest.approx(extra / total, rel=1e-6)
        seen_levels |= {d for d in degrees.values()}
    assert {2, 4, 8, 16} <= seen_levels


# Doubles: each lane reads two banks. Neighbouring doubles of 32 lanes are 64 words, but a
# 64-bit request is served a half warp at a time (16 lanes, 32 words): no conflict;
# every second double puts a half warp's 32 words in 16 banks, 2 ways.
DOUBLES = """
hopper void doubles(int n, global double[n, 64] out) {
  foreach (int b in n blocks) {
    shared double[128] row;
    foreach (int w in 2 warps) {
      foreach (int t in 32 threads) {
        row[w * 32 + t] = 1.0;
        row[64 + w * 32 + t] = 2.0;
        barrier(shared);
        out[b, w * 32 + t] = row[2 * (w * 32 + t)] + row[w * 32 + t];
      }
    }
  }
}
"""


def test_64_bit_accesses_are_served_a_half_warp_at_a_time(tmp_path, library):
    path = tmp_path / "doubles.mcpl"
    path.write_text(DOUBLES)
    program = load_program(path, (), library)
    function = program.main.functions[0]
    hwd = library.get(function.hwd)
    messages = _feedback(program, function, hwd, {"n": 2})
    facts = build_facts(function, pipeline.check(program, library), hwd)
    trace = _trace(program, function, hwd, {"n": 2})
    for text, mode in (("row[w * 32 + t]", "w"), ("row[64 + w * 32 + t]", "w"),
                       ("row[2 * (w * 32 + t)]", "r"), ("row[w * 32 + t]", "r")):
        # (warp_addresses counts 4 bytes an element: a double's byte address is twice it)
        warps = warp_addresses(trace, facts, text, mode)
        assert all(len(a) == 32 for a in warps.values())
        degree = max(conflict_degree([2 * a + k for a in addresses[half:half + 16]
                                      for k in (0, 4)])
                     for addresses in warps.values() for half in (0, 16))
        assert max(conflict_degree([2 * a for a in addresses]) for addresses in
                   warps.values()) == (4 if text.startswith("row[2") else 2)  # 4 B a lane
        kind = "load" if mode == "r" else "store"
        found = [m for m in messages if m.code == "bank-conflict"
                 and m.text.startswith(f"{kind} of {text} ")]
        if degree == 1:
            assert found == []
        else:
            assert len(found) == 1 and numeric_values(found[0])["conflict_degree"] == degree
    assert [numeric_values(m)["conflict_degree"] for m in messages
            if m.code == "bank-conflict"] == [2]


# A shared read whose address depends on a loop of more iterations than the survey
# follows: the first (k = 0, every lane on word 0) has no conflict, later ones do.
MANY = """
hopper void many(int n, global float[n, 32] out) {
  foreach (int b in n blocks) {
    shared float[2048] row;
    foreach (int w in 1 warps) {
      foreach (int t in 32 threads) {
        for (int r = 0; r < 64; r++) {
          row[r * 32 + t] = 1.0;
        }
        barrier(shared);
        float s = 0.0;
        for (int k = 0; k < 300; k++) {
          s += row[(k % 64) * t];
        }
        out[b, t] = s;
      }
    }
  }
}
"""


def test_conflicts_in_iterations_not_followed_are_not_decided(tmp_path, library):
    """Neither a conflict nor the promise of none: the message says which loop's
    iterations were not examined; the store loop's 64 iterations are all followed."""
    program, function, hwd = _load(tmp_path, MANY, "hopper", library)
    messages = _feedback(program, function, hwd, {"n": 2})
    facts = build_facts(function, pipeline.check(program, library), hwd)
    trace = _trace(program, function, hwd, {"n": 2})
    reads = warp_addresses(trace, facts, "row[k % 64 * t]", "r", by_iteration=True)
    degrees = {k[1][0]: conflict_degree(a) for k, a in reads.items()}
    assert degrees[0] == 1 and max(degrees.values()) == 32  # (k = 0, and k = 32)
    stores = warp_addresses(trace, facts, "row[r * 32 + t]", "w", by_iteration=True)
    assert {conflict_degree(a) for a in stores.values()} == {1}
    assert [m.code for m in messages if m.code in (
        "bank-conflict", "memory-access-optimal", "warp-access-unknown")] == [
        "warp-access-unknown"]
    unknown = find_message(messages, "warp-access-unknown", "row[k % 64 * t]")
    assert unknown is not None and unknown.severity.value == "info"
    assert "only the first iteration of loop 'k'" in unknown.text
