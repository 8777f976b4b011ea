"""The acceptance facts of issue 2, asked through the query API on the bundled library."""

from __future__ import annotations

import math

from mcl.hdl.equivalence import equivalent_space, find_equivalent_par_groups

KB = 1024


def test_all_ten_descriptions_load_in_tree_order(lib):
    assert lib.names() == [
        "perfect", "accelerator", "gpu", "nvidia", "fermi", "hopper",
        "mic", "xeon_phi", "cpu", "x86_avx512",
    ]  # fmt: skip
    assert lib.warnings == []


def test_hierarchy_tree_of_hardware_md(lib):
    edges = set(lib.hierarchy.edges)
    assert edges == {
        ("perfect", "accelerator"), ("accelerator", "gpu"), ("gpu", "nvidia"),
        ("nvidia", "fermi"), ("nvidia", "hopper"), ("accelerator", "mic"),
        ("mic", "xeon_phi"), ("perfect", "cpu"), ("cpu", "x86_avx512"),
    }  # fmt: skip
    assert lib.leaves() == ["fermi", "hopper", "xeon_phi", "x86_avx512"]
    assert lib.path("perfect", "fermi") == ["perfect", "accelerator", "gpu", "nvidia", "fermi"]


def test_fermi_executing_unit_and_chain(lib):
    fermi = lib.get("fermi")
    assert fermi.executing_unit().name == "thread"
    assert [g.name for g in fermi.group_chain("thread")] == ["blocks", "warps", "threads"]
    threads = fermi.par_group("threads")
    assert threads.exact and threads.count == 32
    assert fermi.par_group("warps").max_nr_units == 32


def test_fermi_shared_is_held_by_on_chip(lib):
    (on_chip,) = lib.get("fermi").memories_for("shared")
    assert on_chip.node.name == "on_chip"
    assert on_chip.capacity == 48 * KB
    assert on_chip.nr_banks == 32
    assert not on_chip.is_cache
    assert on_chip.resides_on is not None and on_chip.resides_on.name == "smp"


def test_fermi_global_is_cached_by_l1_then_l2(lib):
    held = lib.get("fermi").memories_for("global")
    assert [m.node.name for m in held] == ["mem", "l1", "l2"]
    mem, l1, l2 = held
    assert mem.capacity == 1536 * KB * KB and not mem.is_cache
    assert (l1.capacity, l1.line_size) == (16 * KB, 128)
    assert (l2.capacity, l2.line_size) == (768 * KB, 128)


def test_fermi_block_slots_per_smp(lib):
    (smp,) = lib.get("fermi").execution_units_for("block")
    assert smp.node.name == "smp"
    assert smp.slots == 8
    assert smp.nr_units == 15


def test_fermi_loads_in_lock_step_per_warp(lib):
    fermi = lib.get("fermi")
    group = fermi.lockstep("thread")
    assert group is fermi.par_group("threads")
    assert group.count == 32
    # A generic gpu and perfect say nothing about lock-step loads.
    assert lib.get("gpu").lockstep("thread") is None
    assert lib.get("perfect").lockstep("thread") is None


def test_lock_step_flag_of_execution_units_agrees_with_lockstep(lib):
    # `mcl hwd show perfect` used to mark perfect's lone load/store unit as lock-step.
    perfect = {e.node.path: e.simd for e in lib.get("perfect").execution_units_for("thread")}
    assert perfect == {"cores.core": False, "cores.core.lsu": False}
    fermi = {e.node.path: e.simd for e in lib.get("fermi").execution_units_for("thread")}
    assert fermi["smps.smp.lsus.lsu"] and fermi["smps.smp.alus.alu"]


def test_perfect_to_gpu_maps_threads_to_blocks_and_threads(lib):
    perfect, gpu = lib.get("perfect"), lib.get("gpu")
    mapping = find_equivalent_par_groups(perfect, gpu)
    assert mapping[0][0] is perfect.parallelism and mapping[0][1] == [gpu.parallelism]
    frm, to = mapping[-1]
    assert frm is perfect.par_group("threads")
    assert [g.name for g in to] == ["blocks", "threads"]


def test_gpu_to_nvidia_maps_local_to_shared(lib):
    gpu, nvidia = lib.get("gpu"), lib.get("nvidia")
    mapping = find_equivalent_par_groups(gpu, nvidia)
    assert equivalent_space("local", gpu, nvidia, mapping).name == "shared"
    assert equivalent_space("dev", gpu, nvidia, mapping).name == "global"
    assert equivalent_space("reg", gpu, nvidia, mapping).name == "reg"


def test_units_are_normalised(lib):
    fermi = lib.get("fermi")
    ic = fermi.link("mem", "smp")
    assert ic is not None and ic.node.name == "ic"
    assert ic.latency.value == 800 and ic.latency.unit == "cycles"
    assert ic.bandwidth.unit == "bit/s" and ic.bandwidth.value == 384 * 3696 * 10**6
    perfect_ic = lib.get("perfect").link("mem")
    assert perfect_ic.bandwidth.value == math.inf
    assert lib.get("accelerator").host_link().bandwidth.value == 8 * 10**9 * 8
