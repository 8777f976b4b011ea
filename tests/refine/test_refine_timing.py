"""`mcl refine --measure`'s timer (mcl/commands/refine_timing.py) on the OpenMP backend:
it times a version only once the process's other threads rest, as the benchmark that
times the found version against numpy does (mcl.quiet_threads)."""

from __future__ import annotations

import threading
import time
from typing import Any

from mcl.backends.openmp.runner import OpenMPSession
from mcl.commands.refine_timing import DeviceTimer
from mcl.hdl.library import default_library
from mcl.refine.kernel import load_kernel
from mcl.resources import kernels_dir

MATMUL_V1 = kernels_dir() / "matmul" / "x86_avx512_v1.mcpl"


def test_a_version_is_timed_after_another_threads_spinning_ends(monkeypatch) -> None:
    """A thread that spins from the moment the version is built (as numpy's BLAS workers
    do after the reference's product) has stopped before the version's run starts."""
    import mcl.report.measure as measure

    start = load_kernel(MATMUL_V1, "x86_avx512", default_library(), [],
                        {"n": 24, "m": 40, "p": 16})
    timer = DeviceTimer.open(start, "x86_avx512", "openmp", None, 3)
    stopped: list[float] = []
    runs: list[float] = []
    spinners: list[threading.Thread] = []

    def spin() -> None:
        end = time.perf_counter() + 0.2
        while time.perf_counter() < end:
            pass
        stopped.append(time.perf_counter())

    prepare = measure.prepare_session

    def prepare_then_spin(*args: Any, **kwargs: Any) -> Any:
        made = prepare(*args, **kwargs)
        spinners.append(threading.Thread(target=spin, daemon=True))
        spinners[-1].start()
        return made

    run = OpenMPSession.run

    def recorded_run(self: OpenMPSession, *args: Any, **kwargs: Any) -> Any:
        runs.append(time.perf_counter())
        return run(self, *args, **kwargs)

    monkeypatch.setattr(measure, "prepare_session", prepare_then_spin)
    monkeypatch.setattr(OpenMPSession, "run", recorded_run)
    measured = timer(start)
    for thread in spinners:
        thread.join()
    assert measured.seconds is not None, measured
    assert stopped and runs and runs[0] > stopped[0]
