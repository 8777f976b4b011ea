"""A cancelled feedback job stops, and the newer job that follows it runs to the end.

The worker process is replaced when a cancelled job does not stop within CANCEL_WAIT_S
(stuck in C code); the newer job, which starts as soon as the cancelled one returns, must
not be taken for the stuck one even when it runs longer than CANCEL_WAIT_S itself."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from mcl.lsp.worker import CANCEL_WAIT_S, DELAY_ENV, FeedbackJob, FeedbackResult, FeedbackWorker

MATMUL = Path(__file__).resolve().parents[2] / "kernels" / "matmul" / "perfect.mcpl"


def _job() -> FeedbackJob:
    return FeedbackJob(path=str(MATMUL), overlays=(), hwd_path=(), include=(), level="gpu",
                       values=())


@pytest.mark.slow  # two jobs, each held back longer than CANCEL_WAIT_S: about 8 s
def test_the_job_after_a_cancelled_one_is_not_taken_for_stuck(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DELAY_ENV, str(CANCEL_WAIT_S + 1.5))
    # The watchdog thread scheduled late, after the newer job took the lock: what
    # happens on a loaded machine.
    watchdog = FeedbackWorker._replace_if_stuck

    def late_watchdog(self: FeedbackWorker, *args: object) -> None:
        time.sleep(0.5)
        watchdog(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(FeedbackWorker, "_replace_if_stuck", late_watchdog)
    worker = FeedbackWorker()
    results: dict[str, FeedbackResult] = {}

    def run(name: str) -> None:
        results[name] = worker.run(_job())

    try:
        first = threading.Thread(target=run, args=("first",))
        first.start()
        end = time.monotonic() + 60
        while not worker._running and time.monotonic() < end:  # warmed up, job sent
            time.sleep(0.01)
        assert worker._running
        time.sleep(0.3)  # the job sleeps in the worker
        worker.cancel()
        second = threading.Thread(target=run, args=("second",))
        second.start()
        first.join(30)
        second.join(30)
    finally:
        worker.close()
    assert results["first"].cancelled
    assert not results["second"].cancelled
    assert results["second"].failure is None
    assert results["second"].messages


def test_a_cancel_inside_an_import_waits_for_the_job(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """An interrupt raised while a module's code runs leaves that module half-made in
    sys.modules for every later job: inside an import the signal does not interrupt."""
    import importlib
    import sys

    from mcl.lsp import worker

    (tmp_path / "mcl_half_made.py").write_text(
        "import sys\nfrom mcl.lsp import worker\nSEEN = worker._importing(sys._getframe())\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("mcl_half_made")
    try:
        assert module.SEEN is True
    finally:
        sys.modules.pop("mcl_half_made", None)
    assert worker._importing(sys._getframe()) is False
    monkeypatch.setattr(worker, "_busy", True)
    with pytest.raises(worker.Cancelled):
        worker._interrupt(0, sys._getframe())


def test_a_job_cancelled_before_its_thread_starts_is_not_sent() -> None:
    """The server hands a job to a thread after reading the worker's generation; a
    keystroke's cancel in between must drop it. Before, the thread marked the job wanted
    only when it ran, after the cancel, and a listing of refinements (a minute) then held
    the worker while the next edit's feedback waited."""
    worker = FeedbackWorker()
    try:
        generation = worker.generation
        worker.cancel()  # the edit, before the thread runs the job
        start = time.perf_counter()
        result = worker.run(_job(), generation)
        assert result.cancelled and time.perf_counter() - start < 1.0
        assert worker._sent == 0  # never sent to the worker
        # a job asked for at the current generation runs
        assert not worker.run(_job(), worker.generation).cancelled
    finally:
        worker.close()


def test_a_job_that_finds_its_worker_being_replaced_starts_another(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A cancel stops a worker whose job did not see the signal; the next job may take
    the lock while that process still looks alive. It used to read EOF from the dying
    worker and come back as cancelled, so the edit got no feedback at all; now it starts
    another worker and runs."""
    worker = FeedbackWorker()
    try:
        assert not worker.run(_job()).cancelled  # warm
        dying = worker._process
        dying.kill()
        dying.join(5)
        monkeypatch.setattr(dying, "is_alive", lambda: True)  # not reaped yet
        worker._ready = False  # as the stopped job's `run` leaves it
        result = worker.run(_job())
        assert not result.cancelled and result.messages
        assert worker._process is not dying
    finally:
        worker.close()
