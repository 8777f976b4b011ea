"""The default view's rule for suggestions (docs/feedback.md, "What a report shows"): a
suggestion is shown only as a refinement with its estimated gain -- its proposed change
is one a refinement answers (told by the layer above: mcl.feedback.refinable) and the
time model states the rewritten kernel's time against the original's at MIN_GAIN or
more; every other suggestion moves to -v."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mcl import pipeline
from mcl.feedback.analyses.timemodel import MIN_GAIN
from mcl.feedback.findings import RemoveBankConflict, ShareInFasterMemory
from mcl.feedback.refinable import use_answered
from mcl.feedback.stage import FeedbackOptions, FileFeedback, run_feedback
from mcl.hdl.library import default_library
from mcl.resources import kernels_dir

TRANSPOSE = kernels_dir() / "transpose" / "gpu_v1.mcpl"
MATMUL = kernels_dir() / "matmul" / "perfect.mcpl"


@pytest.fixture(autouse=True)
def nothing_told() -> Iterator[None]:
    yield
    use_answered(None)


def _feedback(path: Path, level: str, **values: int) -> FileFeedback:
    library = default_library()
    checked = pipeline.checked_at(path, (), library)
    checked = pipeline.translate(checked, level, library)
    return run_feedback(checked, library, FeedbackOptions(
        defines=tuple(f"{k}={v}" for k, v in values.items())))


def _shown(feedback: FileFeedback, code: str) -> list[bool]:
    return [shown for m, shown in zip(feedback.messages, feedback.shown_by_default(),
                                      strict=True) if m.code == code]


def test_a_bank_conflict_a_refinement_pads_is_shown_with_its_gain() -> None:
    use_answered(lambda: [RemoveBankConflict.__name__])
    feedback = _feedback(TRANSPOSE, "hopper", n=8192, m=8192)
    (conflict,) = [m for m in feedback.messages if m.code == "bank-conflict"]
    assert conflict.severity.value == "suggestion"
    gain = conflict.value_map["estimated_gain"].numeric
    assert gain is not None and gain >= MIN_GAIN
    assert "the time model estimates 369 µs -> 205 µs (1.80x)" in conflict.text
    assert _shown(feedback, "bank-conflict") == [True]


def test_a_suggestion_no_refinement_makes_moves_to_verbose() -> None:
    use_answered(lambda: [ShareInFasterMemory.__name__])  # not the bank conflict's change
    feedback = _feedback(TRANSPOSE, "hopper", n=8192, m=8192)
    assert _shown(feedback, "bank-conflict") == [False]
    use_answered(None)  # no layer above told: no suggestion is a refinement
    assert _shown(_feedback(TRANSPOSE, "hopper", n=8192, m=8192), "bank-conflict") == [False]


def test_a_suggestion_without_a_stated_gain_moves_to_verbose() -> None:
    """matmul at gpu: `memory-faster-space` proposes a ShareInFasterMemory, but the
    generic gpu has no time model, so no gain is stated: hidden even where a refinement
    answers the change."""
    use_answered(lambda: [ShareInFasterMemory.__name__])
    feedback = _feedback(MATMUL, "gpu", n=2048, m=2048, p=2048)
    (faster,) = [m for m in feedback.messages if m.code == "memory-faster-space"]
    assert faster.severity.value == "suggestion"
    assert "estimated_gain" not in faster.value_map
    assert _shown(feedback, "memory-faster-space") == [False]
    # the facts keep their rule: the reuse of the parameters is a headline
    assert all(_shown(feedback, "reuse-independent"))
