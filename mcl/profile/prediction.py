"""What mcl's feedback predicts for one function at its leaf, read from the feedback's
public output: the messages of `mcl check --format json` (mcl.feedback.stage.json_report)
and the roofline of mcl.report.attained. Nothing here re-derives a figure, so a better
analysis shows up in `mcl profile` without a change here.

Which message gives which figure (docs/profile.md, "What is compared"):

- time: the least time the roofs allow (roofline), and the time model's estimate
  (`time-estimate`: `estimated_seconds`);
- DRAM traffic: `transfers-total` (bytes_in: every byte the kernel reads must come from
  device memory once; bytes_out: every byte it writes must go there once);
- coalescing: `uncoalesced` (lines x line_bytes per warp request, per access) or
  `memory-access-optimal` (all coalesced);
- bank conflicts: `bank-conflict` (conflict_degree per access) or `memory-access-optimal`;
- occupancy: `occupancy` (warps_per_sm of warp_slots; registers_per_thread_estimate);
- divergence: `divergence` (lane_efficiency per branch);
- suggestions: every suggestion, with the time model's estimated gain (the estimate before
  over the estimate after its change, `estimated_gain`) where it states one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

SECTOR_BYTES = 32  # the unit of a global memory request on NVIDIA GPUs since Fermi's L1


@dataclass
class AccessPrediction:
    """A figure the feedback states for one access (one MCPL line)."""

    line: int
    text: str
    value: float
    excess: float | None = None  # for a coalescing figure: lines over minimum lines
    store: bool | None = None  # for a coalescing figure: a store (None: not stated)


@dataclass
class Suggestion:
    line: int
    code: str
    message: str
    # the time model's speed-up factor (estimate before over after), where it states one
    estimated_gain: float | None
    estimated_seconds_after: float | None = None


@dataclass
class Prediction:
    """The feedback's figures for one function; None where it states none."""

    function: str
    bound_seconds: float | None = None
    bound_by: str | None = None
    estimated_seconds: float | None = None
    dram_read_bytes: float | None = None
    dram_write_bytes: float | None = None
    all_coalesced: bool | None = None  # memory-access-optimal said so
    sectors_per_request: list[AccessPrediction] = field(default_factory=list)
    conflict_free: bool | None = None
    conflict_degree: list[AccessPrediction] = field(default_factory=list)
    theoretical_occupancy_pct: float | None = None  # what the resources allow
    occupancy_pct: float | None = None  # with the grid's waves: what a run can reach
    registers_per_thread: float | None = None
    model_clock_hz: float | None = None  # the SM clock of the estimate, where not stated
    branch_efficiency: list[AccessPrediction] = field(default_factory=list)
    suggestions: list[Suggestion] = field(default_factory=list)


def numeric(values: Mapping[str, Any], name: str) -> float | None:
    """A value of a message in the JSON document: a number, or {"numeric": ...}."""
    value = values.get(name)
    if isinstance(value, dict):
        value = value.get("numeric")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def store_flag(values: Mapping[str, Any]) -> bool | None:
    """Whether an `uncoalesced` message is about a store (value `store`), None where the
    message does not say (feedback older than the value)."""
    flag = numeric(values, "store")
    return None if flag is None else bool(flag)


# The resource limits of the occupancy message (blocks per SM each allows); the grid's
# limit is left out of the theoretical figure, as CUDA's occupancy calculator and Nsight
# Compute's "theoretical occupancy" leave it out.
RESOURCE_LIMITS = ("limit_block_slots", "limit_threads", "limit_warps", "limit_registers",
                   "limit_shared_memory")


def occupancy(p: Prediction, values: Mapping[str, Any]) -> None:
    warps, slots = numeric(values, "warps_per_sm"), numeric(values, "warp_slots")
    blocks = numeric(values, "blocks_per_sm")
    p.registers_per_thread = numeric(values, "registers_per_thread_estimate")
    if warps is None or not slots:
        return
    p.occupancy_pct = p.theoretical_occupancy_pct = 100.0 * warps / slots
    limits = [v for name in RESOURCE_LIMITS if (v := numeric(values, name)) is not None]
    if limits and blocks:
        p.theoretical_occupancy_pct = 100.0 * min(limits) * (warps / blocks) / slots
        waves = wave_occupancy(values, min(limits), warps / blocks, slots)
        if waves is not None:
            p.occupancy_pct = waves


