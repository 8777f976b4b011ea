"""How the written description states a measured figure: the HDL statement, and the
comment beside it saying how it was measured and how much the runs spread; plus the
warning for a figure that disagrees with the nominal one by more than `TOLERANCE`."""

from __future__ import annotations

from mcl.detect.measurements import Measurements
from mcl.detect.timing import Rate

TOLERANCE = 0.20  # a measured figure further than this from the nominal one is reported

# Rates by key: (scale, unit) as comments write them.
UNITS = {"flops": (1e9, "GFLOP/s"), "bytes": (1e9, "GB/s"), "seconds": (1e-9, "ns")}


def rate_text(rate: Rate, kind: str = "bytes") -> str:
    """`12.3 GB/s (how; best of 5; median 11.0, worst 9.8 GB/s)`."""
    scale, unit = UNITS[kind]
    return (f"{rate.value / scale:,.1f} {unit} ({rate.how}; "
            f"{rate.spread_text(scale, unit)})")


def latency_text(rate: Rate) -> str:
    """A latency's spread reads lowest first: `best of 5; median 3.1, worst 4.0 ns`."""
    return rate_text(rate, "seconds")


def cycles(seconds: float, clock_hz: float) -> int:
    return max(1, round(seconds * clock_hz))


def deviation(what: str, measured: float, nominal: float, nominal_source: str,
              unit: tuple[float, str]) -> str | None:
    """A warning where `measured` is more than TOLERANCE off `nominal`, else None."""
    if nominal <= 0 or abs(measured / nominal - 1) <= TOLERANCE:
        return None
    scale, name = unit
    return (f"{what}: measured {_figure(measured / scale)} {name} is "
            f"{measured / nominal:.0%} of the nominal {_figure(nominal / scale)} {name} "
            f"({nominal_source})")


def _figure(x: float) -> str:
    """Whole numbers from 100 up (cycles, GB/s of a GPU), one decimal below."""
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.1f}"


def copy_comment(measured: Measurements) -> str:
    """The device-memory figures beside the roof: the copy the roof is, read and write,
    and the library's copy of the same size in the same run."""
    rates = measured.rates
    parts = [f"copy {rate_text(rates['copy'])}"] if "copy" in rates else []
    parts += [f"{key} {rates[key].value / 1e9:,.1f} GB/s (median {rates[key].median / 1e9:,.1f})"
              for key in ("read", "write") if key in rates]
    if "library_copy" in rates:
        parts.append(f"in the same run {rate_text(rates['library_copy'])}")
    return "; ".join(parts)


def fma_comment(measured: Measurements) -> str:
    """The peak kernel and the vendor library beside the compute roof."""
    rates = measured.rates
    if "fma" not in rates:
        return measured.notes.get("fma", "FMA chains")
    parts = [f"peak kernel {rate_text(rates['fma'], 'flops')}"]
    if "gemm" in rates:
        gemm = rates["gemm"]
        parts.append(f"library {rate_text(gemm, 'flops')}")
        parts.append("the roof is the library's rate: the kernel stayed below it"
                     if gemm.value > rates["fma"].value else
                     "the roof is the kernel's rate, at least the library's")
    return "; ".join(parts)


def latency_statement(rate: Rate, clock_mhz: float, clock_source: str) -> tuple[str, str]:
    """`latency = N cycles;` from a measured latency at the unit's clock (HDL states
    latencies in cycles of the execution unit, as hopper.hdl)."""
    return (f"latency = {cycles(rate.value, clock_mhz * 1e6)} cycles;",
            f"measured {latency_text(rate)}, at the clock of {clock_mhz:g} MHz "
            f"({clock_source})")


def bandwidth_statement(rate: Rate, instances: int, what: str) -> tuple[str, str]:
    """`bandwidth = N MB/s;` per instance of a memory (a core's cache, an SM's shared
    memory) from a rate measured over `instances` of them together."""
    per = rate.value / max(1, instances)
    return (f"bandwidth = {max(1, round(per / 1e6))} MB/s;",
            f"measured, per {what}: {rate_text(rate)} over {instances} together")


def launch_statement(launch: Rate, wall: Rate | None, clock_mhz: float, clock_source: str,
                     stated: bool, parent: tuple[str, str | None] = ("", None)
                     ) -> tuple[str, str]:
    """A device's `latency`: what one kernel launch costs beyond its work, which the time
    model adds once per kernel -- the median of the empty kernel's duration on the device
    (what a launch typically costs, not the luckiest), or the `parent` description's own
    statement where it has one (its name, the statement): OpenCL's profiling events
    count more than the profiler's duration that a parent's launch was measured with
    and the time model is validated against. Where this version of HDL states no latency
    on a device (`stated` false) the statement is written commented out."""
    measured_cycles = cycles(launch.median, clock_mhz * 1e6)
    stated_latency = parent[1] or f"latency = {measured_cycles} cycles;"
    us = 1e-6
    kept = (f"as {parent[0]}.hdl (a profiler's duration of an empty kernel, the timing the "
            f"time model is validated against, docs/hdl.md); here {measured_cycles} cycles "
            if parent[1] else "")
    comment = (f"one kernel launch beyond its work, {kept}measured (the median): {launch.how}; "
               f"{launch.spread_text(us, 'us')}, best {launch.value / us:,.1f} us; at the "
               f"clock of {clock_mhz:g} MHz ({clock_source})")
    if wall is not None:
        comment += (f"; enqueue to finish on the host's clock: median "
                    f"{wall.median / us:,.1f} us (best {wall.value / us:,.1f})")
    if not stated:
        return ("// " + stated_latency,
                comment + "; commented out: this HDL states no device latency")
    return stated_latency, comment
