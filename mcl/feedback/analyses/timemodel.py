"""The time model: how long a kernel takes at a GPU leaf, from the figures the feedback
already states, and what each suggestion would save (docs/feedback.md, "Time estimate").

The roofline (section 8 of the paper's future work, mcl.feedback.analyses.roofline) says
how fast a kernel could be at best; a programmer choosing between suggestions needs the
model's estimate of how fast it is, and of how fast it would be after each change, in the
manner of Nsight Compute's "estimated speedup". The estimate is the largest of three
limits, each built from figures of the feedback over figures of the description:

- device memory: the compulsory bytes of each space the level's memory holds (the
  roofline's `bytes_<space>`) over its bandwidth times `ACHIEVED_BANDWIDTH`;
- the SM: compute (the floating-point operations over the arithmetic peak) plus on-chip
  memory (every byte the shared-memory accesses move, every byte the global accesses
  move through the L1, the roofline's `bytes_<space>_no_reuse`, and the transactions
  that bank conflicts and uncoalesced accesses add, their messages' `warp_executions` x
  extra transactions, over the banked memory's bandwidth: hopper's and fermi's L1 and
  shared memory are one SRAM). The two add: the same warp schedulers issue both;
- latency (Little's law, as Hong and Kim's MWP model, ISCA 2009): an SM completes at
  most `warps x loads in flight per warp` global loads per memory latency, so its
  warp-level global loads take `loads x latency / (warps x loads in flight)`; the warps
  per SM are the occupancy message's, the loads in flight per warp the global loads of
  the kernel's most frequent statement body, the latency the description's interconnect
  `latency` at the SM clock for the compulsory share of the bytes and the cache's
  `latency` (hopper's l2) for the share the caches serve.

A grid that does not fill the SMs evenly runs the busiest one longer (its blocks over
the average), which scales the SM and latency terms.

Every suggestion the model can re-evaluate gets `estimated_seconds_after` and
`estimated_gain` (before over after): the occupancy message's change at its
`warps_per_sm_after`, an uncoalesced access or bank conflict without its extra
transactions. A change the model does not capture (a load moved to a faster space, more
elements per unit, a privatised store) states no gain. Under `MIN_GAIN` a suggestion is a
fact. Without every figure (no peak, no latency, no occupancy, sizes missing) the model
says nothing.

This analysis runs last: it reads the messages of the analyses before it
(`AnalysisContext.earlier`) and returns them, revised, with its own fact.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from mcl.feedback.analysis import AnalysisContext
from mcl.feedback.codes import LEFT_OUT, MessageCode
from mcl.feedback.emit import Emitter, seconds_text
from mcl.feedback.facts.costs import DATA, executions, function_costs
from mcl.feedback.messages import Message, Severity
from mcl.feedback.values import evaluate
from mcl.hdl.model import Quantity
from mcl.hdl.peak import Bandwidth, bandwidth, compute_peaks, peak_flops

DOCS = "time-estimate-timemodel"  # its section of docs/feedback.md
MESSAGE_CODES = (
    MessageCode("time-estimate", "the model's time estimate", (Severity.INFO,), DOCS,
                headline=True, column=LEFT_OUT),
)

# The share of a memory's stated bandwidth a streaming kernel reaches. Calibrated on the
# calibration half of the validation cases (the odd positions of the recorded cases in
# name order; benchmarks/validate_feedback.py --calibrate, docs/validation.md "Time
# estimate"): the median, over those the model calls bound by device memory, of the
# compulsory traffic's time at the stated bandwidth over the measured time (0.737).
ACHIEVED_BANDWIDTH = 0.74
# A change whose estimated gain is below this factor is a fact, not a suggestion (as
# Nsight Compute's rules stay quiet below a small estimated speedup).
MIN_GAIN = 1.03

DEVICE_MEMORY, ON_CHIP, COMPUTE, LATENCY = "device memory", "on-chip memory", "compute", \
    "latency"
SM = "the SM (compute + on-chip memory)"
# The suggestions the model re-evaluates.
OCCUPANCY, UNCOALESCED, BANK_CONFLICT = "occupancy", "uncoalesced", "bank-conflict"


@dataclass(frozen=True)
class Figures:
    """What the model reads, at the sizes given: from the description, the roofline's and
    occupancy's messages and the operation counts."""

    multiprocessors: float
    clock_hz: float
    warps_per_sm: float
    flops: float
    peak_flops: float
    device_seconds: float  # compulsory bytes over the stated bandwidth, every space
    on_chip_bytes: float  # shared bytes and global bytes through the L1
    on_chip_bandwidth: float  # bytes/s, all SMs
    extra_bytes: float  # the on-chip bytes conflicts and uncoalesced accesses add
    loads_per_sm: float  # warp-level global loads of the busiest SM
    loads_in_flight: int  # per warp
    latency_s: float
    wave_tail: float = 1.0  # blocks of the busiest SM over the average

    @property
    def terms(self) -> dict[str, float]:
        """Seconds each part needs alone."""
        return {
            DEVICE_MEMORY: self.device_seconds / ACHIEVED_BANDWIDTH,
            ON_CHIP: (self.on_chip_bytes + self.extra_bytes) / self.on_chip_bandwidth
            * self.wave_tail,
            COMPUTE: self.flops / self.peak_flops * self.wave_tail,
            LATENCY: self.loads_per_sm * self.wave_tail * self.latency_s
            / (self.warps_per_sm * self.loads_in_flight),
        }

    @property
    def limits(self) -> dict[str, float]:
        """The three limits: device memory, the SM's issue (its arithmetic and its
        on-chip accesses come from the same warp schedulers: their times add) and
        latency; the warps of an SM overlap the three."""
        t = self.terms
        return {DEVICE_MEMORY: t[DEVICE_MEMORY], SM: t[COMPUTE] + t[ON_CHIP],
                LATENCY: t[LATENCY]}

    @property
    def seconds(self) -> float:
        return max(self.limits.values())

    @property
    def limit(self) -> str:
        limits = self.limits
        return max(limits, key=lambda k: limits[k])


