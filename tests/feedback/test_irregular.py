"""Irregular-access feedback (mcl/feedback/analyses/irregular.py) against brute-force counts: the
traced kernels' data-dependent stores (distinct addresses, writers per copy) and loops
with data-dependent bounds (stride inside the loop, row-length statistics, lock-step
efficiency)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import pytest
from brute import Tracer
from conftest import KERNELS, by_code, feedback, feedback_source, load_kernel

from mcl import pipeline
from mcl.feedback.analyses.irregular import data_loops, element_stride
from mcl.feedback.facts.contention import store_contention
from mcl.feedback.facts.kernel import build_facts
from mcl.feedback.values import evaluate

HISTOGRAM = KERNELS / "histogram" / "perfect.mcpl"
SPMV = KERNELS / "spmv" / "perfect.mcpl"

# A per-block copy in `local`, as the privatised gpu versions keep it; the copy is added
# into hist once per block.
PRIVATE = """
const int T = 4;
gpu void histogram(int n, dev int[8] hist, dev int[n] values) {
  foreach (int b in (n + T - 1) / T blocks) {
    local int[8] l_hist;
    foreach (int t in T threads) {
      l_hist[t % 8] = 0;
      barrier(local);
      int i = b * T + t;
      if (i < n) {
        atomicAdd(l_hist[values[i]], 1);
      }
      barrier(local);
      if (t < 8) {
        atomicAdd(hist[t], l_hist[t]);
      }
    }
  }
}
"""


def _function(program: Any) -> Any:
    module = getattr(program, "main", program)  # a loaded program or a lone module
    return module.functions[-1]


def _store_log(program: Any, library: Any, args: dict[str, Any], array: str
               ) -> tuple[Any, list[tuple[tuple[int, ...], tuple[int, ...]]], Any]:
    function = _function(program)
    hwd = library.get(function.hwd)
    facts = build_facts(function, pipeline.check(program, library), hwd)
    trace = Tracer(program, hwd).run(function, args)
    (acc,) = [a for a in facts.accesses if a.writes and a.binding.name == array
              and store_contention(facts, a) is not None]
    sites = trace.sites(id(acc.node))
    log = [entry for slot, entries in sites if "w" in slot.mode for entry in entries]
    return facts, log, acc


def _copies(facts: Any, acc: Any, log: list) -> dict[tuple[int, ...], set[tuple[int, ...]]]:
    """Brute force: units writing into each copy of the array. A copy is named by the
    values of the loops outside the array's declaration (none for a parameter); a unit by
    the values of all foreach loops around the store."""
    loops = {id(x.node): x for x in facts.loops}
    declared = {id(x.node) for x in acc.binding.root.loops}
    out: dict[tuple[int, ...], set[tuple[int, ...]]] = defaultdict(set)
    order = [id(x.node) for x in acc.item.loops]
    for _index, values in log:
        by_loop = dict(zip(order, values, strict=True))
        copy = tuple(v for k, v in by_loop.items() if k in declared)
        unit = tuple(v for k, v in by_loop.items() if loops[k].kind == "foreach")
        out[copy].add(unit)
    return out


@pytest.mark.parametrize("level", [None, "gpu", "mic", "x86_avx512"])
def test_histogram_distinct_addresses_and_writers_match_a_trace(level: str | None) -> None:
    program, library = load_kernel(HISTOGRAM, level)
    h, w = 5, 61  # 305 values: every bucket of 256 is hit at least once
    image = (np.arange(h * w, dtype=np.int32) % 256).reshape(h, w)
    args = {"h": h, "w": w, "hist": np.zeros(256, np.int32), "image": image}
    facts, log, acc = _store_log(program, library, args, "hist")
    c = store_contention(facts, acc, {"h": h, "w": w})
    assert c is not None and c.atomic
    sizes = {"h": h, "w": w}
    assert evaluate(c.distinct, sizes).numeric == len({index for index, _ in log}) == 256
    (units,) = _copies(facts, acc, log).values()
    # The analysis counts the units of the translated foreach loops, including those that
    # the guards of the last partial block turn away: an upper bound, equal for h * w.
    writers = evaluate(c.writers, sizes).numeric
    assert writers >= len(units) == h * w
    assert writers < h * w + 1024 * h  # at most one partial block per row


def test_privatised_copy_per_block_matches_a_trace(library: Any) -> None:
    from mcl.mcpl.parse import parse_source

    program = parse_source(PRIVATE)
    n = 23
    values = np.arange(n, dtype=np.int32) % 8
    args = {"n": n, "hist": np.zeros(8, np.int32), "values": values}
    facts, log, acc = _store_log(program, library, args, "l_hist")
    c = store_contention(facts, acc, {"n": n})
    assert c is not None
    copies = _copies(facts, acc, log)
    assert len(copies) == -(-n // 4)  # a copy per block
    assert evaluate(c.writers, {"n": n}).numeric == max(len(u) for u in copies.values()) == 4
    assert evaluate(c.distinct, {}).numeric == 8
    assert all(len({i for i, v in log if v[:1] == copy}) <= 8 for copy in copies)
    # no faster space than local below a block: nothing more to propose
    messages = feedback_source(PRIVATE, "gpu", {"n": n})
    assert not by_code(messages, "store-privatise")
    assert by_code(messages, "store-contention")


def test_gpu_proposes_a_histogram_per_block_in_local() -> None:
    (msg,) = by_code(feedback(HISTOGRAM, "gpu", values={"h": 16384, "w": 16384}),
                     "store-privatise")
    assert "copy per block in local" in msg.text
    assert msg.value_map["sharers"].numeric == 1024
    assert msg.value_map["copy_bytes"].numeric == 1024
    assert msg.value_map["merge_updates"].numeric < msg.value_map["updates"].numeric


def test_mic_proposes_a_copy_per_thread_and_says_it_does_not_pay_with_one_element() -> None:
    (msg,) = by_code(feedback(HISTOGRAM, "mic", values={"h": 4096, "w": 4096}),
                     "store-privatise")
    assert "copy per thread in dev" in msg.text and msg.value_map["sharers"].numeric == 16
    assert "several elements" in msg.text
    assert msg.value_map["merge_updates"].numeric > msg.value_map["updates"].numeric


def test_concurrent_writers_are_the_resident_threads() -> None:
    (msg,) = by_code(feedback(HISTOGRAM, "fermi", values={"h": 16384, "w": 16384}),
                     "store-contention")
    # mcl/feedback/facts/resident.py: 15 SMs x 48 warps x 32 threads (not the 480 ALUs)
    assert msg.value_map["concurrent"].numeric == 15 * 48 * 32
    assert msg.value_map["per_address"].numeric == pytest.approx(15 * 48 * 32 / 256)


RACE = """
perfect void histogram(int n, main int[16] hist, main int[n] values) {
  foreach (int i in n threads) {
    hist[values[i]] += 1;
  }
}
"""


def test_a_data_dependent_update_without_atomics_is_a_race() -> None:
    (msg,) = by_code(feedback_source(RACE, values={"n": 100}), "store-race")
    assert msg.value_map["writers"].numeric == 100
    atomic = RACE.replace("hist[values[i]] += 1", "atomicAdd(hist[values[i]], 1)")
    assert not by_code(feedback_source(atomic, values={"n": 100}), "store-race")


# ----------------------------------------------------------------------------- spmv


def _csr(nrows: int, ncols: int, lengths: np.ndarray, rng: np.random.Generator
         ) -> dict[str, Any]:
    rowptr = np.zeros(nrows + 1, np.int32)
    np.cumsum(lengths, out=rowptr[1:])
    cols = np.concatenate([np.sort(rng.choice(ncols, size=n, replace=False))
                           for n in lengths]).astype(np.int32)
    nnz = int(rowptr[-1])
    return {"nrows": nrows, "ncols": ncols, "nnz": nnz, "y": np.zeros(nrows, np.float32),
            "rowptr": rowptr, "cols": cols, "vals": rng.uniform(-1, 1, nnz).astype(np.float32),
            "x": rng.uniform(-1, 1, ncols).astype(np.float32)}


def _row_lengths(kind: str, nrows: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "uniform":
        return rng.integers(2, 6, nrows)
    return np.minimum(rng.zipf(1.8, nrows), 40)  # power law: a few long rows


@pytest.mark.parametrize("kind", ["uniform", "power-law"])
@pytest.mark.parametrize("level", [None, "x86_avx512"])
def test_spmv_strides_and_row_statistics_match_a_trace(kind: str, level: str | None) -> None:
    rng = np.random.default_rng(7)
    nrows, ncols = 37, 41
    args = _csr(nrows, ncols, _row_lengths(kind, nrows, rng), rng)
    program, library = load_kernel(SPMV, level)
    function = _function(program)
    hwd = library.get(function.hwd)
    facts = build_facts(function, pipeline.check(program, library), hwd)
    trace = Tracer(program, hwd).run(function, args)
    (d,) = data_loops(facts)
    for array in ("vals", "cols"):
        (acc,) = [a for a in facts.accesses if a.binding.name == array]
        stride = element_stride(facts, acc, d.loop)
        (site,) = trace.sites(id(acc.node))
        runs: dict[tuple[int, ...], list[int]] = defaultdict(list)
        k = [id(x.node) for x in acc.item.loops].index(id(d.loop.node))
        for index, values in site[1]:
            runs[values[:k]].append(index[0])
        steps = {b - a for run in runs.values() for a, b in zip(run, run[1:], strict=False)}
        assert steps == {stride / 4}  # one element per iteration
    # row-length statistics of the trace, given as -D, against the analysis
    lengths = np.diff(args["rowptr"])
    trips = [len(run) for run in runs.values()]
    assert sorted(trips) == sorted(int(x) for x in lengths if x > 0)
    avg, top = float(lengths.mean()), int(lengths.max())
    values = {"nrows": nrows, "ncols": ncols, "nnz": args["nnz"],
              "iters_k": avg, "max_iters_k": top}
    (msg,) = by_code(feedback(SPMV, level, values=values), "loop-data-bounds-imbalance")
    assert msg.value_map["imbalance"].numeric == pytest.approx(top / avg)
    if level == "x86_avx512":
        # lanes of a thread run in lock-step: each group of 16 rows takes its longest
        # (the lanes past nrows of the last group idle for another reason: the tiling)
        groups = [lengths[g:g + 16] for g in range(0, nrows, 16)]
        busy = sum(int(g.sum()) for g in groups) / sum(len(g) * int(g.max()) for g in groups)
        assert msg.value_map["efficiency"].numeric <= busy + 1e-9
        assert "lock-step" in msg.text
    assert not by_code(feedback(SPMV, level, values=values), "values-unknown-name")


def test_the_imbalance_asks_for_the_average_and_the_maximum_by_name() -> None:
    (msg,) = by_code(feedback(SPMV, "gpu"), "loop-data-bounds-imbalance")
    assert msg.value_map["imbalance"].numeric is None
    assert "-D iters_k=" in (msg.hint or "") and "-D max_iters_k=" in (msg.hint or "")
    assert {"iters_k", "max_iters_k"} <= set(msg.value_map["imbalance"].needs)


def test_a_group_of_threads_per_row_reads_neighbouring_elements_as_the_trace() -> None:
    """spmv gpu (v2) at hopper: the 32 threads of a warp share a row, so they start at
    neighbouring non-zeros (the lane stride) and step by 32 elements (the loop stride)."""
    from mcl.feedback.analyses.irregular import lane_stride

    rng = np.random.default_rng(3)
    nrows, ncols = 19, 80
    args = _csr(nrows, ncols, rng.integers(30, 70, nrows), rng)
    program, library = load_kernel(KERNELS / "spmv" / "gpu_v2.mcpl", "hopper")
    function = _function(program)
    hwd = library.get(function.hwd)
    facts = build_facts(function, pipeline.check(program, library), hwd)
    (d,) = data_loops(facts)
    (acc,) = [a for a in facts.accesses if a.binding.name == "vals"]
    lane = next(x for x in acc.item.loops if x.group == "threads")
    assert lane not in d.varying
    trace = Tracer(program, hwd).run(function, args)
    order = [id(x.node) for x in acc.item.loops]
    at_lane, at_k = order.index(id(lane.node)), order.index(id(d.loop.node))
    by_warp: dict[tuple[int, ...], dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    for index, values in trace.sites(id(acc.node))[0][1]:
        others = values[:at_lane] + values[at_lane + 1:at_k]
        by_warp[others][values[at_lane]].append(index[0])
    lanes_apart = {b[0] - a[0] for lanes in by_warp.values()
                   for a, b in zip([lanes[t] for t in sorted(lanes)],
                                   [lanes[t] for t in sorted(lanes)][1:], strict=False)}
    loop_apart = {b - a for lanes in by_warp.values() for run in lanes.values()
                  for a, b in zip(run, run[1:], strict=False)}
    assert lanes_apart == {lane_stride(facts, acc, lane) / 4} == {1}
    assert loop_apart == {element_stride(facts, acc, d.loop) / 4} == {32}


SCATTER = """
const int NR_WARPS = 8;
hopper void scatter(int n, int m, global int[m] hist, global int[n] values) {
  foreach (int b in (n + 255) / 256 blocks) {
    foreach (int w in NR_WARPS warps) {
      foreach (int t in 32 threads) {
        int i = b * 256 + w * 32 + t;
        if (i < n) {
          atomicAdd(hist[values[i]], 1);
        }
      }
    }
  }
}
"""


@pytest.mark.parametrize("m", [1000, 1_000_000])
def test_no_privatised_copy_larger_than_the_space_that_would_hold_it(m: int) -> None:
    """A hopper kernel adds into m bins at data-dependent addresses: a copy of the bins
    per block in shared is proposed while its 4 * m bytes fit the description's shared
    memory, and not once they exceed it (4 MB in 228 KB would not launch); the
    contention's hint then says why."""
    from mcl.feedback.facts.hardware import space_capacity
    from mcl.hdl.library import default_library

    messages = feedback_source(SCATTER, "hopper", {"n": 1 << 22, "m": m})
    capacity = space_capacity(default_library().get("hopper"), "shared")
    assert capacity is not None
    fits = 4 * m <= capacity
    proposals = by_code(messages, "store-privatise")
    assert bool(proposals) == fits
    assert all(m_.value_map["copy_bytes"].numeric == 4 * m for m_ in proposals)
    hints = [m_.hint or "" for m_ in by_code(messages, "store-contention")]
    assert hints and all(("does not fit shared" in h) != fits for h in hints)


