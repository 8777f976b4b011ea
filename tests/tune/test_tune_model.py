"""`mcl tune --strategy model` (mcl.tune.model): the time model ranks the space, the
configurations are measured in its order until they stop improving, and the ranking's
agreement with the measurements is stated."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

from mcl import pipeline
from mcl.cli import main
from mcl.feedback.findings import TimeEstimate, first
from mcl.feedback.registry import analyse_findings
from mcl.hdl.library import default_library
from mcl.resources import kernels_dir
from mcl.tune.model import (
    AUTO_MODEL_MIN,
    RankedQueue,
    auto_strategy,
    rank_correlation,
    with_constants,
)
from mcl.tune.tuned_file import read_tuned, tuned_path

pytest.importorskip("kernel_tuner")

from tests.tune.test_tune import PLANTED, SIZES  # noqa: E402  (after the skip)

# 7 configurations the rules allow (PASSES * STRIDE <= 8), NR_WARPS = 64 ruled out: the
# model puts the three wrong-but-fast STRIDE = 2 first (half the work each), then the
# correct ones by their passes, so
# a patience of 3 reaches the correct single pass and stops before the 8 passes.
WIDER = ["--param", "PASSES=1,2,4,8", "--param", "NR_WARPS=1,64"]


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    shutil.copy(kernels_dir() / "matmul" / "reference.py", tmp_path / "reference.py")
    path = tmp_path / "planted.mcpl"
    path.write_text(PLANTED, encoding="utf-8")
    return path


def test_model_finds_the_best_measuring_fewer(planted: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", str(planted), "--target", "hopper", *SIZES, *WIDER, "--iterations",
                 "3", "--strategy", "model", "--patience", "3", "--no-cache"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "16 configurations, 9 ruled out, 6 run, 3 with wrong outputs" in out
    assert "time model: 7 of 7 configurations estimated" in out
    assert "6 measured in its order" in out  # of 7: the last, 8 passes, is not run
    assert "rank correlation of estimated and measured times 1.00 (Spearman, 3 " \
        "configurations)" in out
    (entry,) = read_tuned(planted)
    assert entry.constants == {"PASSES": 1, "NR_WARPS": 1, "STRIDE": 1}
    written = tuned_path(planted).read_text(encoding="utf-8")
    assert 'strategy = "model"' in written and "evaluated = 6" in written


def test_model_states_its_rank_correlation(planted: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    # Without a stop before the end every configuration is measured: 4 verified times
    # against the model's order of the work, which the times follow.
    assert main(["tune", str(planted), "--target", "hopper", *SIZES, *WIDER, "--iterations",
                 "3", "--strategy", "model", "--patience", "7", "--no-cache",
                 "--no-write"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "7 measured in its order" in out
    assert "rank correlation of estimated and measured times 1.00 (Spearman, 4 " \
        "configurations)" in out


def test_model_errors_are_one_line(planted: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for extra in (["--strategy", "brute_force", "--patience", "3"],
                  ["--strategy", "model", "--patience", "0"],
                  ["--strategy", "model", "--parallel"]):
        assert main(["tune", str(planted), "--target", "hopper", *SIZES, *extra]) == 1
        err = capsys.readouterr().err.strip()
        assert err.count("error:") == 1 and ("--patience" in err or "--parallel" in err), err


def test_auto_chooses_the_model_where_its_ranking_pays() -> None:
    library = default_library()
    hopper, cpu = library.get("hopper"), library.get("x86_avx512")
    assert auto_strategy(AUTO_MODEL_MIN, hopper, False)[0] == "model"
    assert auto_strategy(AUTO_MODEL_MIN - 1, hopper, False)[0] == "brute_force"
    strategy, why = auto_strategy(AUTO_MODEL_MIN, cpu, False)  # no time model to rank with
    assert strategy == "brute_force" and "no time model" in why
    assert auto_strategy(3, cpu, True)[0] == "model"  # --patience or --max-fevals given


def test_auto_is_the_default_and_says_what_it_chose(planted: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # 7 configurations: too few for the ranking to pay, so brute force measures them all
    assert main(["tune", str(planted), "--target", "hopper", *SIZES, *WIDER, "--iterations",
                 "3", "--no-cache"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "strategy auto: brute_force (7 configurations allowed" in out
    assert "7 run" in out and "time model:" not in out
    assert 'strategy = "brute_force"' in tuned_path(planted).read_text(encoding="utf-8")


def test_queue_stops_when_measurements_stop_improving() -> None:
    queue = RankedQueue([(1,), (2,), (3,), (4,), (5,)], patience=2)
    times = {(1,): math.inf, (2,): 1.0, (3,): 0.995, (4,): 1.2, (5,): 0.5}
    pulled = []
    while (key := queue.pull()) is not None:
        pulled.append(key)
        queue.told(key, times[key])
    # (1,) wrong, (2,) a best, (3,) under 1% faster, (4,) slower: patience spent.
    assert pulled == [(1,), (2,), (3,), (4,)] and queue.best_s == 0.995
    budget = RankedQueue([(1,), (2,), (3,)], patience=5, budget=2)
    assert [budget.pull(), budget.pull(), budget.pull()] == [(1,), (2,), None]


def test_rank_correlation() -> None:
    assert rank_correlation([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert rank_correlation([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # scipy.stats.spearmanr([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]) = 0.8; ties share ranks
    assert rank_correlation([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]) == pytest.approx(0.8)
    assert rank_correlation([1, 1, 2], [1, 2, 3]) == pytest.approx(0.8660254)
    assert rank_correlation([1, 2], [1, 2]) is None
    assert rank_correlation([1, 1, 1], [1, 2, 3]) is None


def test_constants_set_without_parsing_estimate_as_the_edited_source(tmp_path: Path) -> None:
    """The model's estimate of a configuration set on the translated program equals its
    estimate of the source with that value written in."""
    library = default_library()
    source = kernels_dir() / "gesummv" / "hopper_v5.mcpl"
    values = {"n": 4096}
    at_leaf = pipeline.lower(pipeline.checked_at(source, [], library).program, "hopper", library)
    edited = tmp_path / "hopper_v5.mcpl"
    text = source.read_text(encoding="utf-8")
    assert "const int SPLIT = 1;" in text
    edited.write_text(text.replace("const int SPLIT = 1;", "const int SPLIT = 2;"),
                      encoding="utf-8")
    written = pipeline.checked_at(edited, [], library)

    def seconds(checked: object) -> float | None:
        function = checked.program.main.function("gesummv")  # type: ignore[attr-defined]
        found = analyse_findings(function, checked, library.get("hopper"),  # type: ignore[arg-type]
                                 values)
        estimate = first(found, TimeEstimate, "gesummv")
        return estimate.seconds if estimate is not None else None

    set_here = seconds(with_constants(at_leaf, "hopper", library, {"SPLIT": 2}))
    assert set_here is not None and set_here == pytest.approx(seconds(written))
    assert set_here != pytest.approx(seconds(at_leaf))  # the value changes the estimate


def test_a_leaf_without_a_time_model_keeps_the_spaces_order() -> None:
    from mcl.tune.model import rank_space
    from mcl.tune.search import Candidate, Space

    library = default_library()
    space = Space(["COLS"])
    for cols in (4, 8):
        space.candidates[(cols,)] = Candidate({"COLS": cols}, "", (1,), (1, 1, 1), {})
    program = pipeline.checked_at(kernels_dir() / "matmul" / "x86_avx512_v3.mcpl", [],
                                  library).program
    ranking = rank_space(program, "matmul", "x86_avx512", library, space, {"n": 64})
    assert ranking.order == [(4,), (8,)] and set(ranking.seconds.values()) == {None}


def test_a_process_with_other_threads_ranks_without_forking_itself(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A forked worker keeps none of the other threads, and a lock one of them held stops
    it for ever (a test runner's thread hung the suite so): with a second thread alive
    (`mcl tune` ranks with the device's runtime and a progress bar running) the workers
    come from a fork server, and the estimates equal those of one process."""
    import threading

    import mcl.tune.model as model
    from mcl.tune.search import Candidate, Space

    library = default_library()
    source = kernels_dir() / "gesummv" / "hopper_v5.mcpl"
    program = pipeline.checked_at(source, [], library).program
    space = Space(["SPLIT"])
    for split in (1, 2):
        space.candidates[(split,)] = Candidate({"SPLIT": split}, "", (1,), (1, 1, 1), {})
    alone = model.rank_space(program, "gesummv", "hopper", library, space, {"n": 4096},
                             jobs=1)
    methods: list[str] = []
    real = model.multiprocessing.get_context

    def recorded(method: str) -> object:
        methods.append(method)
        return real(method)

    monkeypatch.setattr(model.multiprocessing, "get_context", recorded)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    try:
        assert not model.single_threaded()
        ranking = model.rank_space(program, "gesummv", "hopper", library, space,
                                   {"n": 4096}, jobs=2)
    finally:
        stop.set()
        other.join()
    assert methods == ["forkserver"]
    assert ranking.order == alone.order and ranking.seconds == alone.seconds
    assert all(s is not None for s in ranking.seconds.values())


def test_a_program_that_does_not_pickle_is_ranked_in_one_process(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the fork server cannot receive the program, the configurations are estimated
    one after another: the same ranking, no internal error."""
    import pickle
    import threading

    import mcl.tune.model as model
    from mcl.tune.search import Candidate, Space

    library = default_library()
    program = pipeline.checked_at(kernels_dir() / "gesummv" / "hopper_v5.mcpl", [],
                                  library).program
    space = Space(["SPLIT"])
    for split in (1, 2):
        space.candidates[(split,)] = Candidate({"SPLIT": split}, "", (1,), (1, 1, 1), {})

    def refuses(*args: object, **kwargs: object) -> bytes:
        raise pickle.PicklingError("a local function")

    def no_pool(method: str) -> None:
        raise AssertionError(f"started {method} workers")

    monkeypatch.setattr(model.pickle, "dumps", refuses)
    monkeypatch.setattr(model.multiprocessing, "get_context", no_pool)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    try:
        ranking = model.rank_space(program, "gesummv", "hopper", library, space,
                                   {"n": 4096}, jobs=2)
    finally:
        stop.set()
        other.join()
    assert sorted(ranking.order) == [(1,), (2,)]
    assert all(s is not None for s in ranking.seconds.values())
