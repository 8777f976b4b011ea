"""The addresses a warp's lanes touch over the iterations of their short inner loops
(mcl.feedback.lockstep.filled_addresses: a thread's VEC neighbouring elements, a
vectorised load's UNROLL groups; `filled_by_lane`: each lane's own, for the wide accesses
of the bank-conflict survey) are computed with the lanes of each iteration together
(`NumericEvaluator.holds_each`, `addresses_each`); every call gives what the lanes one by one
give (a guard decided at each lane, then its address), on the shipped kernels whose
coalescing and bank-conflict checks follow such loops."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl.feedback import lockstep
from mcl.feedback.stage import FeedbackOptions
from mcl.hdl.library import load_library
from mcl.pipeline import check_source

KERNELS = Path(__file__).resolve().parents[2] / "kernels"


def lane_by_lane(kernel, group, instruction, lanes, loops) -> list[int]:
    walk = lockstep.LockstepWalk(kernel, group, instruction.access.item.loops)
    ev = kernel.evaluator
    addresses = []
    try:
        for _ in lockstep.fill_iterations(ev, loops):
            for lane in lanes.active:
                walk.at(lanes, lane)
                if ev.holds(instruction.access.item.guards) is not False:
                    addresses.append(ev.address(instruction))
    finally:
        walk.reset()
    return addresses


@pytest.mark.parametrize("kernel", ["gesummv/hopper_v5", "matmul/hopper_v2",
                                    "convolution/hopper_v2"])
@pytest.mark.parametrize("sizes", [("n=2048", "m=2048", "p=2048"), ("n=260", "m=72", "p=20")])
def test_the_lanes_together_touch_what_the_lanes_one_by_one_touch(monkeypatch, kernel, sizes):
    together = lockstep.filled_addresses
    calls = []

    def both(kernel_, group, instruction, lanes, loops):
        got = together(kernel_, group, instruction, lanes, loops)
        assert got == lane_by_lane(kernel_, group, instruction, lanes, loops)
        calls.append(len(got))
        return got

    by_lane = lockstep.filled_by_lane
    lanes_seen = []

    def each(kernel_, group, instruction, lanes, loops):
        got = by_lane(kernel_, group, instruction, lanes, loops)
        assert list(got) == list(lanes.active)
        for lane, addresses in got.items():
            one = lockstep.Lanes(lanes.group, lanes.size, (lane,))
            assert addresses == lane_by_lane(kernel_, group, instruction, one, loops)
        lanes_seen.append(len(got))
        return got

    monkeypatch.setattr(lockstep, "filled_addresses", both)
    monkeypatch.setattr(lockstep, "filled_by_lane", each)
    found = check_source(KERNELS / f"{kernel}.mcpl", [], load_library(partial=True), None,
                         FeedbackOptions(defines=sizes))
    assert found.feedback is not None and found.feedback.messages
    assert not [m for m in found.feedback.messages if m.code == "function-failed"]
    assert calls or lanes_seen
    assert sum(calls) > 100 or sum(lanes_seen) > 100
