"""mcl.quiet_threads: a timing waits until the process's other threads rest. The cause it
answers, numpy's BLAS spinning its workers after a product, is checked on this machine's
numpy in a process of its own (its thread count is read at import)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from mcl.quiet_threads import BUSY, others_busy, wait_until_quiet

REPO = Path(__file__).resolve().parents[1]


def _spin(seconds: float) -> tuple[threading.Thread, list[float]]:
    """A thread that keeps a core busy for `seconds`; the list gets the time it stopped."""
    stopped: list[float] = []

    def spin() -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass
        stopped.append(time.perf_counter())

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    return thread, stopped


def test_a_spinning_thread_is_busy_and_a_finished_one_is_not() -> None:
    thread, _ = _spin(0.3)
    assert others_busy(0.05) >= BUSY
    thread.join()
    assert others_busy(0.05) < BUSY


def test_the_wait_ends_after_the_other_thread_stops_spinning() -> None:
    thread, stopped = _spin(0.2)
    waited = wait_until_quiet()
    assert stopped and time.perf_counter() > stopped[0]
    assert 0.15 < waited < 1.0
    thread.join()
    assert wait_until_quiet() < 0.15  # nothing runs: a few windows, no more


def test_a_thread_that_never_rests_does_not_hang_the_wait() -> None:
    thread, _ = _spin(1.0)
    assert 0.2 <= wait_until_quiet(limit_s=0.2) < 0.5
    thread.join()


_AFTER_PRODUCT = """
import numpy as np
from mcl.quiet_threads import others_busy, wait_until_quiet
a = np.ones((512, 512), np.float32)
a @ a
busy = []
for _ in range(3):
    a @ a
    busy.append(max(others_busy(0.01) for _ in range(5)))
    wait_until_quiet()
    busy.append(others_busy(0.05))
print(*busy)
"""


def test_numpy_blas_workers_spin_after_a_product_until_the_wait() -> None:
    """With two BLAS threads, the worker numpy's product used still runs right after it
    returns (the window in which a CPU kernel timed beside it loses cores), and rests
    once `wait_until_quiet` returns."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="2", OMP_NUM_THREADS="1",
               PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", _AFTER_PRODUCT], env=env, check=True,
                          capture_output=True, text=True)
    busy = [float(x) for x in done.stdout.split()]
    right_after, rested = busy[0::2], busy[1::2]
    assert max(right_after) >= BUSY, busy
    assert max(rested) < BUSY, busy
