"""Repeated timings and their spread, for `mcl hwd detect --measure`.

Every benchmark runs once to warm up (PoCL compiles a kernel at its first launch, a GPU
wakes its clocks) and then `repeat` times; a figure is the best of those runs -- a roof is
what the device reached -- and its spread (worst, median, best) is kept beside it, so the
description's comment says how much the runs agreed.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Spread:
    """Seconds of the timed runs of one benchmark."""

    seconds: tuple[float, ...]

    @property
    def best(self) -> float:
        return min(self.seconds)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def worst(self) -> float:
        return max(self.seconds)


@dataclass(frozen=True)
class Rate:
    """A measured figure: `value` the best of the runs (a rate: the highest; a latency:
    the lowest), `median` and `worst` its spread, `how` the way it was measured, `unit` its
    unit as the comment writes it (the value is in base units: bytes/s, flop/s, s)."""

    value: float
    median: float
    worst: float
    runs: int
    how: str

    @staticmethod
    def of_work(work: float, spread: Spread, how: str) -> Rate:
        """`work` (bytes, flops) done in each run of `spread`."""
        return Rate(work / spread.best, work / spread.median, work / spread.worst,
                    len(spread.seconds), how)

    @staticmethod
    def of_time(per_run: float, spread: Spread, how: str) -> Rate:
        """A duration: each run of `spread` took `per_run` x the figure (a latency)."""
        return Rate(spread.best / per_run, spread.median / per_run, spread.worst / per_run,
                    len(spread.seconds), how)

    def spread_text(self, scale: float, unit: str, digits: int = 1) -> str:
        """`best of 5: median 12.3, worst 11.0 GB/s` with the figures divided by `scale`."""
        return (f"best of {self.runs}; median {self.median / scale:,.{digits}f}, "
                f"worst {self.worst / scale:,.{digits}f} {unit}")


def event_seconds(run: Callable[[], Any], repeat: int, warm_up: bool = True) -> Spread:
    """`run()` enqueues one command and returns its OpenCL event (a queue with profiling):
    the device's own start-to-end times, after one warm-up (unless `run` ran already)."""
    if warm_up:
        run().wait()
    seconds = []
    for _ in range(repeat):
        event = run()
        event.wait()
        seconds.append(max((event.profile.end - event.profile.start) * 1e-9, 1e-9))
    return Spread(tuple(seconds))


def wall_seconds(run: Callable[[], Any], repeat: int, warm_up: bool = True) -> Spread:
    """Wall-clock seconds of `run()` (which waits for what it starts), after one warm-up
    (unless `run` ran already)."""
    if warm_up:
        run()
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        seconds.append(max(time.perf_counter() - start, 1e-9))
    return Spread(tuple(seconds))


def grow_until(run: Callable[[int], float], start: int, seconds: float,
               limit: int = 1 << 30) -> int:
    """The smallest `start` x 4^k for which `run(n)` (seconds) takes at least `seconds`
    (or `limit`): sizes a benchmark to a time rather than guessing the device's speed."""
    n = start
    while n < limit and run(n) < seconds:
        n *= 4
    return min(n, limit)
