"""The feedback worker reuses the analyses of an unchanged program (mcl/lsp/worker.py,
`_feedback`): an edit that leaves every definition as it was (a comment, blanks) gets the
same feedback without analysing again; any other edit is analysed afresh."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcl.lsp import worker
from mcl.lsp.analysis import Libraries
from mcl.lsp.worker import FeedbackJob, FeedbackResult

ROOT = Path(__file__).resolve().parents[2]
KERNEL = ROOT / "kernels" / "matmul" / "perfect.mcpl"
VALUES = (("n", 1024), ("m", 1024), ("p", 1024))


def _run(libraries: Libraries, text: str, values: tuple[tuple[str, float], ...] = VALUES
         ) -> FeedbackResult:
    path = str(KERNEL)
    result = FeedbackResult()
    worker._run(FeedbackJob(path, ((path, text),), (), (), None, values), libraries, result)
    assert result.failure is None and not result.cancelled
    return result


def _afresh(libraries: Libraries, text: str, values: tuple[tuple[str, float], ...] = VALUES
            ) -> FeedbackResult:
    worker._last = worker._kept = None  # nothing of a job before
    return _run(libraries, text, values)


def test_a_comment_edit_reuses_the_last_feedback(libraries: Libraries) -> None:
    text = KERNEL.read_text()
    first = _run(libraries, text)
    assert first.messages
    analysed = worker._last
    again = _run(libraries, text + "// a comment\n")
    assert worker._last is analysed  # not analysed again
    assert again.messages == first.messages == _afresh(libraries, text).messages


@pytest.mark.parametrize("edit", [
    lambda t: t.replace("sum += a[i, k] * b[k, j];", "sum += a[i, k] * b[k, j] * 2.0;"),
    lambda t: "\n" + t,  # every span one line down
])
def test_an_edit_of_the_code_is_analysed_again(libraries: Libraries, edit) -> None:
    text = KERNEL.read_text()
    first = _run(libraries, text)
    edited = edit(text)
    after = _run(libraries, edited)
    assert after.messages != first.messages
    assert after.messages == _afresh(libraries, edited).messages


def test_other_values_are_analysed_again(libraries: Libraries) -> None:
    text = KERNEL.read_text()
    _run(libraries, text)
    values = (("n", 64), ("m", 64), ("p", 64))
    other = _run(libraries, text, values)
    assert other.messages == _afresh(libraries, text, values).messages
    assert other.messages != _afresh(libraries, text).messages


def test_the_flow_checks_are_left_to_the_servers_check(
        libraries: Libraries, monkeypatch: pytest.MonkeyPatch) -> None:
    """A job follows the server's clean check of the same text: at the source's level
    the worker does not run the flow checks again (at a level it checks the translation
    in full), and its feedback is what it is with them."""
    from mcl import pipeline
    from mcl.mcpl import check

    ran: list[str] = []
    original = check.flow_diagnostics

    def spy(function: Any, *args: Any) -> Any:
        ran.append(function.name)
        return original(function, *args)

    monkeypatch.setattr(check, "flow_diagnostics", spy)
    text = KERNEL.read_text()
    without = _afresh(libraries, text).messages
    assert ran == [] and without
    whole = pipeline.check_source

    def with_flow(*args: Any, **kwargs: Any) -> Any:
        return whole(*args, **{**kwargs, "flow": True})

    monkeypatch.setattr(pipeline, "check_source", with_flow)
    assert _afresh(libraries, text).messages == without
    assert ran == ["matmul"]
    monkeypatch.setattr(pipeline, "check_source", whole)
    del ran[:]
    path = str(KERNEL)
    result = FeedbackResult()
    worker._run(FeedbackJob(path, ((path, text),), (), (), "gpu", VALUES), libraries, result)
    assert result.failure is None and result.messages and ran


def test_a_block_no_multiprocessor_can_start_is_an_error_in_the_editor(
        libraries: Libraries) -> None:
    """As `mcl check -D p=4096 --level fermi` (mcl.feedback.block_refusal): matmul gpu_v3's
    65,536 B of shared memory per block are more than fermi's 48 kB; at p = 1024 they fit."""
    path = str(ROOT / "kernels" / "matmul" / "gpu_v3.mcpl")
    text = Path(path).read_text()
    for p, refused in ((4096, True), (1024, False)):
        worker._last = worker._kept = None
        result = FeedbackResult()
        values = (("n", 1024), ("m", 1024), ("p", p))
        worker._run(FeedbackJob(path, ((path, text),), (), (), "fermi", values), libraries,
                    result)
        assert result.failure is None and not result.cancelled
        errors = [d for d in result.diagnostics if d.code == "mcpl-block-resources"]
        assert bool(errors) == refused, result.diagnostics
        if refused:
            assert "65,536 B of shared memory per block" in errors[0].message