# ----------------------------------------------------------------------------- figures


def _number(m: Message, name: str) -> float | None:
    v = m.value_map.get(name)
    return None if v is None or v.numeric is None else float(v.numeric)


def _one(messages: Sequence[Message], code: str) -> Message | None:
    return next((m for m in messages if m.code == code), None)


def _on_chip(hwd: Any) -> Bandwidth | None:
    """The banked memory of the SM (shared memory) and its bandwidth, all SMs."""
    for m in hwd.memories():
        if m.nr_banks and m.addressable and m.spaces:
            return bandwidth(hwd, m.spaces[0])
    return None


def _seconds(latency: Any, clock_hz: float) -> float | None:
    """A `latency` property in seconds (cycles at the SM clock); None where not stated."""
    if not isinstance(latency, Quantity) or not latency.value:
        return None
    value = float(latency.value)
    return value if latency.unit == "s" else value / clock_hz


def _latency_s(hwd: Any, space: str, clock_hz: float, compulsory_share: float
               ) -> float | None:
    """The mean latency of a global load: the link's to the memory holding `space` for
    the compulsory share of the bytes (those must come from device memory), a cache's
    that states one (hopper's l2) for the rest; the link's for all where no cache
    states a latency."""
    held = hwd.memories_for(space)
    link = hwd.link(held[0].node.path) if held else None
    memory = _seconds(link.latency if link is not None else None, clock_hz)
    if memory is None:
        return None
    cached = [t for c in hwd.caches() if space in c.spaces
              if (t := _seconds(c.node.values.get("latency"), clock_hz)) is not None]
    if not cached:
        return memory
    share = min(1.0, max(0.0, compulsory_share))
    return memory * share + max(cached) * (1.0 - share)