def wave_occupancy(values: Mapping[str, Any], per_sm: float, warps_per_block: float,
                   slots: float) -> float | None:
    """The achieved occupancy (percent of the warp slots) of the launch's grid in waves,
    where every block takes as long: full waves of `per_sm` blocks (what the resources
    allow) on every SM, then the last wave's remaining blocks, one an SM; averaged as
    Nsight Compute averages achieved occupancy, over the cycles an SM has work (an SM
    without a block in the last wave is idle, not counted). A grid smaller than one wave
    is its last wave. Blocks that finish unevenly only lower it: it is what the grid
    allows, not a bound the device must reach. None where the grid is not known."""
    grid, sms = numeric(values, "grid_blocks"), numeric(values, "multiprocessors")
    if not grid or not sms or per_sm <= 0:
        return None
    full, rest = divmod(grid, per_sm * sms)
    busy = full * sms + min(rest, sms)  # SM-waves with a block
    return 100.0 * grid * warps_per_block / (busy * slots)


def predict(function: str, messages: Iterable[Mapping[str, Any]]) -> Prediction:
    """The figures of `function` in the messages of a `--format json` document."""
    p = Prediction(function)
    codes: set[str] = set()
    for m in messages:
        if m.get("function") not in (function, None):
            continue
        code, values, line = m.get("code"), m.get("values") or {}, int(m.get("line") or 0)
        codes.add(str(code))
        text = str(m.get("message", ""))
        if code == "transfers-total":
            p.dram_read_bytes = numeric(values, "bytes_in")
            p.dram_write_bytes = numeric(values, "bytes_out")
        elif code == "occupancy":
            occupancy(p, values)
        elif code == "memory-access-optimal":
            p.all_coalesced = bool(numeric(values, "coalesced"))
            p.conflict_free = bool(numeric(values, "conflict_free"))
        elif code == "uncoalesced":
            lines, size = numeric(values, "lines"), numeric(values, "line_bytes")
            if lines is not None and size:
                p.all_coalesced = False
                least = numeric(values, "minimum_lines") or 1.0
                p.sectors_per_request.append(
                    AccessPrediction(line, text, lines * size / SECTOR_BYTES, lines / least,
                                     store_flag(values)))
        elif code == "bank-conflict":
            degree = numeric(values, "conflict_degree")
            if degree is not None:
                p.conflict_free = False
                p.conflict_degree.append(AccessPrediction(line, text, degree))
        elif code == "divergence":
            efficiency = numeric(values, "lane_efficiency")
            if efficiency is not None:
                p.branch_efficiency.append(AccessPrediction(line, text, 100.0 * efficiency))
        if code == "time-estimate" and (
                estimate := numeric(values, "estimated_seconds")) is not None:
            p.estimated_seconds = estimate
            p.model_clock_hz = numeric(values, "clock_hz")
        # a suggestion, or one the time model weighed at under 3% (a fact since)
        if m.get("severity") == "suggestion" or (
                code != "time-estimate" and numeric(values, "estimated_gain") is not None):
            p.suggestions.append(Suggestion(line, str(code), text,
                                            numeric(values, "estimated_gain"),
                                            numeric(values, "estimated_seconds_after")))
    silent_means_optimal(p, codes)
    return p


def silent_means_optimal(p: Prediction, codes: set[str]) -> None:
    """The lock-step analysis states its "optimal memory access" fact only where it has
    nothing to report. Where it reported a bank conflict but no uncoalesced access (or
    the other way round) and examined every access (no `warp-access-unknown`), the other
    kind of access is optimal all the same."""
    if "warp-access-unknown" in codes:
        return
    if p.all_coalesced is None and "bank-conflict" in codes:
        p.all_coalesced = True
    if p.conflict_free is None and "uncoalesced" in codes:
        p.conflict_free = True
