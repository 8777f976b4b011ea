"""The line `mcl run --target` prints for a kernel's time, on one device or split across
several (mcl.commands.run and mcl.commands.run_multi print it; here, so neither imports the
other's module for it)."""

from __future__ import annotations

from typing import Any, Protocol


class _Run(Protocol):
    """What the line tells of a run (`mcl.commands.run.PreparedRun`)."""

    function: str
    sizes: dict[str, int]
    reference: Any  # mcl.verify.Reference: the work of the run's sizes


def kernel_line(prepared: _Run, target: str, seconds: float, repeat: int,
                whose: str = "") -> str:
    """`matmul (hopper) on n=... : kernel time 1.234 ms (median of 5), 12.3 GFLOP/s`;
    `whose` says whose time it is (a split run's slowest device)."""
    from mcl.verify import format_rate

    sizes = " ".join(f"{k}={v}" for k, v in prepared.sizes.items())
    line = f"{prepared.function} ({target}) on {sizes}: kernel time {seconds * 1e3:.3f} ms"
    if whose:
        line += f" ({whose})"
    if repeat > 1:
        line += f" (median of {repeat})"
    rate = format_rate(prepared.reference.work(prepared.sizes), seconds)
    return f"{line}, {rate}" if rate else line
