"""Each figure of the feedback beside the counter that measures it, with the tolerance
it is held to and, where the two differ by more, the likely reason (docs/profile.md,
"Tolerances"). The goals come from the validation method (docs/validation.md): DRAM
bytes within 15%, theoretical occupancy exact, achieved occupancy within 10 points, the
roofline bound never above the measured time, the time estimate within 25%.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from mcl.profile.prediction import SECTOR_BYTES, Prediction

# A warp of 32 lanes reading consecutive 4-byte elements needs 4 sectors of 32 B.
IDEAL_SECTORS_4B = 4.0


@dataclass(frozen=True)
class ComparedFigure:
    """One row of the comparison."""

    kind: str  # stable key (docs/profile.md), e.g. "dram-read"
    title: str
    unit: str
    predicted: float | None
    measured: float | None
    tolerance: str  # how far apart the two may be, in words
    ok: bool | None  # None: nothing to compare (a side is missing)
    reason: str | None = None  # why they differ, where they do
    note: str | None = None  # what the predicted figure is (a bound, an estimate, ...)

    @property
    def error(self) -> float | None:
        """(measured - predicted) / predicted: the relative error of the prediction."""
        if self.predicted is None or self.measured is None or self.predicted == 0:
            return None
        return (self.measured - self.predicted) / self.predicted


def _relative(predicted: float, measured: float, tolerance: float) -> bool:
    if predicted == 0:
        return measured == 0
    return abs(measured - predicted) <= tolerance * abs(predicted)


def _sum(counters: Mapping[str, float], *names: str) -> float | None:
    values = [counters[n] for n in names if n in counters]
    return sum(values) if values else None


def _ratio(counters: Mapping[str, float], top: tuple[str, ...], bottom: tuple[str, ...]
           ) -> float | None:
    a, b = _sum(counters, *top), _sum(counters, *bottom)
    if a is None or not b:
        return None
    return a / b


def time_bound(p: Prediction, c: Mapping[str, float]) -> ComparedFigure:
    measured = c.get("gpu__time_duration.sum")
    seconds = measured * 1e-9 if measured is not None else None
    ok = None if p.bound_seconds is None or seconds is None else p.bound_seconds <= seconds
    return ComparedFigure(
        "time-bound", "time vs roofline bound", "s", p.bound_seconds, seconds,
        "bound <= measured", ok,
        None if ok is not False else
        "the bound counts more work or traffic than the kernel did: accesses the cache "
        "served were counted as device-memory traffic, or a guard skipped work the "
        "counts include",
        note=f"bound: {p.bound_by}" if p.bound_by else "bound")


def time_estimate(p: Prediction, c: Mapping[str, float]) -> ComparedFigure:
    """The model's estimate, at the SM clock the kernel ran at where the counters give
    it (its note says which), against the measured time."""
    measured = c.get("gpu__time_duration.sum")
    seconds = measured * 1e-9 if measured is not None else None
    clock = (f"at the measured SM clock, {p.model_clock_hz / 1e9:.3g} GHz"
             if p.model_clock_hz else "at the description's clock")
    if p.estimated_seconds is None or seconds is None:
        return ComparedFigure("time-estimate", "time vs model estimate", "s", p.estimated_seconds,
                      seconds, "within 25%", None,
                      note="no estimate at this leaf"
                      if p.estimated_seconds is None else clock)
    if p.estimated_least_seconds is not None:
        # The model cannot decide an `if`: no estimate to hold the time to.
        return ComparedFigure("time-estimate", "time vs model estimate", "s", p.estimated_seconds,
                      seconds, "within 25%", None,
                      note=f"{clock}; the model cannot decide a branch: "
                      f"{p.estimated_least_seconds:.3g} s with its smaller branch, "
                      f"{p.estimated_seconds:.3g} s with the larger")
    ok = _relative(p.estimated_seconds, seconds, 0.25)
    return ComparedFigure("time-estimate", "time vs model estimate", "s", p.estimated_seconds,
                  seconds, "within 25%", ok,
                  None if ok else "latency, occupancy or instruction overheads the model "
                  "does not weigh" if seconds > p.estimated_seconds else
                  "the model counts traffic the caches served", note=clock)


def _dram(kind: str, title: str, predicted: float | None, measured: float | None) -> ComparedFigure:
    ok = None if predicted is None or measured is None else _relative(predicted, measured,
                                                                      0.15)
    reason = None
    if ok is False and predicted is not None and measured is not None:
        reason = ("more than the compulsory traffic: reused data did not stay in the L2 "
                  "cache (cache not modelled)" if measured > predicted else
                  "less than the compulsory traffic: a guard or data-dependent access left "
                  "part of the array untouched, or the L2 cache held it")
    return ComparedFigure(kind, title, "B", predicted, measured, "within 15%", ok, reason,
                  note="compulsory")


def dram_read(p: Prediction, c: Mapping[str, float]) -> ComparedFigure:
    return _dram("dram-read", "DRAM bytes read", p.dram_read_bytes,
                 c.get("dram__bytes_read.sum"))


def dram_write(p: Prediction, c: Mapping[str, float]) -> ComparedFigure:
    """Device-memory writes during the kernel. The L2 cache writes back: output still in
    it when the kernel ends is written later, uncounted, and lines dirtied before the
    kernel (by the profiler's cache flush between its passes) are counted, so small and
    L2-sized outputs measure off either way; `stored-bytes` is the figure to trust."""
    figure = _dram("dram-write", "DRAM bytes written", p.dram_write_bytes,
                   c.get("dram__bytes_write.sum"))
    if figure.ok is False:
        figure = replace(figure, reason="the L2 cache writes back: output still in it at "
                         "the kernel's end is not counted, write-backs of earlier data are "
                         "(compare the bytes stored)")
    return figure


def stored_bytes(p: Prediction, c: Mapping[str, float]) -> ComparedFigure:
    """The bytes the kernel's stores write into the L2 cache, against the compulsory
    writes: what reaches device memory sooner or later."""
    sectors = c.get("lts__t_sectors_srcunit_tex_op_write.sum")
    measured = sectors * SECTOR_BYTES if sectors is not None else None
    figure = _dram("stored-bytes", "bytes stored (to L2)", p.dram_write_bytes, measured)
    if figure.ok is False and measured is not None and p.dram_write_bytes is not None:
        figure = replace(figure, reason=(
            "partly written sectors or elements stored more than once" if measured >
            p.dram_write_bytes else "a guard or data-dependent store left part of the "
            "output unwritten, or the writes are atomic updates, which are not stores"))
    return figure


def _sectors(kind: str, title: str, p: Prediction, measured: float | None,
             stores: bool) -> ComparedFigure:
    """The kernel's average sectors per request against the worst access of the same
    direction (loads or stores) the analysis names (or the ideal when it calls every
    access coalesced): an average cannot exceed its worst access, so a measurement above
    it shows an access the analysis missed. An access whose direction the feedback does
    not state counts for both."""
    worst = [a.value for a in p.sectors_per_request if a.store in (stores, None)]
    if worst:
        predicted: float | None = max(max(worst), IDEAL_SECTORS_4B)
    elif p.all_coalesced or (p.sectors_per_request and all(
            a.store is not None for a in p.sectors_per_request)):
        predicted = IDEAL_SECTORS_4B  # (every uncoalesced access goes the other way)
    else:
        predicted = None
    ok = None if predicted is None or measured is None else measured <= predicted * 1.10
    return ComparedFigure(kind, title, "sectors/request", predicted, measured,
                  "average <= worst predicted access (+10%)", ok,
                  None if ok is not False else
                  "an access is less coalesced than the analysis says (misaligned rows, "
                  "a guard that idles lanes, or an access it did not examine)",
                  note="worst access" if worst else "coalesced, 4 B"
                  if predicted is not None else "not analysed at this leaf")


def sectors_load(p: Prediction, c: Mapping[str, float]) -> ComparedFigure:
    return _sectors("sectors-load", "global load sectors per request", p,
                    _ratio(c, ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",),
                           ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",)), False)


def sectors_store(p: Prediction, c: Mapping[str, float]) -> ComparedFigure:
    return _sectors("sectors-store", "global store sectors per request", p,
                    _ratio(c, ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",),
                           ("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",)), True)


def bank_conflicts(p: Prediction, c: Mapping[str, float]) -> ComparedFigure:
    """Shared-memory wavefronts over the wavefronts the same accesses take without a
    conflict (Nsight Compute's ideal: a 64-bit access takes 2, a 128-bit one 4; 1:
    conflict free) against the worst conflict degree the analysis names. An average over
    every shared access: above the worst degree, a conflict went unreported; a predicted
    conflict shows as any excess at all, since one conflicting access among many others
    barely moves it. Without the ideal (an older report), wavefronts per instruction."""
    ideal = c.get("memory_l1_wavefronts_shared_ideal")
    if ideal:
        measured = _ratio(c, ("memory_l1_wavefronts_shared",),
                          ("memory_l1_wavefronts_shared_ideal",))
    else:
        measured = _ratio(c, ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
                              "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"),
                          ("smsp__sass_inst_executed_op_shared_ld.sum",
                           "smsp__sass_inst_executed_op_shared_st.sum"))
    degrees = [a.value for a in p.conflict_degree]
    predicted = max(degrees) if degrees else 1.0 if p.conflict_free else None
    ok: bool | None = None
    reason = None
    if predicted is not None and measured is not None:
        if measured > predicted * 1.10:
            ok, reason = False, ("bank conflicts the analysis did not report (an index it "
                                 "could not examine, or wide accesses split in wavefronts)")
        elif predicted > 1 and measured <= 1.0:
            ok, reason = False, "the predicted conflict did not happen on the device"
        else:
            ok = True
    return ComparedFigure("bank-conflicts", "shared-memory wavefronts over the ideal", "way",
                  predicted, measured, "measured <= worst predicted degree (+10%)", ok,
                  reason, note="worst access" if degrees else "conflict-free"
                  if predicted is not None else "not analysed at this leaf")


def theoretical_occupancy(p: Prediction, c: Mapping[str, float]) -> ComparedFigure:
    measured = c.get("sm__maximum_warps_per_active_cycle_pct")
    predicted = p.theoretical_occupancy_pct
    ok = None if predicted is None or measured is None else abs(predicted - measured) < 0.5
    reason = None
    if ok is False:
        registers = c.get("launch__registers_per_thread")
        reason = (f"the compiler's register choice ({registers:.0f} registers per thread "
                  f"against about {p.registers_per_thread:.0f} estimated)"
                  if registers is not None and p.registers_per_thread is not None
                  and registers != p.registers_per_thread
                  else "a resource limit the occupancy rules do not know")
    return ComparedFigure("occupancy-theoretical", "theoretical occupancy", "%", predicted,
                  measured, "exact", ok, reason)


def achieved_occupancy(p: Prediction, c: Mapping[str, float]) -> ComparedFigure:
    """Against the occupancy the feedback expects of this launch: the theoretical one, or
    less where the grid's last wave leaves block slots empty or the grid has too few
    blocks to fill every SM (prediction.wave_occupancy)."""
    measured = c.get("sm__warps_active.avg.pct_of_peak_sustained_active")
    predicted = p.occupancy_pct
    if predicted is None or measured is None:
        return ComparedFigure("occupancy-achieved", "achieved occupancy", "%", predicted, measured,
                      "within 10 points", None)
    ok = abs(predicted - measured) <= 10
    reason = None
    if not ok:
        reason = ("blocks finish unevenly (the last wave, or work that differs per block)"
                  if measured < predicted else
                  "more warps resident than the feedback expects (its register estimate)")
    return ComparedFigure("occupancy-achieved", "achieved occupancy", "%", predicted, measured,
                  "within 10 points", ok, reason)


def registers(p: Prediction, c: Mapping[str, float]) -> ComparedFigure:
    measured = c.get("launch__registers_per_thread")
    predicted = p.registers_per_thread
    ok = None if predicted is None or measured is None else _relative(predicted, measured,
                                                                      0.5)
    return ComparedFigure("registers", "registers per thread", "", predicted, measured,
                  "within 50% (an estimate)", ok,
                  None if ok is not False else "the compiler's register choice",
                  note="estimate")


def spills(p: Prediction, c: Mapping[str, float]) -> ComparedFigure:
    measured = _sum(c, "smsp__sass_inst_executed_op_local_ld.sum",
                    "smsp__sass_inst_executed_op_local_st.sum")
    ok = None if measured is None else measured == 0
    return ComparedFigure("spills", "local-memory instructions (spills)", "warp instr.", 0.0,
                  measured, "none", ok,
                  None if ok is not False else
                  "the compiler kept data in local memory (register spills or an array "
                  "indexed at run time)")


def branch_efficiency(p: Prediction, c: Mapping[str, float]) -> ComparedFigure:
    measured = c.get("smsp__sass_average_branch_targets_threads_uniform.pct")
    if c.get("smsp__sass_branch_targets_threads_divergent.sum") == 0:
        # ncu reports 0% where the kernel executed no branch target at all: no divergence
        measured = 100.0
    named = [a.value for a in p.branch_efficiency]
    predicted = min(named) if named else 100.0
    ok = None if measured is None else measured >= predicted - 5
    return ComparedFigure("branch-efficiency", "branch efficiency", "%", predicted, measured,
                  "measured >= worst predicted branch - 5 points", ok,
                  None if ok is not False else
                  "divergent branches the analysis did not report (a guard at the edge "
                  "of the data, or a loop whose trip count differs between lanes)",
                  note="worst branch" if named else "none reported")


FIGURES: tuple[Callable[[Prediction, Mapping[str, float]], ComparedFigure], ...] = (
    time_bound, time_estimate, dram_read, dram_write, stored_bytes, sectors_load, sectors_store,
    bank_conflicts, theoretical_occupancy, achieved_occupancy, registers, spills,
    branch_efficiency,
)


def compare(p: Prediction, counters: Mapping[str, float]) -> list[ComparedFigure]:
    """Every figure kind, in the order the table prints them."""
    return [figure(p, counters) for figure in FIGURES]