def figures_of(ctx: AnalysisContext, messages: Sequence[Message]) -> Figures | None:
    """The figures of the model for one function, or None where one is missing."""
    roof, occupancy = _one(messages, "roofline"), _one(messages, OCCUPANCY)
    hwd = ctx.hwd
    peaks = compute_peaks(hwd)
    shared = _on_chip(hwd)
    if roof is None or occupancy is None or not peaks or shared is None:
        return None
    clock = max(peaks, key=lambda p: p.flops).clock_hz
    flops, peak = _number(roof, "flops"), peak_flops(hwd)
    warps, sms = _number(occupancy, "warps_per_sm"), _number(occupancy, "multiprocessors")
    cached = sorted({s for c in hwd.caches() for s in c.spaces})
    if None in (flops, peak, warps, sms) or not warps or not sms or not cached:
        return None
    device = on_chip = compulsory = through_cache = 0.0
    for name, v in roof.values:
        space = name[len("bytes_"):]
        if not name.startswith("bytes_") or name.endswith("_no_reuse"):
            continue
        rate = bandwidth(hwd, space)
        if rate is None or v.numeric is None:
            return None
        through_l1 = roof.value_map.get(f"bytes_{space}_no_reuse", v).numeric or 0.0
        if rate.source == shared.source:
            on_chip += float(v.numeric)
        else:
            device += float(v.numeric) / rate.bytes_per_s
            if space in cached:
                on_chip += float(through_l1)
                compulsory += float(v.numeric)
                through_cache += float(through_l1)
    latency = _latency_s(hwd, cached[0], clock,
                         compulsory / through_cache if through_cache else 1.0)
    if latency is None:
        return None
    loads, in_flight = _global_loads(ctx, cached)
    if loads is None:
        return None
    grid = _number(occupancy, "grid_blocks")
    tail = math.ceil(grid / sms) / (grid / sms) if grid else 1.0
    lanes = _warp_size(hwd)
    return Figures(sms, clock, float(warps), float(flops or 0.0), float(peak or 1.0), device,
                   on_chip, shared.bytes_per_s, sum(_extra_bytes(m) for m in messages),
                   loads / lanes / sms, in_flight, float(latency or 0.0), tail)


def _warp_size(hwd: Any) -> int:
    lockstep = hwd.lockstep(hwd.executing_unit().name)
    return int(lockstep.count) if lockstep is not None else 1


def _global_loads(ctx: AnalysisContext, cached: Sequence[str]) -> tuple[float | None, int]:
    """The thread-level loads of the cached spaces (opstats' count) and how many of them
    one warp has in flight: the loads of the statement body that runs most often."""
    facts = ctx.facts
    costs = function_costs(facts, ctx.values)
    total = 0.0
    for (cat, kind, _unit, key), count in costs.entries.items():
        if cat != DATA or kind != "load" or key is None or _space(facts, key) not in cached:
            continue
        number = evaluate(count, ctx.values).numeric
        if number is None:
            return None, 1
        total += float(number)
    return total, _in_flight(ctx, cached)


def _in_flight(ctx: AnalysisContext, cached: Sequence[str]) -> int:
    """The global loads one warp has in flight: the loads of the statements that run
    most often (one loop body), which do not wait for each other."""
    facts = ctx.facts
    runs = []
    for a in facts.accesses:
        if a.reads and a.space in cached and a.binding.root.kind == "param":
            number = evaluate(executions(facts, a.item)[0], ctx.values).numeric
            if number is not None:
                runs.append(float(number))
    most = max(runs, default=0.0)
    return max(1, sum(r >= 0.99 * most for r in runs)) if most else 1


def _space(facts: Any, key: tuple[str, str]) -> str | None:
    if key[0] == "param":
        p = facts.param(key[1])
        return p.space if p is not None else None
    return key[1]


def _extra_bytes(m: Message) -> float:
    """The on-chip bytes an uncoalesced access or a bank conflict adds: per warp
    execution, the transactions beyond the fewest, each a line (a sector at hopper) or a
    pass over the banks (banks x 4 B)."""
    runs = _number(m, "warp_executions")
    if runs is None:
        return 0.0
    if m.code == UNCOALESCED:
        lines, least, size = (_number(m, n) for n in ("lines", "minimum_lines", "line_bytes"))
        if lines is None or least is None or size is None:
            return 0.0
        return runs * (lines - least) * size
    if m.code == BANK_CONFLICT:
        degree, banks = _number(m, "conflict_degree"), _number(m, "banks")
        if degree is None or banks is None:
            return 0.0
        return runs * (degree - 1) * banks * BANK_WORD_BYTES
    return 0.0