# ------------------------------------------------------- plain stores beside atomics

SPMV_TILES = KERNELS / "spmv" / "hopper_v2.mcpl"


def _small_tiles(text: str) -> str:
    """hopper (v2) with tiles of 2 warps x 3 non-zeros per thread, so that a trace of a
    few hundred non-zeros has rows that cross threads and tiles."""
    text = text.replace("const int NR_WARPS = 8;", "const int NR_WARPS = 2;")
    return text.replace("const int PER = 15;", "const int PER = 3;")


def _conflicts(text: str, args: dict[str, Any]) -> dict[str, set[int]]:
    """Brute force over a trace: the addresses of y that more than one unit of the tile
    kernel writes, by the kind of write that makes them a race: `update` (a read-modify-
    write without atomicAdd among them) and `store` (a plain store among them). Writes
    of one unit are ordered; atomicAdds alone are not a race."""
    from mcl.hdl.library import default_library
    from mcl.mcpl import ast
    from mcl.mcpl.parse import parse_source

    module = parse_source(text)
    function = module.functions[-1]
    atomics = {id(n.args[0]) for n in ast.walk(function)
               if isinstance(n, ast.Call) and n.func == "atomicAdd"}
    library = default_library()
    hwd = library.get(function.hwd)
    facts = build_facts(function, pipeline.check(module, library), hwd)
    tiles = next(x for x in facts.loops if x.kind == "foreach" and x.name == "tb")
    foreach = {id(x.node) for x in facts.loops if x.kind == "foreach"}
    trace = Tracer(module, hwd).run(function, args)
    writes: dict[int, list[tuple[tuple[int, ...], str]]] = defaultdict(list)
    for acc in facts.accesses:
        if acc.binding.name != "y" or not acc.writes or tiles not in acc.item.loops:
            continue
        for slot, entries in trace.sites(id(acc.node)):
            if "w" not in slot.mode:
                continue
            kind = ("atomic" if id(acc.node) in atomics else
                    "update" if "r" in slot.mode else "store")
            for index, values in entries:
                unit = tuple(v for k, v in zip(slot.loops, values, strict=True)
                             if k in foreach)
                writes[index[0]].append((unit, kind))
    out: dict[str, set[int]] = {"update": set(), "store": set()}
    for address, log in writes.items():
        if len({unit for unit, _ in log}) > 1:
            for kind in ("update", "store"):
                if any(k == kind for _, k in log):
                    out[kind].add(address)
    return out


