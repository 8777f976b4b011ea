"""The fuzzer judges a hang on the child's CPU time: a child that takes a long while
without computing (as one starved at `nice 19` on a busy machine) is no hang, one that
computes past its budget is; only a far outer wall-clock limit stops one that waits."""

from __future__ import annotations

import time

import pytest

from mcl import cli, fuzz

BUDGET = 0.3  # CPU seconds


def _command(argv: list[str]) -> int:
    """A stand-in for `mcl ARGV` in the forked child: `sleep S` or `spin`."""
    if argv[0] == "sleep":
        time.sleep(float(argv[1]))
        return 0
    while True:  # spin: computes for ever
        pass


@pytest.fixture(autouse=True)
def stand_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "main", _command)
    monkeypatch.setattr(fuzz, "_warm", lambda: None)


def test_a_child_that_takes_long_without_computing_is_no_hang() -> None:
    # 4 s of wall-clock time is more than ten times the CPU budget: the limit the
    # fuzzer once had for a slow child
    started = time.monotonic()
    status, err = fuzz.run_command(["sleep", "4"], BUDGET)
    assert (status, err) == (0, "")
    assert time.monotonic() - started >= 4


def test_a_child_that_computes_past_its_budget_is_a_hang() -> None:
    started = time.monotonic()
    status, _ = fuzz.run_command(["spin"], BUDGET)
    assert status is None
    assert fuzz._failure(["spin"], status, "").kind == "hang"  # type: ignore[union-attr]
    assert time.monotonic() - started < BUDGET * fuzz.WALL_FACTOR


def test_a_child_that_waits_for_ever_ends_at_the_outer_wall_clock_limit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fuzz, "WALL_FACTOR", 5)
    started = time.monotonic()
    status, _ = fuzz.run_command(["sleep", "60"], BUDGET)
    assert status is None  # a hang
    assert time.monotonic() - started < 10