BANK_WORD_BYTES = 4  # a bank is 4 B wide (mcl.feedback.lockstep, CUDA programming guide)


def after(f: Figures, m: Message) -> Figures | None:
    """The figures once the change `m` suggests is made; None where the model does not
    capture the change."""
    if m.code == OCCUPANCY:
        warps = _number(m, "warps_per_sm_after")
        return replace(f, warps_per_sm=warps) if warps else None
    if m.code in (UNCOALESCED, BANK_CONFLICT) and _number(m, "warp_executions") is not None:
        return replace(f, extra_bytes=max(0.0, f.extra_bytes - _extra_bytes(m)))
    return None


# ----------------------------------------------------------------------------- messages


def time_model(ctx: AnalysisContext) -> list[Message]:
    """The earlier messages, each suggestion with the gain the model estimates, and the
    time-estimate fact; the earlier messages unchanged where the model lacks a figure."""
    earlier = list(ctx.earlier)
    f = figures_of(ctx, earlier)
    if f is None:
        return earlier
    return [with_gain(m, f) for m in earlier] + [_fact(ctx, f)]


def with_gain(m: Message, f: Figures) -> Message:
    """`m` with `estimated_seconds_after` and `estimated_gain` where the model captures its
    change; a suggestion under MIN_GAIN becomes a fact."""
    if m.severity != Severity.SUGGESTION and m.code not in (UNCOALESCED, BANK_CONFLICT):
        return m
    changed = after(f, m)
    if changed is None:
        return m
    before, later = f.seconds, changed.seconds
    gain = before / later if later > 0 else 1.0
    text = (f"{m.text}; the time model estimates {seconds_text(before)} -> "
            f"{seconds_text(later)} ({gain:.2f}x)")
    if gain < MIN_GAIN:
        text += f", limited by {f.limit} either way"
    severity = Severity.INFO if gain < MIN_GAIN else m.severity
    return replace(m, text=text, severity=severity, values=(
        *m.values, ("estimated_seconds_after", evaluate(later, {})),
        ("estimated_gain", evaluate(gain, {}))))


def _fact(ctx: AnalysisContext, f: Figures) -> Message:
    terms = f.terms
    figures: dict[str, Any] = {"estimated_seconds": f.seconds,
                               **{"seconds_" + k.replace(" ", "_").replace("-", "_"): v
                                  for k, v in terms.items()},
                               "warps_per_sm": f.warps_per_sm,
                               "loads_in_flight": f.loads_in_flight,
                               "latency_seconds": f.latency_s}
    limits = f.limits
    text = (f"time estimate: {seconds_text(f.seconds)}, limited by {f.limit}: device memory "
            f"{seconds_text(limits[DEVICE_MEMORY])}, the SM {seconds_text(limits[SM])} "
            f"(compute {seconds_text(terms[COMPUTE])} + on-chip memory "
            f"{seconds_text(terms[ON_CHIP])}), latency {seconds_text(limits[LATENCY])} "
            f"({int(f.warps_per_sm)} warps per SM, {f.loads_in_flight} global "
            f"load{'s' if f.loads_in_flight != 1 else ''} in flight per warp)")
    emit = Emitter(ctx.facts, "timemodel", ctx.values)
    return emit.message("time-estimate", Severity.INFO, text, ctx.function.span, figures,
                        hint="the largest of the three limits is the estimate (docs/"
                        "feedback.md, \"Time estimate\"); each suggestion the model can "
                        "weigh states the estimate after its change")


def has_time_model(hwd: Any) -> bool:
    """A leaf with an arithmetic peak and a banked on-chip memory with a bandwidth (hopper,
    fermi); the analysis itself checks the figures it reads."""
    return peak_flops(hwd) is not None and _on_chip(hwd) is not None

