"""How `mcl tune --parallel` shares one kind's configurations among its workers: brute
force pulls them one at a time from a queue (`mcl.tune.search.Pulled`), another strategy
gets one interleaved part per worker (`mcl.multi.tune.parts`)."""

from __future__ import annotations

from typing import Any

from mcl.multi.tune import parts
from mcl.tune.search import Candidate, Pulled, Space


def test_another_strategy_gets_one_interleaved_part_per_worker() -> None:
    keys = [(i,) for i in range(7)]
    assert parts(keys, 3) == [keys[0::3], keys[1::3], keys[2::3]]
    assert parts(keys[:2], 3) == [keys[:1], keys[1:2]]
    assert parts(keys, 1) == [keys]


class _Runner:
    """Kernel Tuner's runner as `Pulled` uses it: one element per call, its result."""

    def __init__(self) -> None:
        self.calls: list[list[tuple[Any, ...]]] = []

    def run(self, elements: list[tuple[Any, ...]], tuning_options: Any) -> list[Any]:
        self.calls.append(elements)
        return [{"element": e} for e in elements]


def test_pulled_runs_what_it_is_handed_with_each_work_group_size() -> None:
    space = Space(["A", "B"])
    for a, b, local in [(1, 2, (32, 1, 1)), (4, 8, (64, 2, 1)), (16, 2, (128, 1, 1))]:
        space.candidates[(a, b)] = Candidate({"A": a, "B": b}, "", (1,), local, {})
    handed = iter([(4, 8), (1, 2), None, (16, 2)])
    runner = _Runner()
    results = Pulled(lambda: next(handed), space).tune(None, runner, None)
    # One configuration per runner call, in the order pulled, until None: Kernel Tuner's
    # element is the constants then the work-group size.
    assert runner.calls == [[(4, 8, 64, 2, 1)], [(1, 2, 32, 1, 1)]]
    assert [r["element"] for r in results] == [(4, 8, 64, 2, 1), (1, 2, 32, 1, 1)]
