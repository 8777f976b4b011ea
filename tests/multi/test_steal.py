"""Which worker's range a free worker takes (`mcl.multi.run.steal_from`): the one that
would reach its last range latest, and only where the thief would finish it sooner."""

from __future__ import annotations

from mcl.multi.run import steal_from
from mcl.multi.split import Piece


def piece(first: int, count: int) -> Piece:
    return Piece(first, count, {}, {})


def test_a_free_worker_takes_from_the_most_loaded() -> None:
    queues = {"a": [], "b": [piece(0, 4), piece(4, 4)], "c": [piece(8, 4)]}
    rate = {"a": 1.0, "b": 1.0, "c": 1.0}
    assert steal_from(queues, {"b": 4, "c": 4}, rate, "a") == "b"


def test_nothing_is_taken_that_its_owner_finishes_as_soon() -> None:
    """Equal speeds: the owner's last range is worth taking only while the owner has
    other blocks ahead of it."""
    rate = {"a": 1.0, "b": 1.0}
    assert steal_from({"a": [], "b": [piece(0, 4)]}, {}, rate, "a") is None
    assert steal_from({"a": [], "b": [piece(0, 4)]}, {"b": 1}, rate, "a") == "b"


def test_a_slow_device_leaves_a_fast_ones_range() -> None:
    """A device ten times slower does not take a range the fast one reaches sooner."""
    queues = {"cpu": [], "gpu": [piece(0, 8), piece(8, 8)]}
    held = {"gpu": 8}
    assert steal_from(queues, held, {"cpu": 1.0, "gpu": 10.0}, "cpu") is None
    assert steal_from(queues, held, {"cpu": 10.0, "gpu": 1.0}, "cpu") == "gpu"


def test_no_queued_range_no_theft() -> None:
    assert steal_from({"a": [], "b": []}, {"b": 100}, {"a": 1.0, "b": 1.0}, "a") is None
