"""A time budget that runs out yields "not analysed" for that analysis: no suggestion and
no figure built on a fallback (an unevaluated sum, "not proven equal"), and no later
analysis reads the facts derived on its way (docs/feedback.md, "Time budget")."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import KERNELS, load_kernel

from mcl import pipeline
from mcl.feedback import registry
from mcl.feedback.analysis import Analysis, AnalysisContext
from mcl.feedback.budget import spent
from mcl.feedback.messages import FeedbackSeverity, Message
from mcl.hdl.library import default_library
from mcl.mcpl.loader import load_program

MATMUL = KERNELS / "matmul" / "perfect.mcpl"
IDIOMS = Path(__file__).parent / "kernels" / "idioms"


def _run(among: list[Analysis]) -> list[Message]:
    library = default_library()
    program, _ = load_kernel(MATMUL, None)
    function = program.main.function("matmul")
    checked = pipeline.check(program, library)
    return registry.analyse(function, checked, library.get(function.hwd), {}, among=among)


def test_an_analysis_out_of_budget_says_not_analysed_and_nothing_else(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An analysis that took a fallback would have suggested something: the suggestion is
    gone, one warning says the analysis did not run, the other analyses keep theirs."""
    seen: list[object] = []

    def runs_out(ctx: AnalysisContext) -> list[Message]:
        seen.append(ctx.facts)
        while not spent():  # works until the budget is spent, then takes its fallback
            pass
        return [Message(FeedbackSeverity.SUGGESTION, "runs-out", "runs-out-advice",
                        "move this to shared memory", ctx.function.span)]

    def later(ctx: AnalysisContext) -> list[Message]:
        seen.append(ctx.facts)
        return [Message(FeedbackSeverity.INFO, "later", "later-ran", "ran",
                        ctx.function.span)]

    monkeypatch.setenv("MCL_FEEDBACK_BUDGET", "0.05")
    messages = _run([Analysis("runs-out", runs_out), Analysis("later", later)])
    assert not [m for m in messages if m.analysis == "runs-out"
                and m.code != "feedback-budget"]
    (warning,) = [m for m in messages if m.code == "feedback-budget"]
    assert warning.analysis == "runs-out" and "not analysed" in warning.text
    assert warning.severity == FeedbackSeverity.WARNING and not warning.value_map
    assert [m.code for m in messages if m.analysis == "later"] == ["later-ran"]
    # the later analysis builds its facts afresh: nothing derived under the fallback
    assert seen[0] is not seen[1]


def test_each_analysis_has_a_budget_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """One analysis that spends its budget leaves the next its whole budget."""
    import time

    def slow(ctx: AnalysisContext) -> list[Message]:
        end = time.thread_time() + 0.3
        while time.thread_time() < end:
            pass
        return []

    def asks(ctx: AnalysisContext) -> list[Message]:
        return [Message(FeedbackSeverity.INFO, "asks", "asks-ran", f"spent: {spent()}",
                        ctx.function.span)]

    monkeypatch.setenv("MCL_FEEDBACK_BUDGET", "0.25")
    messages = _run([Analysis("slow", slow), Analysis("asks", asks)])
    assert [m.text for m in messages if m.code == "asks-ran"] == ["spent: False"]


def test_a_spent_budget_leaves_no_suggestion_of_a_shipped_analysis(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With no budget at all, every built-in analysis that asked the clock says it was not
    analysed, and none of them shows a suggestion or a figure."""
    monkeypatch.setenv("MCL_FEEDBACK_BUDGET", "0")
    library = default_library()
    program = load_program(IDIOMS / "strided.mcpl", library=library)
    function = program.main.functions[0]
    checked = pipeline.check(program, library)
    messages = registry.analyse(function, checked, library.get(function.hwd),
                                {"n": 1000, "s": 3})
    cut = {m.analysis for m in messages if m.code == "feedback-budget"}
    assert cut
    assert not [m for m in messages if m.analysis in cut and m.code != "feedback-budget"]


def test_time_not_counted_leaves_the_budget_as_it_was() -> None:
    """NVRTC's compile for a register count (about a second) is no analysis of the
    kernel: it does not spend the budget of the analysis that asked for it."""
    import time

    from mcl.feedback.budget import budget, not_counted

    with budget(0.2) as b:
        with not_counted():
            end = time.thread_time() + 0.3
            while time.thread_time() < end:
                pass
        assert not spent() and not b.cut

def test_a_value_computed_past_the_budget_stops_that_analysis_only(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A computation too long to be cooperative at each step (the Kernel interface's
    values, lane by lane) raises OutOfTime: that analysis is not analysed, the program
    gets feedback all the same (no internal error)."""
    from mcl.feedback.budget import OutOfTime

    def lanes(ctx: AnalysisContext) -> list[Message]:
        while not spent():
            pass
        raise OutOfTime

    def later(ctx: AnalysisContext) -> list[Message]:
        return [Message(FeedbackSeverity.INFO, "later", "later-ran", "ran",
                        ctx.function.span)]

    monkeypatch.setenv("MCL_FEEDBACK_BUDGET", "0.05")
    messages = _run([Analysis("lanes", lanes), Analysis("later", later)])
    assert sorted((m.analysis, m.code) for m in messages) == [
        ("lanes", "feedback-budget"), ("later", "later-ran")]


def test_a_budget_is_the_thread_s_own() -> None:
    """The editor checks in a thread of its own: a budget open there, read against this
    thread's clock, must not spend this thread's analyses (nor the other way round)."""
    import threading

    from mcl.feedback.budget import budget

    opened, release = threading.Event(), threading.Event()
    answers: list[bool] = []

    def other() -> None:
        with budget(0.0):  # spent at once, in that thread
            opened.set()
            release.wait(5)
            answers.append(spent())

    thread = threading.Thread(target=other)
    thread.start()
    assert opened.wait(5)
    try:
        assert not spent()  # no budget open in this thread
        with budget(60.0):
            assert not spent()
    finally:
        release.set()
        thread.join(5)
    assert answers == [True]
