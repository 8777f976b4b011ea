"""The time model of the GPU leaves (mcl.feedback.analyses.timemodel; docs/feedback.md,
"Time estimate"): its formula on figures each term of which is checked by hand, each
suggestion's estimate after its change against the model's estimate of the changed
kernel, and no gain where the model lacks a figure."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from conftest import KERNELS, feedback

from mcl import pipeline
from mcl.diagnostics import Span
from mcl.feedback.analyses import timemodel
from mcl.feedback.analyses.timemodel import (
    ACHIEVED_BANDWIDTH,
    COMPUTE,
    DEVICE_MEMORY,
    LATENCY,
    ON_CHIP,
    SM,
    Figures,
    Phase,
    barrier_loops,
    barrier_places,
    phase_of,
)
from mcl.feedback.findings import (
    AccessPlace,
    BankConflictFinding,
    CoalesceAccess,
    Finding,
    KeepInRegister,
    OccupancyFinding,
    RaiseOccupancy,
    RegisterReload,
    RemoveBankConflict,
    UncoalescedAccess,
)
from mcl.feedback.messages import FeedbackSeverity, Message, Value
from mcl.feedback.registry import analyse
from mcl.hdl.peak import bandwidth
from mcl.mcpl.loader import load_program

PHASE = ("device_seconds", "on_chip_bytes", "flops", "loads_per_sm", "extra_bytes")


def _figures(**changes: float) -> Figures:
    """One phase (a kernel without barriers); `changes` to it or to the figures."""
    phase = replace(Phase(device_seconds=1e-3, on_chip_bytes=1e9, flops=1e9,
                          loads_per_sm=1e5, extra_bytes=1e9),
                    **{k: v for k, v in changes.items() if k in PHASE})
    base = Figures(multiprocessors=2, clock_hz=1e9, warps_per_sm=4, peak_flops=1e12,
                   on_chip_bandwidth=1e12, loads_in_flight=2, latency_s=1e-6,
                   phases=(phase,), wave_tail=1.5)
    return replace(base, **{k: v for k, v in changes.items() if k not in PHASE})


def test_each_term_is_its_figure_over_its_rate() -> None:
    f = _figures()
    terms = f.terms
    # 1 ms at the stated bandwidth, of which the kernel reaches ACHIEVED_BANDWIDTH
    assert terms[DEVICE_MEMORY] == pytest.approx(1e-3 / ACHIEVED_BANDWIDTH)
    # (1 GB + 1 GB of conflicts) at 1 TB/s, on the busiest SM's 1.5 times the average
    assert terms[ON_CHIP] == pytest.approx(2e9 / 1e12 * 1.5)
    assert terms[COMPUTE] == pytest.approx(1e9 / 1e12 * 1.5)
    # Little's law: 1e5 loads x 1.5 x 1 us, 4 warps x 2 loads in flight at a time
    assert terms[LATENCY] == pytest.approx(1e5 * 1.5 * 1e-6 / 8)
    assert f.limits[SM] == pytest.approx(terms[COMPUTE] + terms[ON_CHIP])
    # latency-bound: each of the 4 warps waits its 18.75 ms and issues a quarter of the
    # SM's 4.5 ms besides, which no other warp overlaps (one scheduler)
    assert f.seconds == pytest.approx(terms[LATENCY] + f.limits[SM] / 4)
    assert f.limit == LATENCY


def test_the_largest_limit_is_the_estimate() -> None:
    f = _figures(latency_s=1e-9)  # latency hidden: the SM's 3 ms + 1.5 ms limit
    assert f.limit == SM and f.seconds == pytest.approx(3e-3 + 1.5e-3)
    f = _figures(latency_s=1e-9, device_seconds=1.0)
    assert f.limit == DEVICE_MEMORY and f.seconds == pytest.approx(1.0 / ACHIEVED_BANDWIDTH)


def _looped(blocks: float, warps: float, schedulers: float = 4.0) -> Figures:
    """A phase inside a loop around a barrier: 100 passes of 1 us each (the floor,
    100 us) and 400 us of issue (compute and on-chip memory), few loads."""
    phase = Phase(device_seconds=0.0, on_chip_bytes=2e8, flops=2e8, loads_per_sm=1.0,
                  passes=100)
    return Figures(multiprocessors=1, clock_hz=1e9, warps_per_sm=warps, peak_flops=1e12,
                   on_chip_bandwidth=1e12, loads_in_flight=1, latency_s=1e-9,
                   phases=(phase,), chain_latency_s=1e-6, schedulers=schedulers,
                   blocks_per_sm=blocks)


def test_one_block_per_sm_waits_at_each_barrier_and_works_in_turn() -> None:
    """The waits a barrier aligns are hidden only by the other blocks of the SM: one
    block of 8 warps waits its floor and issues its work one after the other (Hong and
    Kim's case of too few warps, at the granularity of the block), where two blocks of 4
    warps overlap them, as far as the other block's issue covers the waits."""
    one = _looped(blocks=1, warps=8)
    assert one.limits[SM] == pytest.approx(400e-6)
    assert one.phase_terms(one.phases[0])[LATENCY] == pytest.approx(100e-6)
    assert one.seconds == pytest.approx(500e-6) and one.limit == LATENCY
    two = _looped(blocks=2, warps=8)
    assert two.seconds == pytest.approx(400e-6) and two.limit == SM
    # 300 us of waits, more than the other block's 200 us of issue covers: each block
    # waits and issues its own 200 us in turn
    two_longer = replace(two, chain_latency_s=3e-6)
    assert two_longer.seconds == pytest.approx(300e-6 + 400e-6 / 2)
    # more warps in the one block do not help: they all wait at its barrier
    assert _looped(blocks=1, warps=32).seconds == pytest.approx(500e-6)
    # a block no wider than a warp per scheduler issues at most its warps' share
    assert _looped(blocks=2, warps=2).seconds == pytest.approx(100e-6 + 400e-6 * 4 / 2)


def _tiled(blocks: float, warps: float) -> Figures:
    """A loop around two barriers, as matmul's tiles: a load phase, 100 passes each
    waiting 1 us for its tile (the floor, 100 us) with 20 us of issue, then a work
    phase of 400 us of issue and no global load, one after the other per pass."""
    load = Phase(device_seconds=0.0, on_chip_bytes=1e7, flops=1e7, loads_per_sm=1.0,
                 passes=100)
    work = Phase(device_seconds=0.0, on_chip_bytes=2e8, flops=2e8, loads_per_sm=0.0)
    return Figures(multiprocessors=1, clock_hz=1e9, warps_per_sm=warps, peak_flops=1e12,
                   on_chip_bandwidth=1e12, loads_in_flight=1, latency_s=1e-9,
                   phases=(load, work), chain_latency_s=1e-6, schedulers=4.0,
                   blocks_per_sm=blocks, loops=((0, 1),))


def test_other_blocks_hide_a_load_phase_behind_their_work() -> None:
    """While one block waits at its barrier for a tile, the other blocks of its SM issue
    their work phases (Figures.cover): with two blocks of 8 warps, two on each of the 4
    schedulers, the loop takes its issue alone (matmul hopper_v1: 4.58 ms measured on
    an H200, 4.50 ms its issue); with two blocks of 4 warps, one on each scheduler, the
    other block's lone warp waits on its own operands and hides nothing, and the load
    phases add (hopper_v1 at 4 warps a block: 4.76 ms, its issue 3.97 ms)."""
    wide = _tiled(blocks=2, warps=16)
    assert wide.cover(0) == pytest.approx(400e-6 / 2)
    assert wide.cover(1) == 0.0  # a phase without a floor
    assert wide.seconds == pytest.approx(20e-6 + 400e-6)
    assert wide.limit == SM
    assert wide.hidden() == pytest.approx(100e-6)  # the whole floor
    narrow = _tiled(blocks=2, warps=8)
    assert narrow.cover(0) == 0.0 and narrow.hidden() == 0.0
    assert narrow.seconds == pytest.approx(100e-6 + 20e-6 / 2 + 400e-6)
    # one block has no other to hide its waits, however wide
    assert _tiled(blocks=1, warps=16).cover(0) == 0.0
    # nor does a phase outside the loop's phases
    assert replace(wide, loops=()).seconds == pytest.approx(narrow.seconds)
    # waits longer than the other block's work: each pass takes one block's waits and
    # its own issue, 300 us + (20 + 400) / 2 us
    longer = replace(wide, chain_latency_s=3e-6)
    assert longer.seconds == pytest.approx(300e-6 + 420e-6 / 2)
    assert longer.hidden() == pytest.approx(400e-6 / 2)  # the cover, not the floor


LOOPED = """
hopper void tiles(int n, global float[n] b, global float[n] a) {
  foreach (int bi in n / 256 blocks) {
    shared float[256] tile;
    foreach (int w in 8 warps) {
      foreach (int t in 32 threads) {
        float sum = 0.0;
        barrier(shared);
        for (int l = 0; l < 4; l++) {
          tile[w * 32 + t] = a[bi * 256 + w * 32 + t];
          barrier(shared);
          sum += tile[255 - w * 32 - t];
          barrier(shared);
        }
        b[bi * 256 + w * 32 + t] = sum;
      }
    }
  }
}
"""


def test_a_loop_around_barriers_repeats_the_phases_between_its_first_and_last(
        tmp_path, library) -> None:
    """The loop's barriers are the second and third: it repeats the phase that ends at
    the second (its loads), the one between them, and the one after the third (the
    rest of its body, with the statements after the loop)."""
    path = tmp_path / "tiles.mcpl"
    path.write_text(LOOPED)
    function = load_program(path, (), library).main.functions[0]
    barriers = barrier_places(function)
    assert len(barriers) == 3
    assert barrier_loops(function, barriers, 4) == ((1, 2, 3),)


def test_warps_per_scheduler_hide_the_waits_little_s_law_counts() -> None:
    """Little's law's waits, each warp's loads x latency over the loads it has in
    flight, are hidden where the other warps of its scheduler issue as long meanwhile:
    the latency limit is the waits plus the warp's own issue, its scheduler's over the
    warps that share it."""
    f = _figures(latency_s=2e-8, schedulers=4.0, warps_per_sm=16)  # 4 warps a scheduler
    waits = f.phase_terms(f.phases[0])[LATENCY]  # 1e5 x 1.5 x 20 ns / 32 = 93.75 us
    issue = f.limits[SM]  # 4.5 ms
    assert waits == pytest.approx(93.75e-6)
    assert f.limits[LATENCY] == pytest.approx(waits + issue / 4)
    assert f.seconds == pytest.approx(issue)  # hidden: 3 other warps issue 3.4 ms
    one_each = replace(f, warps_per_sm=4.0)  # one warp a scheduler: nothing overlaps
    assert one_each.seconds == pytest.approx(issue + 4 * waits)
    assert one_each.limit == LATENCY


def test_the_schedulers_of_an_sm_come_from_the_description(library) -> None:
    # hopper.hdl: 64 warp slots over 4 processing blocks of 16; fermi states one
    assert timemodel.issue_partitions(library.get("hopper")) == 4.0
    assert timemodel.issue_partitions(library.get("fermi")) == 1.0


SPAN = Span("k.mcpl", 1, 1, 1, 2)
ACCESS = AccessPlace("tile", "tile[tx][ty]", SPAN, "load", "shared")


def _message(code: str, severity: FeedbackSeverity = FeedbackSeverity.SUGGESTION,
             **values: float) -> Message:
    return Message(severity, "functions", code, f"{code} text", SPAN,
                   tuple((k, Value(v, v)) for k, v in values.items()), "k")


def _occupancy(warps: int, after: int | None) -> OccupancyFinding:
    """An occupancy finding at `warps` per SM whose change gives `after` (None: none
    advised). Its message states no figures: the model reads the record."""
    change = RaiseOccupancy(warps, after, ("block slots",), ("advice",)) if after else None
    return OccupancyFinding(_message("occupancy"), change=change, warps_per_sm=warps,
                            warp_slots=64, blocks_per_sm=warps, multiprocessors=2,
                            grid_blocks=None, registers_per_thread=32.0, block_limits=())


def _conflict(degree: int, runs: float | None, span: Span = SPAN) -> BankConflictFinding:
    change = RemoveBankConflict(replace(ACCESS, span=span), degree, 32, 4, runs)
    return BankConflictFinding(replace(_message("bank-conflict"), span=span), change=change,
                               access=change.access, active_lanes=32)


def _register(through_cache: bool) -> RegisterReload:
    change = KeepInRegister(ACCESS, (), Value(5, 5), Value(3.2e6, 3.2e6),
                            Value(1.28e7, 1.28e7), through_cache)
    return RegisterReload(_message("memory-register"), change=change)


def test_an_occupancy_suggestion_is_weighed_at_its_warps() -> None:
    f = _figures()
    changed = timemodel.with_gain(_occupancy(4, 8), f)
    after = dict(changed.message.values)
    # twice the warps halve the latency limit (each warp's waits and its own issue):
    # 19.875 ms -> 9.9375 ms, still the limit
    assert after["estimated_seconds_after"].numeric == pytest.approx(f.seconds / 2)
    assert after["estimated_gain"].numeric == pytest.approx(2.0)
    assert changed.gain is not None and changed.gain.factor == pytest.approx(2.0)
    assert changed.gain.seconds_after == pytest.approx(f.seconds / 2)
    assert changed.severity == FeedbackSeverity.SUGGESTION and "(2.00x)" in changed.message.text


def test_a_gain_under_three_percent_makes_a_fact() -> None:
    f = _figures(latency_s=1e-9, device_seconds=1.0)  # bound by device memory
    changed = timemodel.with_gain(_occupancy(4, 8), f)
    assert changed.severity == FeedbackSeverity.INFO
    assert dict(changed.message.values)["estimated_gain"].numeric == pytest.approx(1.0)
    assert "limited by device memory either way" in changed.message.text


def test_a_conflict_without_its_extra_passes() -> None:
    # 1e6 warp executions of a 3-way conflict: 2 extra passes of 32 banks x 4 B each
    assert timemodel.after(_figures(), _conflict(3, 1e6)) == \
        _figures(extra_bytes=1e9 - 1e6 * 2 * 128)


def test_the_model_reads_the_typed_change_not_the_message() -> None:
    """`after` works from the record: a message with the figures the model once read
    (by code and name) but no typed change is weighed at nothing, and a record whose
    message states no figure at all is weighed at its change."""
    f = _figures()
    stringly = Finding(_message("occupancy", warps_per_sm=4, warps_per_sm_after=8))
    assert timemodel.after(f, stringly) is None
    conflict = Finding(_message("bank-conflict", conflict_degree=3, banks=32,
                                warp_executions=1e6))
    assert timemodel.after(f, conflict) is None
    typed = _occupancy(4, 8)
    assert typed.message.values == ()  # nothing to read by name
    assert timemodel.after(f, typed) == replace(f, warps_per_sm=8.0, blocks_per_sm=2.0)
    # the change's own parameters decide: a 5-way conflict removes twice the passes
    assert timemodel.after(f, _conflict(5, 1e6)) == _figures(extra_bytes=1e9 - 1e6 * 4 * 128)


def test_a_change_the_model_does_not_capture_states_no_gain() -> None:
    f = _figures()
    uncoalesced = CoalesceAccess(ACCESS, 32, 4, 32, None)  # no warp executions
    for finding in (Finding(_message("memory-faster-space")),
                    Finding(_message("elements-several-per-unit")),
                    _occupancy(4, None),  # no change advised
                    UncoalescedAccess(_message("uncoalesced"), change=uncoalesced,
                                      access=ACCESS, active_lanes=32)):
        assert timemodel.with_gain(finding, f) == finding


# A tile transpose; WIDTH 32 is a 32-way conflict on the column read, 33 (padded) none.
TRANSPOSE = """
hopper void transpose(int n, global float[n, n] dst, global float[n, n] src) {
  foreach (int bi in n / 32 blocks) {
    foreach (int bj in n / 32 blocks) {
      shared float[32][WIDTH] tile;
      foreach (int ty in 32 warps) {
        foreach (int tx in 32 threads) {
          tile[ty][tx] = src[bi * 32 + ty, bj * 32 + tx];
          barrier(shared);
          dst[bj * 32 + ty, bi * 32 + tx] = tile[tx][ty] * 2.0;
        }
      }
    }
  }
}
"""

# One warp per block (BLOCK = 32 threads): the 32 block slots of an SM hold 32 of its 64
# warps, and the occupancy message advises 64 threads per block.
SCALE = """
hopper void scale(int n, global float[n] a, global float[n] b) {
  foreach (int bi in n / (WARPS * 32) blocks) {
    foreach (int w in WARPS warps) {
      foreach (int t in 32 threads) {
        int i = (bi * WARPS + w) * 32 + t;
        b[i] = 2.0 * a[i];
      }
    }
  }
}
"""


def _messages(tmp_path: Path, library, source: str, name: str, sizes: dict) -> list[Message]:
    path = tmp_path / f"{name}.mcpl"
    path.write_text(source)
    program = load_program(path, (), library)
    function = program.main.functions[0]
    return analyse(function, pipeline.check(program, library), library.get(function.hwd), sizes)


def _estimate(messages: list[Message]) -> float:
    found = [m for m in messages if m.code == "time-estimate"]
    assert len(found) == 1
    return float(dict(found[0].values)["estimated_seconds"].numeric)


def _after(message: Message) -> float:
    return float(dict(message.values)["estimated_seconds_after"].numeric)


def test_the_conflict_s_after_time_is_the_padded_kernel_s_estimate(tmp_path, library) -> None:
    sizes = {"n": 8192}
    unpadded = _messages(tmp_path, library, TRANSPOSE.replace("WIDTH", "32"), "t32", sizes)
    padded = _messages(tmp_path, library, TRANSPOSE.replace("WIDTH", "33"), "t33", sizes)
    conflict = [m for m in unpadded if m.code == "bank-conflict"]
    assert len(conflict) == 1 and not [m for m in padded if m.code == "bank-conflict"]
    assert _after(conflict[0]) == pytest.approx(_estimate(padded), rel=1e-9)
    assert _estimate(unpadded) > _estimate(padded)


def test_the_occupancy_after_time_is_the_larger_block_s_estimate(tmp_path, library) -> None:
    # 132 SMs x 64 warps x 32 threads x 4: every grid fills the SMs evenly
    sizes = {"n": 132 * 64 * 32 * 4}
    one = _messages(tmp_path, library, SCALE.replace("WARPS", "1"), "w1", sizes)
    two = _messages(tmp_path, library, SCALE.replace("WARPS", "2"), "w2", sizes)
    occupancy = [m for m in one if m.code == "occupancy"]
    assert len(occupancy) == 1
    values = dict(occupancy[0].values)
    assert values["warps_per_sm"].numeric == 32 and values["warps_per_sm_after"].numeric == 64
    assert "64 give 64 warps" in occupancy[0].text
    assert _after(occupancy[0]) == pytest.approx(_estimate(two), rel=1e-9)


def test_without_the_sizes_no_estimate_and_no_gain(tmp_path, library) -> None:
    messages = _messages(tmp_path, library, TRANSPOSE.replace("WIDTH", "32"), "t", {})
    assert not [m for m in messages if m.code == "time-estimate"]
    assert not [m for m in messages if "estimated_gain" in dict(m.values)]


def test_a_faster_space_suggestion_states_no_gain() -> None:
    # p = 8192: a block's row of a (32 kB) does not fit hopper's 28 kB l1, so the proposal
    # stays (at p = 1024 the l1 serves it: memory-cache-serves)
    messages = feedback(KERNELS / "matmul" / "perfect.mcpl", "hopper",
                        values={"n": 1024, "m": 1024, "p": 8192})
    assert _estimate(messages) > 0
    faster = [m for m in messages if m.code == "memory-faster-space"]
    assert faster and all("estimated_gain" not in dict(m.values) for m in faster)


def test_phases_between_barriers_add_each_its_largest_limit() -> None:
    # a load phase bound by device memory (1 ms), a compute phase by the SM (2 ms + 1 ms):
    # the barrier keeps them apart, so the kernel takes both, not the larger
    load = Phase(device_seconds=1e-3 * ACHIEVED_BANDWIDTH, on_chip_bytes=0.0, flops=0.0,
                 loads_per_sm=0.0)
    work = Phase(device_seconds=0.0, on_chip_bytes=1e9, flops=2e9, loads_per_sm=0.0)
    f = replace(_figures(latency_s=1e-9), phases=(load, work), wave_tail=1.0)
    assert f.phase_limits(load)[DEVICE_MEMORY] == pytest.approx(1e-3)
    assert f.phase_limits(work)[SM] == pytest.approx(3e-3)
    assert f.seconds == pytest.approx(1e-3 + 3e-3)
    # the figures over every phase are the sums; the limit is the one of most time
    assert f.limits[DEVICE_MEMORY] == pytest.approx(1e-3)
    assert f.limits[SM] == pytest.approx(3e-3) and f.limit == SM
    # one phase holding both is the largest of its limits, as before
    both = Phase(load.device_seconds, work.on_chip_bytes, work.flops, 0.0)
    assert replace(f, phases=(both,)).seconds == pytest.approx(3e-3)


def test_a_conflict_changes_only_its_own_phase() -> None:
    # the conflicting access at line 5 stands after the barrier at line 4: phase 1
    one = Phase(1e-3, 1e9, 1e9, 1e5, extra_bytes=5e8)
    two = Phase(1e-3, 1e9, 1e9, 1e5, extra_bytes=1e9)
    f = replace(_figures(), phases=(one, two), barriers=((4, 3),))
    changed = timemodel.after(f, _conflict(3, 1e6, Span("k.mcpl", 5, 7, 5, 9)))
    assert changed is not None
    assert changed.phases[0] == one
    assert changed.phases[1].extra_bytes == pytest.approx(1e9 - 1e6 * 2 * 128)


def test_a_statement_s_phase_is_the_barriers_before_it() -> None:
    barriers = [(4, 3), (9, 5)]
    assert phase_of(Span("k", 2, 1, 2, 5), barriers) == 0
    assert phase_of(Span("k", 4, 9, 4, 12), barriers) == 1  # after it on its line
    assert phase_of(Span("k", 12, 1, 12, 2), barriers) == 2
    assert phase_of(None, barriers) == 0


# A block copy through shared memory, no arithmetic: a load phase and a store phase.
COPY = """
hopper void copy(int n, global float[n] b, global float[n] a) {
  foreach (int bi in n / 256 blocks) {
    shared float[256] tile;
    foreach (int w in 8 warps) {
      foreach (int t in 32 threads) {
        tile[w * 32 + t] = a[bi * 256 + w * 32 + t];
        barrier(shared);
        b[bi * 256 + w * 32 + t] = tile[w * 32 + t];
      }
    }
  }
}
"""


def test_a_kernel_without_arithmetic_gets_a_bound_and_an_estimate(tmp_path, library) -> None:
    n = 132 * 8 * 256 * 4  # whole waves
    messages = _messages(tmp_path, library, COPY, "copy", {"n": n})
    roof = [m for m in messages if m.code == "roofline"]
    assert len(roof) == 1 and "no arithmetic" in roof[0].text
    values = dict(roof[0].values)
    assert values["flops"].numeric == 0 and "intensity_global" not in values
    # 4 B read and 4 B written per element, once each: the compulsory traffic
    assert values["bytes_global"].numeric == 8 * n
    estimate = [m for m in messages if m.code == "time-estimate"]
    assert len(estimate) == 1
    figures = dict(estimate[0].values)
    assert figures["phases"].numeric == 2
    # the read in the phase before the barrier, the write after it: each half the
    # traffic, each phase as long as its own device-memory time at most
    hopper = library.get("hopper")
    rate = bandwidth(hopper, "global")
    assert rate is not None
    device = 8 * n / rate.bytes_per_s / ACHIEVED_BANDWIDTH
    assert figures["seconds_device_memory"].numeric == pytest.approx(device)
    assert _estimate(messages) >= device


def test_the_unpadded_transpose_s_conflict_states_a_gain_without_arithmetic(
        tmp_path, library) -> None:
    # TRANSPOSE without its multiplication: no flops, the conflict weighed all the same
    source = TRANSPOSE.replace(" * 2.0", "")
    unpadded = _messages(tmp_path, library, source.replace("WIDTH", "32"), "m32",
                         {"n": 8192})
    padded = _messages(tmp_path, library, source.replace("WIDTH", "33"), "m33", {"n": 8192})
    conflict = [m for m in unpadded if m.code == "bank-conflict"]
    assert len(conflict) == 1
    gain = dict(conflict[0].values)["estimated_gain"].numeric
    assert gain == pytest.approx(_estimate(unpadded) / _estimate(padded), rel=1e-9)
    assert gain > 1.03 and conflict[0].severity == FeedbackSeverity.SUGGESTION


def test_barrier_places_are_in_source_order(tmp_path, library) -> None:
    path = tmp_path / "copy.mcpl"
    path.write_text(COPY)
    function = load_program(path, (), library).main.functions[0]
    assert barrier_places(function) == [(8, 9)]


def test_the_parts_of_a_kernel_count_what_the_whole_counts(tmp_path, library) -> None:
    # the phases' counts (part_costs) add up to the function's, entry by entry
    from mcl.feedback.analysis import AnalysisContext
    from mcl.feedback.facts.costs import function_costs, part_costs

    path = tmp_path / "t.mcpl"
    path.write_text(TRANSPOSE.replace("WIDTH", "32"))
    program = load_program(path, (), library)
    function = program.main.functions[0]
    ctx = AnalysisContext(function, pipeline.check(program, library), library.get("hopper"),
                          {"n": 256})
    facts = ctx.facts
    barriers = barrier_places(function)
    parts: list[set] = [set(), set()]
    for item in facts.items:
        parts[phase_of(item.span, barriers)].add(item)
    assert all(parts)  # statements on both sides of the barrier
    whole = function_costs(facts, ctx.values).entries
    summed: dict = {}
    for items in parts:
        for key, count in part_costs(facts, ctx.values, items).entries.items():
            summed[key] = summed.get(key, 0) + count
    assert {k: v for k, v in summed.items() if v != 0} == \
        {k: v for k, v in whole.items() if v != 0}


def test_a_register_hint_without_its_reloads() -> None:
    # the hint's load (line 1, column 1) and another, each 4e6 times: 2 in flight; kept in
    # a register it runs 5 times less often, saving 3.2e6 thread loads (5e4 warp loads
    # per SM at 64 lanes x SMs) through the l1 and their 12.8 MB
    f = replace(_figures(), lanes_sms=64.0, load_runs=(((1, 1), 4e6, 1), ((2, 5), 4e6, 1)))
    changed = timemodel.after(f, _register(through_cache=True))
    assert changed == replace(
        f, phases=(replace(f.phases[0], on_chip_bytes=1e9 - 1.28e7, loads_per_sm=5e4),),
        load_runs=(((1, 1), 8e5, 1), ((2, 5), 4e6, 1)), loads_in_flight=1)
    # loads from a space no cache holds keep their latency term
    kept = timemodel.after(f, _register(through_cache=False))
    assert kept is not None and kept.phases[0].loads_per_sm == f.phases[0].loads_per_sm


UNIFORM = Path(__file__).parent / "kernels" / "uniform_weight_hopper.mcpl"
LOOP = "for (int k = 0; k < cols; k++) {\n              sum += "


@pytest.mark.parametrize(("factor", "sizes", "pays"), [
    # x streams from device memory beside the weight: bound by it either way
    ("x[r, k, i]", {"n": 1 << 20, "rows": 16, "cols": 64}, False),
    # a few warps, bound by latency: with one load fewer in the loop body the model
    # counts one load in flight per warp instead of two, which costs more than the
    # reloads saved
    ("x[r, k, i]", {"n": 512, "rows": 3, "cols": 5}, False),
    # the weight is the only load in the loop: its reloads are the latency
    ("sum", {"n": 1 << 20, "rows": 16, "cols": 64}, True),
])
def test_the_register_hint_s_after_time_is_the_hoisted_kernel_s_estimate(
        tmp_path, library, factor: str, sizes: dict, pays: bool) -> None:
    """The warp-uniform weight loaded once outside loop k (the hint applied): the model's
    estimate of that kernel is the hint's estimate after; under 3% the hint is a fact."""
    source = UNIFORM.read_text().replace("weight[r] * x[r, k, i]", f"weight[r] * {factor}")
    loop = LOOP + f"weight[r] * {factor};"
    assert loop in source
    hoisted = source.replace(loop, "float wr = weight[r];\n            " +
                             loop.replace("weight[r]", "wr"))
    now = _messages(tmp_path, library, source, "u", sizes)
    then = _messages(tmp_path, library, hoisted, "h", sizes)
    (hint,) = [m for m in now if m.code == "memory-register"]
    assert not [m for m in then if m.code == "memory-register"]
    assert _after(hint) == pytest.approx(_estimate(then), rel=1e-6)
    gain = float(dict(hint.values)["estimated_gain"].numeric)
    assert gain == pytest.approx(_estimate(now) / _estimate(then), rel=1e-6)
    assert (hint.severity == FeedbackSeverity.SUGGESTION) == pays == (gain >= timemodel.MIN_GAIN)
    assert ("either way" in hint.text) != pays


def _terms(messages: list[Message]) -> dict[str, float]:
    [fact] = [m for m in messages if m.code == "time-estimate"]
    return {k: float(v.numeric) for k, v in fact.values if v.numeric is not None}


def test_at_another_sm_clock_the_sm_and_latency_terms_scale(tmp_path, library) -> None:
    # the profiler's base clock (mcl profile): the SM's rates and the latencies in cycles
    # follow the SM clock, device memory's bytes per second do not
    source = TRANSPOSE.replace("WIDTH", "32")
    path = tmp_path / "t.mcpl"
    path.write_text(source)
    program = load_program(path, (), library)
    function = program.main.functions[0]
    checked, hwd = pipeline.check(program, library), library.get(function.hwd)
    stated = _terms(analyse(function, checked, hwd, {"n": 8192}))
    assert "clock_hz" not in stated  # at the description's clock the fact says nothing of it
    clock = 1.59e9
    slow = analyse(function, checked, hwd, {"n": 8192}, clock_hz=clock)
    measured = _terms(slow)
    ratio = 1.98e9 / clock  # hopper.hdl's SM clock over the one given
    assert measured["clock_hz"] == clock and measured["stated_clock_hz"] == 1.98e9
    assert measured["seconds_device_memory"] == pytest.approx(stated["seconds_device_memory"])
    for term in ("seconds_on_chip_memory", "seconds_latency", "latency_seconds"):
        assert measured[term] == pytest.approx(stated[term] * ratio), term
    [fact] = [m for m in slow if m.code == "time-estimate"]
    assert "at an SM clock of 1.59 GHz (the description's 1.98 GHz scaled)" in fact.text
    # the suggestion's gain is weighed at the same clock
    [conflict] = [m for m in slow if m.code == "bank-conflict"]
    assert _after(conflict) < measured["estimated_seconds"]


ROW_PER_THREAD = """
hopper void rows(int n, global float[n] y, global float[n, n] a) {
    int nrBlocks = (n + 255) / 256;
    foreach (int b in nrBlocks blocks) {
        foreach (int w in 8 warps) {
            foreach (int t in 32 threads) {
                int i = b * 256 + w * 32 + t;
                if (i < n) {
                    float s = 0.0;
                    for (int j = 0; j < n; j++) {
                        s += a[i, j];
                    }
                    y[i] = s;
                }
            }
        }
    }
}
"""


def test_an_uncoalesced_request_costs_a_wavefront_per_cache_line() -> None:
    """Each lane of a warp reads its own row: 32 sectors of 32 B, each in its own 128 B
    line. The L1 serves one line per cycle, so the extra cost is 31 lines' width per
    request (not 28 sectors of 32 B), and the on-chip term is 4x the sector count's."""
    from conftest import feedback_source

    n = 4096
    messages = feedback_source(ROW_PER_THREAD, "hopper", {"n": n})
    uncoalesced = [m for m in messages if m.code == "uncoalesced"]
    assert len(uncoalesced) == 1
    values = uncoalesced[0].value_map
    assert (values["lines"].numeric, values["minimum_lines"].numeric) == (32, 4)
    change = CoalesceAccess(ACCESS, 32, 4, 32, float(n * n // 32), extra_wavefronts=31,
                            wavefront_bytes=128)
    assert change.extra_bytes == n * n // 32 * 31 * 128
    assert replace(change, extra_wavefronts=0).extra_bytes == n * n // 32 * 28 * 32
    estimate = next(m for m in messages if m.code == "time-estimate").value_map
    on_chip = float(estimate["seconds_on_chip_memory"].numeric)
    # 16 blocks on 132 SMs: the busiest SM runs one block of 8 warps, each making n
    # requests of 32 lines, one line per cycle at the SM clock
    clock = 1.98e9
    assert on_chip == pytest.approx(8 * n * 32 / clock, rel=0.15)
