"""How `mcl tune --parallel` cuts the configurations of one kind of device into the
pieces its workers take (`mcl.multi.tune.batches`)."""

from __future__ import annotations

from mcl.multi.tune import BATCHES_PER_WORKER, batches


def test_brute_force_batches_cover_the_space_in_order() -> None:
    keys = [(i,) for i in range(37)]
    cut = batches(keys, 3, "brute_force")
    assert [k for batch in cut for k in batch] == keys
    assert len(cut) <= 3 * BATCHES_PER_WORKER and len(cut) > 3  # more batches than workers
    assert all(len(batch) == len(cut[0]) for batch in cut[:-1]) and cut[-1]


def test_a_small_space_gets_batches_of_one() -> None:
    keys = [(i,) for i in range(5)]
    assert batches(keys, 4, "brute_force") == [[k] for k in keys]


def test_another_strategy_gets_one_interleaved_part_per_worker() -> None:
    keys = [(i,) for i in range(7)]
    assert batches(keys, 3, "random_sample") == [keys[0::3], keys[1::3], keys[2::3]]
    assert batches(keys[:2], 3, "genetic_algorithm") == [keys[:1], keys[1:2]]


def test_one_worker_gets_the_whole_space_at_once() -> None:
    keys = [(i,) for i in range(16)]
    assert batches(keys, 1, "brute_force") == [keys]
    assert batches([], 1, "brute_force") == []