def _power_law_csr() -> dict[str, Any]:
    rng = np.random.default_rng(5)
    lengths = np.minimum(rng.zipf(1.6, 90), 60)
    lengths[[3, 40]] = [250, 0]  # a row across tiles of 192, and an empty one
    return _csr(90, 300, lengths, rng)


def test_spmv_rows_stored_by_one_thread_are_no_race_but_plain_additions_are() -> None:
    """spmv hopper (v2) stores a row with a plain store from the one thread that ends it
    and adds the pieces of rows that cross tiles with atomicAdd: the trace shows no
    address of y written by two units with anything but atomicAdd, and the analysis
    gives no store-race, and no privatisation: every store of y runs under a condition
    on data (`firstRow >= 0`, `open >= 0`), so its writers are upper bounds. The same kernel with
    the atomicAdds planted as plain `+=` is a race the trace shows and the analysis finds
    at both additions."""
    text = _small_tiles(SPMV_TILES.read_text())
    args = _power_law_csr()
    sizes = {k: args[k] for k in ("nrows", "ncols", "nnz")}
    assert _conflicts(text, args) == {"update": set(), "store": set()}
    messages = feedback_source(text, "hopper", sizes)
    assert not by_code(messages, "store-race")
    assert not by_code(messages, "store-privatise")
    planted = text.replace("atomicAdd(y[firstRow], total);", "y[firstRow] += total;")
    planted = planted.replace("atomicAdd(y[open], carrySum[t]);", "y[open] += carrySum[t];")
    assert planted.count("+= total;") == 1 and planted.count("y[open] +=") == 1
    conflicts = _conflicts(planted, args)
    row = int(np.argmax(np.diff(args["rowptr"])))
    assert row in conflicts["update"]  # the long row's pieces from two tiles
    races = by_code(feedback_source(planted, "hopper", sizes), "store-race")
    assert {m.span.line for m in races} == {
        i + 1 for i, line in enumerate(planted.splitlines())
        if "y[firstRow] +=" in line or "y[open] +=" in line}
    assert all("lose updates" in m.text for m in races)


