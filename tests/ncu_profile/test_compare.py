"""The tolerance of every figure kind (mcl.profile.compare): just inside is ok, just
outside is flagged with a reason; a side that is missing compares nothing."""

from __future__ import annotations

import pytest

from mcl.profile.compare import compare
from mcl.profile.prediction import AccessPrediction, Prediction


def figure(kind: str, p: Prediction, counters: dict[str, float]):
    [found] = [f for f in compare(p, counters) if f.kind == kind]
    return found


def test_every_kind_appears_once_and_nothing_is_compared_without_counters() -> None:
    figures = compare(Prediction("f"), {})
    assert len({f.kind for f in figures}) == len(figures) == 13
    # without counters no figure is judged (spills: no local instructions counted)
    assert all(f.ok is None for f in figures)


@pytest.mark.parametrize(("measured", "ok"), [(1.0e-3, True), (0.99e-3, False)])
def test_the_bound_may_not_exceed_the_measured_time(measured: float, ok: bool) -> None:
    p = Prediction("f", bound_seconds=1.0e-3, bound_by="global")
    f = figure("time-bound", p, {"gpu__time_duration.sum": measured * 1e9})
    assert f.ok is ok
    assert (f.reason is None) is ok


@pytest.mark.parametrize(("measured", "ok"), [(114.9, True), (85.1, True), (115.1, False),
                                              (84.9, False)])
def test_dram_bytes_within_15_percent(measured: float, ok: bool) -> None:
    p = Prediction("f", dram_read_bytes=100.0, dram_write_bytes=100.0)
    counters = {"dram__bytes_read.sum": measured, "dram__bytes_write.sum": measured}
    for kind in ("dram-read", "dram-write"):
        f = figure(kind, p, counters)
        assert f.ok is ok
        assert f.error == pytest.approx((measured - 100) / 100)
    read = figure("dram-read", p, counters)
    written = figure("dram-write", p, counters)
    if not ok:
        assert ("cache" in read.reason) if measured > 100 else ("guard" in read.reason)
        assert "writes back" in written.reason


@pytest.mark.parametrize(("sectors", "ok"), [(3.6, True), (3.3, False), (4.7, False)])
def test_stored_bytes_are_the_sectors_written_to_l2(sectors: float, ok: bool) -> None:
    p = Prediction("f", dram_write_bytes=128.0)
    f = figure("stored-bytes", p, {"lts__t_sectors_srcunit_tex_op_write.sum": sectors})
    assert f.measured == pytest.approx(32 * sectors)
    assert f.ok is ok


def test_time_estimate_within_25_percent_and_absent_without_one() -> None:
    counters = {"gpu__time_duration.sum": 1.24e6}  # 1.24 ms
    assert figure("time-estimate", Prediction("f", estimated_seconds=1e-3), counters).ok
    assert not figure("time-estimate", Prediction("f", estimated_seconds=0.98e-3),
                      counters).ok
    absent = figure("time-estimate", Prediction("f"), counters)
    assert absent.ok is None and absent.note == "no estimate at this leaf"


def test_sectors_against_the_worst_predicted_access() -> None:
    loads = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
    requests = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
    coalesced = Prediction("f", all_coalesced=True)
    assert figure("sectors-load", coalesced, {loads: 4.4e6, requests: 1e6}).ok
    missed = figure("sectors-load", coalesced, {loads: 4.5e6, requests: 1e6})
    assert missed.ok is False and "coalesced" in missed.reason
    strided = Prediction("f", all_coalesced=False, sectors_per_request=[
        AccessPrediction(12, "a[j, i] is not coalesced", 32.0)])
    assert figure("sectors-load", strided, {loads: 20e6, requests: 1e6}).ok
    assert figure("sectors-load", strided, {}).predicted == 32.0
    assert figure("sectors-load", Prediction("f"), {loads: 4, requests: 1}).ok is None


def test_bank_conflicts_both_ways() -> None:
    counters = {"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": 32e3,
                "smsp__sass_inst_executed_op_shared_ld.sum": 1e3}
    free = figure("bank-conflicts", Prediction("f", conflict_free=True), counters)
    assert free.ok is False and "did not report" in free.reason
    named = Prediction("f", conflict_free=False,
                       conflict_degree=[AccessPrediction(7, "32-way", 32.0)])
    assert figure("bank-conflicts", named, counters).ok
    none_seen = {"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": 1e3,
                 "smsp__sass_inst_executed_op_shared_ld.sum": 1e3}
    assert figure("bank-conflicts", named, none_seen).reason == (
        "the predicted conflict did not happen on the device")


