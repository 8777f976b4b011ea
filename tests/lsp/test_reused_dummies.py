"""The feedback worker analyses each edit with the loop counters and stand-ins of the last
job (mcl.feedback.facts.stable_dummies), so that SymPy's caches serve what the edit did
not change, and it keeps the counts of each loop nest from one job to the next
(mcl.feedback.facts.nest_counts). Each step of a sequence of code edits (a constant, a
bound, a program constant, a loop's nesting, a guard, an inserted statement, the text
back as it was) must give the messages and diagnostics of an analysis with fresh
dummies and of one that counts every nest again, word for word: texts, figures and
spans."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mcl.feedback.facts import nest_counts, stable_dummies
from mcl.feedback.facts.stable_dummies import dummy, reused_dummies
from mcl.lsp import worker
from mcl.lsp.analysis import Libraries
from mcl.lsp.worker import FeedbackJob, FeedbackResult

from .conftest import KERNELS

VALUES = (("n", 2048), ("m", 2048), ("p", 2048))
Edit = Callable[[str], str]


@pytest.fixture(autouse=True)
def _time_enough(monkeypatch: pytest.MonkeyPatch) -> None:
    """The analyses compared finish whatever the machine's load: with the default budget
    (1 s of CPU per analysis), a run on a busy machine may run out of it where the run
    beside it did not, and say so instead of its findings (mcl.feedback.budget)."""
    monkeypatch.setenv("MCL_FEEDBACK_BUDGET", "60")


def _swap(first: str, second: str) -> Edit:
    """The lines `first` and `second` (adjacent, in this order) exchanged: one loop
    nested in the other the other way round."""
    def edit(text: str) -> str:
        assert first + second in text
        return text.replace(first + second, second.replace(second.strip(), first.strip())
                            + first.replace(first.strip(), second.strip()), 1)
    return edit


def _replace(old: str, new: str) -> Edit:
    def edit(text: str) -> str:
        assert old in text
        return text.replace(old, new, 1)
    return edit


def _insert_after(anchor: str, line: str) -> Edit:
    return _replace(anchor, anchor + line)


MATMUL_EDITS: list[list[Edit]] = [
    [_replace("sums[ei][ej] = 0.0;", "sums[ei][ej] = 1.0;")],  # a constant
    [],  # back to the text as it was
    [_replace("kk < TILE_K; kk++", "kk < TILE_K - 1; kk++")],  # a bound
    [_replace("kk < TILE_K; kk++", "kk < TILE_K - 1; kk++"),
     _replace("const int TILE_K = 8;", "const int TILE_K = 16;")],  # and a program constant
    [_swap("              for (int ei = 0; ei < ELEMS_I; ei++) {\n",
           "                for (int ej = 0; ej < ELEMS_J; ej++) {\n")],  # nesting
    [_replace("if (i < n && j < m) {\n                c[i, j]", "if (i < n) {\n"
              "                c[i, j]")],  # a guard
    [_insert_after("int nrPhases = (p + TILE_K - 1) / TILE_K;\n",
                   "  float bench_t = 1.0;\n")],  # every span below one line down
    [],
]

SPMV_EDITS: list[list[Edit]] = [
    [_insert_after("    global float[ncols] x) {\n", "  int bench_t = 1;\n")],
    [_replace("y[i] = 0.0;", "y[i] = 1.0;")],  # a constant
    [_replace("if (i < nrows) {\n          y[i]", "if (i < nrows - 1) {\n          y[i]")],
    [],
]


def _analysed(libraries: Libraries, path: str, text: str, reused: bool,
              kept_counts: bool = True) -> FeedbackResult:
    """The feedback of `text`: as the worker's process analyses it (`reused`), there
    without the counts of the jobs before (not `kept_counts`), or with fresh dummies."""
    worker._last = worker._kept = None  # analysed, never a job's before
    result = FeedbackResult()
    job = FeedbackJob(path, ((path, text),), (), (), None, VALUES)
    nest_counts.store.enabled = kept_counts
    try:
        if reused:
            worker.run_job(job, libraries, result)  # as the worker's process does
        else:
            worker._run(job, libraries, result)
    finally:
        nest_counts.store.enabled = True
    assert result.failure is None and not result.cancelled
    return result


def _same_on_every_step(libraries: Libraries, kernel: str, steps: list[list[Edit]]) -> None:
    path = str((KERNELS / kernel).resolve())
    base = (KERNELS / kernel).read_text()
    texts = [base]
    for edits in steps:
        text = base
        for edit in edits:
            text = edit(text)
        texts.append(text)
    firsts = set()
    nest_counts.store.cache_clear()
    hits = []
    for text in texts:
        before = nest_counts.store.hits
        reused = _analysed(libraries, path, text, reused=True)
        hits.append(nest_counts.store.hits - before)
        counted = _analysed(libraries, path, text, reused=True, kept_counts=False)
        fresh = _analysed(libraries, path, text, reused=False)
        assert reused.messages, "no feedback to compare"
        assert reused.messages == counted.messages == fresh.messages
        assert reused.diagnostics == counted.diagnostics == fresh.diagnostics
        firsts.add(tuple(reused.messages))
    assert len(firsts) > len(texts) // 2  # the edits change the feedback
    # After the first text, every edit found counts of nests it left as they were.
    assert all(hits[1:]), hits


def test_code_edits_of_matmul_give_the_feedback_of_fresh_dummies(libraries) -> None:
    _same_on_every_step(libraries, "matmul/hopper_v2.mcpl", MATMUL_EDITS)


@pytest.mark.slow  # spmv's irregular accesses: about 10 s
def test_code_edits_of_spmv_give_the_feedback_of_fresh_dummies(libraries) -> None:
    _same_on_every_step(libraries, "spmv/hopper_v7.mcpl", SPMV_EDITS)


def test_reused_dummies_are_distinct_within_a_job_and_the_same_across_jobs() -> None:
    with reused_dummies():
        first = [dummy("t_i", integer=True), dummy("t_i", integer=True), dummy("t_i")]
    assert len(set(first)) == 3
    assert first[0].dummy_index < first[1].dummy_index  # made in order, as fresh ones
    with reused_dummies():
        again = [dummy("t_i", integer=True), dummy("t_i"), dummy("t_i", integer=True),
                 dummy("t_i", integer=True)]
    assert again[:3] == [first[0], first[2], first[1]]
    assert again[3] not in first
    assert dummy("t_i", integer=True) not in first + again  # outside: fresh


def test_reused_dummies_stay_bounded(monkeypatch) -> None:
    monkeypatch.setattr(stable_dummies, "MAX_KEPT", 10)
    with reused_dummies():
        first = [dummy("data") for _ in range(20)]
    with reused_dummies():  # more than MAX_KEPT kept: started again
        again = dummy("data")
    assert again not in first
    assert sum(len(v) for v in stable_dummies._kept.values()) == 1


def test_nest_counts_are_kept_only_across_the_workers_jobs(libraries) -> None:
    """`mcl check` (fresh dummies, one analysis per process) keeps nothing; the worker's
    store is bounded and emptied with SymPy's cache."""
    path = str((KERNELS / "matmul/hopper_v2.mcpl").resolve())
    text = (KERNELS / "matmul/hopper_v2.mcpl").read_text()
    nest_counts.store.cache_clear()
    _analysed(libraries, path, text, reused=False)
    assert not nest_counts.store
    _analysed(libraries, path, text, reused=True)
    assert nest_counts.store
    worker.bound_caches(limit=0)  # past the limit (0 is a limit, not the default)
    assert not nest_counts.store


def test_nest_counts_stay_bounded(libraries, monkeypatch) -> None:
    monkeypatch.setattr(nest_counts.store, "entries", 5)
    path = str((KERNELS / "matmul/hopper_v2.mcpl").resolve())
    nest_counts.store.cache_clear()
    _analysed(libraries, path, (KERNELS / "matmul/hopper_v2.mcpl").read_text(), reused=True)
    assert len(nest_counts.store) == 5