def test_a_plain_store_that_reads_the_array_is_an_update() -> None:
    """`hist[v] = hist[v] + 1` reads what it writes, as `+=` does: a race; a plain
    scatter `out[perm[i]] = v` is none."""
    spelled = RACE.replace("hist[values[i]] += 1", "hist[values[i]] = hist[values[i]] + 1")
    assert by_code(feedback_source(spelled, values={"n": 100}), "store-race")
    scatter = RACE.replace("hist[values[i]] += 1", "hist[values[i]] = i")
    assert not by_code(feedback_source(scatter, values={"n": 100}), "store-race")


def test_no_privatisation_of_a_store_the_data_select() -> None:
    """An update under a condition on data (`if (values[i] >= 0)`) runs where the data
    say: its writers are upper bounds and a copy per group may only add its merge, so no
    store-privatise is proposed; the contention message says its figures are bounds and
    names the condition's line. The same update under a condition on the index alone
    (`i < n`) gets the privatisation; as a plain `+=` the guarded one stays a race."""
    sizes = {"n": 1 << 22, "m": 1000}
    assert by_code(feedback_source(SCATTER, "hopper", sizes), "store-privatise")
    guarded = SCATTER.replace("atomicAdd(hist[values[i]], 1);",
                              "if (values[i] >= 0) {\n            atomicAdd(hist[values[i]], 1);"
                              "\n          }")
    assert guarded != SCATTER
    messages = feedback_source(guarded, "hopper", sizes)
    assert not by_code(messages, "store-privatise")
    (contention,) = by_code(messages, "store-contention")
    line = next(k + 1 for k, text in enumerate(guarded.splitlines()) if "if (values" in text)
    assert "upper bounds" in (contention.hint or "")
    assert f"condition at line {line} " in (contention.hint or "")
    racy = guarded.replace("atomicAdd(hist[values[i]], 1);", "hist[values[i]] += 1;")
    assert by_code(feedback_source(racy, "hopper", sizes), "store-race")