def test_bank_conflicts_against_the_ideal_wavefronts_where_recorded() -> None:
    # convolution hopper_v2 on an H100: five 64-bit loads a row take 2 wavefronts each
    # without any conflict (1.79 wavefronts per instruction), none beyond the ideal
    counters = {"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": 5980160.0,
                "smsp__sass_inst_executed_op_shared_ld.sum": 5980160.0 / 1.789,
                "memory_l1_wavefronts_shared": 5980160.0,
                "memory_l1_wavefronts_shared_ideal": 5980160.0}
    free = figure("bank-conflicts", Prediction("f", conflict_free=True), counters)
    assert free.measured == 1.0 and free.ok
    # gesummv hopper_v2: its 2-way conflicts are 4,096 of 434,176 wavefronts, and show
    named = Prediction("f", conflict_free=False,
                       conflict_degree=[AccessPrediction(107, "2-way", 2.0)])
    sliver = {"memory_l1_wavefronts_shared": 434176.0,
              "memory_l1_wavefronts_shared_ideal": 430080.0}
    assert figure("bank-conflicts", named, sliver).ok
    exact = {"memory_l1_wavefronts_shared": 430080.0,
             "memory_l1_wavefronts_shared_ideal": 430080.0}
    assert figure("bank-conflicts", named, exact).ok is False


def test_theoretical_occupancy_is_exact_and_blames_registers() -> None:
    p = Prediction("f", theoretical_occupancy_pct=50.0, registers_per_thread=14.0)
    assert figure("occupancy-theoretical", p,
                  {"sm__maximum_warps_per_active_cycle_pct": 50.0}).ok
    f = figure("occupancy-theoretical", p, {"sm__maximum_warps_per_active_cycle_pct": 37.5,
                                            "launch__registers_per_thread": 72.0})
    assert f.ok is False and "72 registers" in f.reason and "about 14" in f.reason


@pytest.mark.parametrize(("achieved", "ok"), [(40.0, True), (39.9, False)])
def test_achieved_occupancy_within_10_points(achieved: float, ok: bool) -> None:
    p = Prediction("f", theoretical_occupancy_pct=100.0, occupancy_pct=50.0)
    key = "sm__warps_active.avg.pct_of_peak_sustained_active"
    assert figure("occupancy-achieved", p, {key: achieved}).ok is ok


def test_spills_and_branch_efficiency() -> None:
    p = Prediction("f")
    assert figure("spills", p, {"smsp__sass_inst_executed_op_local_ld.sum": 0.0}).ok
    assert not figure("spills", p, {"smsp__sass_inst_executed_op_local_st.sum": 8.0}).ok
    key = "smsp__sass_average_branch_targets_threads_uniform.pct"
    assert figure("branch-efficiency", p, {key: 95.0}).ok
    assert not figure("branch-efficiency", p, {key: 94.9}).ok
    half = Prediction("f", branch_efficiency=[AccessPrediction(3, "divergent", 50.0)])
    assert figure("branch-efficiency", half, {key: 60.0}).ok


def test_sectors_of_loads_and_stores_against_accesses_of_their_own_direction() -> None:
    # a transpose: the row load is coalesced (4 sectors a request), the column store
    # touches 32 sectors; the load figure must not take the store's 32 as its bound
    loads = {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 8e6,
             "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 1e6}
    stores = {"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": 32e6,
              "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": 1e6}
    column_store = Prediction("f", all_coalesced=False, sectors_per_request=[
        AccessPrediction(5, "store of b[j, i] is not coalesced", 32.0, 8.0, store=True)])
    load = figure("sectors-load", column_store, loads)
    assert (load.predicted, load.ok) == (4.0, False)  # 8 measured: a load it missed
    store = figure("sectors-store", column_store, stores)
    assert (store.predicted, store.ok) == (32.0, True)
    # a message that does not say its direction bounds both, as before
    unstated = Prediction("f", all_coalesced=False, sectors_per_request=[
        AccessPrediction(5, "b[j, i] is not coalesced", 32.0, 8.0)])
    assert figure("sectors-load", unstated, loads).predicted == 32.0
