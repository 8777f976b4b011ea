"""Occupancy advice (issue 11, item 5; mcl/feedback/occupancy.py `verdict`, used by
nvidia's shared_mem_parallelism and hopper's occupancy): it names the limiting resource
and only suggests a change that raises the warps per multiprocessor -- none when all
thread slots are in use, more threads per block when the block slots limit, and the grid
when the kernel launches too few blocks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcl import pipeline
from mcl.feedback import occupancy
from mcl.feedback.analyses.functions import load_module
from mcl.feedback.messages import FeedbackSeverity
from mcl.feedback.registry import analyse
from mcl.hdl.library import default_library
from mcl.mcpl.loader import load_program
from mcl.resources import hwdescs_dir

HERE = Path(__file__).parent
TABLE = json.loads((HERE / "data" / "hopper_occupancy.json").read_text())


@pytest.fixture(scope="module")
def library():
    return default_library()


def function_message(name: str, library, values):
    program = load_program(HERE / "kernels" / name, (), library)
    function = program.main.functions[0]
    checked = pipeline.check(program, library)
    (message,) = [m for m in analyse(function, checked, library.get(function.hwd), values,
                                     only=["functions"])
                  if m.code in ("occupancy", "shared-mem-parallelism")]
    return message


def numbers(message) -> dict:
    return {k: v.numeric for k, v in message.values}


def test_full_thread_slots_get_no_advice(library):
    message = function_message("nvidia_threads_full.mcpl", library, {"n": 1 << 20})
    assert message.severity == FeedbackSeverity.INFO
    assert message.text.startswith("using 4/8 blocks per SMP: threads limit, but the 4 "
                                   "blocks already use all 1,024 thread slots")
    assert "fewer threads" not in message.text and ";" not in message.text.split(" (")[0]


def test_block_slots_ask_for_more_threads_per_block_never_fewer(library):
    message = function_message("nvidia_block_slots.mcpl", library, {"n": 1 << 20})
    assert message.severity == FeedbackSeverity.SUGGESTION
    assert "block slots limit; use more threads per block: 128 give 32 warps" in message.text
    assert "fewer threads" not in message.text


def test_a_small_grid_limits_before_the_resources_of_a_block(library):
    message = function_message("hopper_small_grid.mcpl", library, {"n": 512 * 256})
    values = numbers(message)
    # 8 blocks of 8 warps fit an SM, but 512 blocks over 132 SMs give at most 4 each
    assert values["limit_warps"] == 8 and values["grid_blocks"] == 512
    assert values["blocks_per_sm"] == 4 and values["warps_per_sm"] == 32
    assert "limited by the grid of 512 blocks for 132 SMs" in message.text
    assert "launch at least 1,056 blocks" in message.text
    # with enough blocks the same kernel fills the SM: no advice
    full = function_message("hopper_small_grid.mcpl", library, {"n": 1056 * 256})
    assert numbers(full)["warps_per_sm"] == 64 and full.severity == FeedbackSeverity.INFO


def test_without_the_sizes_the_hint_says_the_grid_is_unknown(library):
    message = function_message("hopper_small_grid.mcpl", library, {})
    assert "grid_blocks" not in numbers(message)
    assert message.hint is not None and "a grid of fewer than 1,056 blocks" in message.hint


@pytest.fixture(scope="module")
def hopper_sm(library, tmp_path_factory):
    from mcl.feedback.facts.kernel import build_facts
    from mcl.feedback.kernel_api import Kernel

    program = load_program(HERE / "kernels" / "hopper_small_grid.mcpl", (), library)
    hwd = library.get("hopper")
    name, node = hwd.feedback_functions()[0]
    checked = pipeline.check(program, library)
    kernel = Kernel(build_facts(program.main.functions[0], checked, hwd), {}, node, name)
    module = load_module(hwdescs_dir() / "hopper_feedback.py")
    return module.hopper_multiprocessor(kernel)


def test_every_change_raises_occupancy_on_every_measured_case(hopper_sm):
    """Over the 1008 cases measured with CUDA's occupancy calculator: a change is only
    advised when it gives more warps per SM than now, no change is advised when all slots
    are in use, and a register or shared-memory change is the least one that does."""
    sm = hopper_sm.resources
    advised = set()
    for case in TABLE["cases"]:
        usage = occupancy.BlockUsage(case["threads"], case["regs"], case["smem"])
        v = occupancy.verdict(sm, usage, hopper_sm.count, None, hopper_sm.max_threads)
        assert v.blocks == case["blocks"]  # the verdict keeps the measured occupancy
        if v.full:
            assert not v.changes
            assert v.blocks * usage.threads >= sm.thread_slots or v.warps >= sm.warp_slots
        for change in v.changes:
            advised.add(change.resource)
            assert occupancy.blocks_per_sm(sm, change.usage).warps == change.warps > v.warps
            if change.resource == occupancy.REGISTERS:
                more = occupancy.BlockUsage(usage.threads,
                                            change.usage.registers_per_thread + 1,
                                            usage.shared_bytes)
                assert occupancy.blocks_per_sm(sm, more).warps <= v.warps
            if change.resource == occupancy.SHARED_MEMORY:
                assert change.usage.shared_bytes < usage.shared_bytes
    assert {occupancy.REGISTERS, occupancy.SHARED_MEMORY} <= advised
    assert advised & {occupancy.BLOCK_SLOTS, occupancy.WARPS}


def test_the_multiprocessor_count_and_block_size_come_from_the_description(hopper_sm):
    assert hopper_sm.count == 132 and hopper_sm.max_threads == 32 * 32
