"""The feedback worker keeps each kernel's findings from one job to the next
(mcl.feedback.kept_findings): after an edit inside one function of a file of several
kernels, only the kernels whose tree, callees, constants, types, description and values
are not those of the last job are analysed again. Each step must give the messages of a
worker that keeps nothing (a fresh run), word for word and span for span; the count of
kernels analysed shows what was reused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcl.feedback import kept_findings, registry
from mcl.lsp import worker
from mcl.lsp.analysis import Libraries
from mcl.lsp.worker import FeedbackJob, FeedbackResult

from .conftest import KERNELS

VALUES = (("n", 256), ("m", 256), ("p", 256))
PATH = KERNELS / "matmul" / "kept_findings_test.mcpl"  # never written: an overlay
# Three kernels and a helper: `scaled` calls `twice`, `copy` reads the constant SCALE,
# `matmul` neither.
MODULE = """\
const float SCALE = 2.0;

perfect float twice(float x) {
  return x * 2.0;
}

perfect void scaled(int n, main float[n] y, main float[n] x) {
  foreach (int i in n threads) {
    y[i] = twice(x[i]);
  }
}

perfect void copy(int n, main float[n] y, main float[n] x) {
  foreach (int i in n threads) {
    y[i] = x[i] * SCALE;
  }
}

perfect void matmul(int n, int m, int p, main float[n, m] c, main float[n, p] a,
    main float[p, m] b) {
  foreach (int i in n threads) {
    foreach (int j in m threads) {
      float sum = 0.0;
      for (int k = 0; k < p; k++) {
        sum += a[i, k] * b[k, j];
      }
      c[i, j] = sum;
    }
  }
}
"""


def _run(libraries: Libraries, text: str, values: tuple[tuple[str, float], ...] = VALUES
         ) -> tuple[FeedbackResult, int]:
    """The job's result and the number of kernels it analysed."""
    result = FeedbackResult()
    before = worker._kept.analysed if worker._kept is not None else 0
    worker.run_job(FeedbackJob(str(PATH), ((str(PATH), text),), (), (), None, values),
                   libraries, result)
    assert result.failure is None and not result.cancelled and result.messages
    assert worker._kept is not None
    return result, worker._kept.analysed - before


def _fresh(libraries: Libraries, text: str, values: tuple[tuple[str, float], ...] = VALUES
           ) -> FeedbackResult:
    """The same job in a worker that keeps nothing, leaving the kept findings as they were."""
    kept, last = worker._kept, worker._last
    worker._kept = worker._last = None
    try:
        return _run(libraries, text, values)[0]
    finally:
        worker._kept, worker._last = kept, last


EDITS = [
    # (what changes, the edited text, the kernels analysed again)
    ("inside matmul", MODULE.replace("sum += a[i, k] * b[k, j];",
                                     "sum += a[i, k] * b[k, j] * 3.0;"), 1),
    ("a statement inserted in matmul",
     MODULE.replace("      float sum = 0.0;", "      float t = 1.0;\n      float sum = 0.0;"), 1),
    ("the helper scaled calls", MODULE.replace("return x * 2.0;", "return x * x;"), 1),
    ("the constant copy reads", MODULE.replace("SCALE = 2.0", "SCALE = 3.0"), 3),
    ("a line above every kernel", "\n" + MODULE, 3),
]


@pytest.mark.parametrize("what,edited,analysed", EDITS, ids=[e[0] for e in EDITS])
def test_an_edit_analyses_again_only_the_kernels_it_touched(
        libraries: Libraries, what: str, edited: str, analysed: int) -> None:
    first, count = _run(libraries, MODULE)
    assert count == 3
    after, count = _run(libraries, edited)
    assert count == analysed, what
    assert after.messages == _fresh(libraries, edited).messages
    back, count = _run(libraries, MODULE)  # and back: the edited kernels again
    assert count == analysed
    assert back.messages == first.messages


def test_the_helper_edit_changes_the_findings_of_its_caller(libraries: Libraries) -> None:
    """The helper's edit is seen through its caller (a key without the callees would
    keep `scaled`'s findings, which count the helper's multiplication)."""
    edited = MODULE.replace("return x * 2.0;", "return x * x * x;")
    first, _ = _run(libraries, MODULE)
    after, _ = _run(libraries, edited)
    assert after.messages != first.messages
    assert after.messages == _fresh(libraries, edited).messages


def test_other_values_analyse_every_kernel_again(libraries: Libraries) -> None:
    _run(libraries, MODULE)
    values = (("n", 64), ("m", 64), ("p", 64))
    other, count = _run(libraries, MODULE, values)
    assert count == 3
    assert other.messages == _fresh(libraries, MODULE, values).messages


def test_the_kept_findings_are_bounded(libraries: Libraries,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    worker._kept = kept_findings.KeptFindings(entries=2)
    _run(libraries, MODULE)
    assert len(worker._kept._kept) == 2
    worker._last = None
    _, count = _run(libraries, MODULE)  # the first kernel was let go
    assert count >= 1
    assert len(worker._kept._kept) == 2


def test_a_kernel_out_of_its_budget_is_not_kept(libraries: Libraries,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """An analysis that ran out of its time budget may finish the next time: the
    kernel's findings are not kept."""
    real = registry.analyse_findings

    def out_of_time(function: Any, *args: Any, **kwargs: Any) -> list[Any]:
        found = real(function, *args, **kwargs)
        if function.name == "copy":
            found.append(registry._not_analysed(registry.BUILTIN[0], function))
        return found

    monkeypatch.setattr(registry, "analyse_findings", out_of_time)
    first, count = _run(libraries, MODULE)
    assert count == 3 and any(m.code == "feedback-budget" for m in first.messages)
    worker._last = None
    monkeypatch.setattr(registry, "analyse_findings", real)
    again, count = _run(libraries, MODULE)
    assert count == 1  # copy
    assert not any(m.code == "feedback-budget" for m in again.messages)
    assert again.messages == _fresh(libraries, MODULE).messages


def test_kernels_of_other_files_are_kept_apart(libraries: Libraries) -> None:
    """Two files whose kernels have the same names: each keeps its own."""
    other = Path(str(PATH).replace("kept_findings_test", "kept_findings_other"))
    _run(libraries, MODULE)
    result = FeedbackResult()
    worker.run_job(FeedbackJob(str(other), ((str(other), MODULE),), (), (), None, VALUES),
                   libraries, result)
    assert result.messages and all(m.span is None or m.span.file == str(other)
                                   for m in result.messages)
