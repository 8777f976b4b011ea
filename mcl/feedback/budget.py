"""A time budget for the analyses of one kernel (feedback.md: "Bounded. Every analysis
finishes quickly on any input; where a closed form is out of reach it falls back to a
marked approximation instead of running on").

The engine cannot interrupt SymPy, so the budget is cooperative: the few steps that can
take long on a hostile input (`sympy.summation`, `sympy.simplify`, factoring a figure for
display) ask `spent()` first and, once the budget is spent, take their cheap fallback (an
unevaluated but exact `Sum`, "not proven equal", the unfactored figure). An analysis that
took a fallback is not analysed: none of its messages is shown, only one warning that
says it ran out of time (`registry.analyse`; each analysis has a budget of its own).

The clock is the CPU time of the thread that runs the analyses, not the wall clock: on a
loaded machine the same kernel gets the same feedback. Not the process's CPU time either:
numpy's BLAS threads, started when a sum is evaluated numerically, keep cores busy beside
the analysis, and on the 16-core GPU host that counted three times the analysis' own time
and cut histogram hopper (v1) short ("OVER BUDGET" at 2.7 s of process CPU time for 0.8 s
of wall time). A budget is used by the thread that opened it (`registry.analyse`, the
roofline). `MCL_FEEDBACK_BUDGET` (seconds) overrides the default.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

SECONDS = 1.0


class OutOfTime(Exception):
    """A computation too long to make cooperative at each step (the Kernel interface's
    values, thousands of lanes) found the budget spent: the analysis that ran it stops
    there and is not analysed (`registry.analyse`), as one that took a fallback."""


class Budget:
    def __init__(self, seconds: float) -> None:
        self.deadline = time.thread_time() + seconds
        self.seconds = seconds
        self.cut = False  # a step took its fallback


class _Budgets(threading.local):
    """The open budgets of one thread. Per thread, as the clock is: the editor's server
    checks in a thread of its own, and a budget it opened, read against another thread's
    CPU time, would be long spent (or never) for that thread."""

    def __init__(self) -> None:
        self.stack: list[Budget] = []


_open = _Budgets()


def default_seconds() -> float:
    try:
        return float(os.environ.get("MCL_FEEDBACK_BUDGET", SECONDS))
    except ValueError:
        return SECONDS


@contextmanager
def budget(seconds: float | None = None) -> Iterator[Budget]:
    """The budget of the analyses run inside the `with` block."""
    b = Budget(default_seconds() if seconds is None else seconds)
    _open.stack.append(b)
    try:
        yield b
    finally:
        _open.stack.pop()


def spent() -> bool:
    """Is the current budget spent? The caller then takes its cheap fallback (and the
    budget records that it did)."""
    if not _open.stack:
        return False
    b = _open.stack[-1]
    if time.thread_time() > b.deadline:
        b.cut = True
        return True
    return False


def fallen_back() -> bool:
    """Has a step under the current budget taken its fallback? Unlike `spent`, asking
    takes none: a result computed while this is False is the full one."""
    return bool(_open.stack) and _open.stack[-1].cut


@contextmanager
def not_counted() -> Iterator[None]:
    """Time spent inside the `with` block does not count against the open budgets: a
    bounded step that is no analysis of the kernel (NVRTC compiling it for its register
    count, about a second, mcl.feedback.compiler_registers) must not leave the analyses
    without time."""
    start = time.thread_time()
    try:
        yield
    finally:
        used = time.thread_time() - start
        for b in _open.stack:
            b.deadline += used
