"""The feedback worker's memory stays bounded over a long editing session: every job
makes new loop counters, so SymPy's cache would otherwise keep growing job after job
(mcl.lsp.worker.SYMPY_ENTRIES)."""

from __future__ import annotations

import gc
import tracemalloc

import pytest
import sympy.core.cache

from mcl.lsp import worker
from mcl.lsp.analysis import Libraries

from .conftest import KERNELS

KERNEL = KERNELS / "matmul" / "gpu_v1.mcpl"
VALUES = (("n", 2048), ("m", 2048), ("p", 2048))


def _entries() -> int:
    return sum(f.cache_info().currsize for f in sympy.core.cache.CACHE)


def _job(number: int) -> worker.FeedbackJob:
    """An edit of a constant in the kernel body: a new program, analysed in full."""
    text = KERNEL.read_text().replace("0.0;", f"{number}.0;", 1)
    path = str(KERNEL.resolve())
    return worker.FeedbackJob(path, ((path, text),), (), (), None, VALUES)


@pytest.mark.slow  # 35 feedback jobs, 30 under tracemalloc: about 25 s
def test_feedback_jobs_keep_the_worker_memory_bounded(monkeypatch) -> None:
    libraries = Libraries()
    for number in range(3):  # warm: imports, the library, the compiled formulas
        result = worker.FeedbackResult()
        worker._run(_job(number), libraries, result)
        assert result.messages and result.failure is None
    sympy.core.cache.clear_cache()
    worker._run(_job(3), libraries, worker.FeedbackResult())
    # What one job fills in from empty, and a few jobs more: the bound is reached every
    # few jobs, so each window of ten below holds whole rounds of filling and emptying.
    limit = _entries() + 120
    monkeypatch.setattr(worker, "SYMPY_ENTRIES", limit)
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        growth = []
        for number in range(4, 34):
            worker._run(_job(number), libraries, worker.FeedbackResult())
            worker.bound_caches()  # as the worker does after every job
            assert _entries() <= limit
            gc.collect()
            growth.append(tracemalloc.get_traced_memory()[0] - start)
    finally:
        tracemalloc.stop()
    # Unbounded, every job adds about 19 KB for good: 190 KB from one window of ten jobs
    # to the next. Bounded, the last window reaches no higher than the one before.
    assert max(growth[20:]) <= max(growth[10:20]) + 60_000, growth
