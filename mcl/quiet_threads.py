"""Waiting, before a timing, until the other threads of this process have stopped running.

A parallel runtime keeps its worker threads busy-waiting for a while after each call, so
that the next call starts without waking them: OpenBLAS, numpy's matmul, spins them for
about 2^28 cycles (its THREAD_TIMEOUT), a tenth of a second. A kernel timed in that window
shares the cores with them: on a 16-core host, OpenMP's 16 threads and OpenBLAS's 15
spinning workers. The threads are this process's, so the process's CPU time tells: while
the calling thread sleeps, any CPU time the process takes is theirs.
"""

from __future__ import annotations

import time

# Sleep in windows of this length until, in `QUIET` windows in a row, the other threads
# used less than `BUSY` of one core (on a loaded machine the system may leave a spinning
# thread out of one window); give up after `LIMIT_S` (a thread that never rests, say
# another library's pool, must not hang a timing: it then runs beside it as before).
WINDOW_S = 0.01
QUIET = 5
BUSY = 0.1
LIMIT_S = 1.0


def others_busy(window_s: float = WINDOW_S) -> float:
    """The cores' worth of CPU time that the process's other threads took while this one
    slept for `window_s` (0.0: none ran; 15.0: fifteen spun throughout)."""
    process, thread, wall = time.process_time(), time.thread_time(), time.perf_counter()
    time.sleep(window_s)
    others = (time.process_time() - process) - (time.thread_time() - thread)
    return max(0.0, others) / (time.perf_counter() - wall)


def wait_until_quiet(limit_s: float = LIMIT_S, window_s: float = WINDOW_S,
                     busy: float = BUSY, quiet: int = QUIET) -> float:
    """Sleep until the other threads of the process rest (less than `busy` of a core in
    `quiet` windows of `window_s` in a row) or `limit_s` has passed; the seconds waited."""
    start = time.perf_counter()
    rested = 0
    while rested < quiet and time.perf_counter() - start < limit_s:
        rested = rested + 1 if others_busy(window_s) < busy else 0
    return time.perf_counter() - start
