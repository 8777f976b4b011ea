"""The feedback worker reuses the analyses of an unchanged program (mcl/lsp/worker.py,
`_feedback`): an edit that leaves every definition as it was (a comment, blanks) gets the
same feedback without analysing again; any other edit is analysed afresh."""

from __future__ import annotations

from pathlib import Path

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
    worker._last = None
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
