"""The query API (docs/hdl-api.md) on real questions about every bundled description."""

from __future__ import annotations

import math

import pytest

from mcl.hdl.equivalence import check_hierarchy, equivalent_space, find_equivalent_par_groups
from mcl.hdl.model import Quantity

KB, MB, GB = 1024, 1024**2, 1024**3


def names(items):
    return [x.name for x in items]


# ------------------------------------------------------------------ parallelism hierarchy


def test_perfect_spaces_and_scopes(lib):
    perfect = lib.get("perfect")
    assert names(perfect.memory_spaces()) == ["main", "reg"]
    assert names(perfect.default_spaces()) == ["main", "reg"]
    assert names(perfect.visible_spaces("threads")) == ["main"]
    assert names(perfect.visible_spaces()) == ["main", "reg"]
    assert names(perfect.shared_by("main")) == ["threads"]
    assert perfect.shared_by("reg") == []
    assert perfect.read_only_spaces() == []


def test_gpu_local_is_shared_by_the_threads_of_a_block(lib):
    gpu = lib.get("gpu")
    assert names(gpu.shared_by("local")) == ["threads"]
    assert names(gpu.shared_by("dev")) == ["blocks", "threads"]
    assert names(gpu.visible_spaces("block")) == ["dev", "local"]
    assert names(gpu.visible_spaces("blocks")) == ["dev"]
    assert gpu.memory_space("local").scope is gpu.par_unit("block")


def test_fermi_constant_is_read_only(lib):
    fermi = lib.get("fermi")
    assert names(fermi.read_only_spaces()) == ["constant"]
    assert [m.node.name for m in fermi.memories_for("constant")] == ["mem", "constant_cache"]
    assert names(fermi.default_spaces()) == ["global", "reg"]


def test_unknown_scope_and_unit_raise_key_error(lib):
    with pytest.raises(KeyError):
        lib.get("fermi").visible_spaces("nope")
    with pytest.raises(KeyError):
        lib.get("fermi").group_chain("nope")


# ------------------------------------------------------------------ physical device


def test_nvidia_smp(lib):
    nvidia = lib.get("nvidia")
    (smp,) = nvidia.execution_units_for("block")
    assert (smp.node.name, smp.slots, smp.nr_units) == ("smp", 8, 16)
    assert [(e.node.name, e.slots) for e in nvidia.execution_units_for("thread")] == [
        ("smp", 1024), ("alu", 1), ("lsu", 1)]
    ((name, node),) = nvidia.feedback_functions()
    assert name == "shared_mem_parallelism" and node is smp.node
    (regs,) = nvidia.memories_for("reg")
    assert regs.capacity == 32768 * 4 and not regs.addressable
    (on_chip,) = nvidia.memories_for("shared")
    assert on_chip.capacity == 48 * KB


def test_hopper_facts(lib):
    hopper = lib.get("hopper")
    (smp,) = hopper.execution_units_for("block")
    assert (smp.slots, smp.nr_units) == (32, 132)
    assert hopper.node("smp").slots_for("warp") == 64
    assert hopper.lockstep("thread") is hopper.par_group("threads")
    assert [m.node.name for m in hopper.memories_for("global")] == ["mem", "l1", "l2"]
    mem, l1, l2 = hopper.memories_for("global")
    assert (mem.capacity, l1.capacity, l2.capacity, l2.line_size) == (
        80 * GB, 28 * KB, 50 * MB, 128)
    assert hopper.memories_for("shared")[0].capacity == 228 * KB
    assert hopper.link("mem", "smp").bandwidth.value == 3350 * 10**9 * 8
    assert [n for n, _ in hopper.feedback_functions()] == [
        "occupancy", "divergence", "load_store_optimality"]


def test_mic_and_xeon_phi(lib):
    mic, phi = lib.get("mic"), lib.get("xeon_phi")
    assert mic.lockstep("vector") is mic.par_group("vectors")
    assert mic.lockstep("thread") is None
    core = phi.execution_units_for("thread")[0]
    assert (core.node.name, core.slots, core.nr_units) == ("core", 4, 60)
    assert [e.node.name for e in phi.execution_units_for("vector")] == ["lane", "lane"]
    assert [(m.node.name, m.capacity, m.line_size) for m in phi.memories_for("dev")] == [
        ("mem", 8 * GB, None), ("l1", 32 * KB, 64), ("l2", 512 * KB, 64)]
    assert phi.value("cores.core.clock_frequency") == Quantity(1053 * 10**6, "Hz")
    ring = phi.link("mem", "core")
    assert ring.latency.value == 20 and ring.bandwidth.value == 320 * 10**9 * 8


def test_x86_avx512_is_this_machine(lib):
    x86 = lib.get("x86_avx512")
    assert [(m.node.name, m.capacity) for m in x86.caches()] == [
        ("l3", 32 * MB), ("l1", 32 * KB), ("l2", 1 * MB)]  # declaration order
    # memories_for: the memory, then caches from the innermost (in the core) outwards
    assert [m.node.name for m in x86.memories_for("main")] == ["mem", "l1", "l2", "l3"]
    assert all(m.line_size == 64 for m in x86.caches())
    core = x86.execution_units_for("thread")[0]
    assert (core.node.name, core.slots, core.nr_units) == ("core", 1, 2)
    assert x86.lockstep("vector") is x86.par_group("vectors")
    assert not x86.has_host() and x86.host_link() is None


def test_hosts_and_transfers(lib):
    assert [n for n in lib.names() if lib.get(n).has_host()] == [
        "accelerator", "gpu", "nvidia", "fermi", "hopper", "mic", "xeon_phi"]
    pcie = lib.get("accelerator").host_link()
    assert pcie.node.name == "pcie" and pcie.latency == Quantity(1000, "cycles")
    assert lib.get("accelerator").host().name == "host"


def test_is_faster(lib):
    gpu, fermi, phi = lib.get("gpu"), lib.get("fermi"), lib.get("xeon_phi")
    assert gpu.is_faster("local", "dev") and not gpu.is_faster("dev", "local")
    assert fermi.is_faster("shared", "global")
    # Same place (both in the SMP), so capacity decides: 48 kB on_chip beats 128 kB of regs.
    assert fermi.is_faster("shared", "reg")
    assert not fermi.is_faster("constant", "global")  # same memory
    assert not lib.get("perfect").is_faster("reg", "main")  # no memory holds reg
    assert not phi.is_faster("reg", "reg")


def test_values_by_path(lib):
    gpu, fermi = lib.get("gpu"), lib.get("fermi")
    assert gpu.value("gpu.hierarchy.blocks.block.threads.max_nr_units") == Quantity(1024)
    assert gpu.value(("gpu", "hierarchy", "blocks", "max_nr_units")) == Quantity(65535)
    assert fermi.value("fermi.hierarchy.blocks.block.warps.warp.threads.nr_units") == Quantity(32)
    assert fermi.value("smps.smp.on_chip.capacity") == Quantity(48 * KB, "B")
    assert fermi.value("fermi.smps.smp.on_chip.nr_banks") == Quantity(32)
    assert fermi.value("hierarchy.constant.read_only") is True
    assert fermi.value("hierarchy.global.read_only") is False
    assert fermi.value("smps.smp.lsus.performance_feedback") == "load_store_optimality"
    assert fermi.value("smps.smp.regs.addressable") is False
    assert fermi.value("smps.smp.nope.capacity") is None
    assert fermi.value("hierarchy.blocks.nr_units") is None  # blocks state max_nr_units
    assert gpu.value("processors.processor.alus.nr_units") == Quantity(32)
    assert lib.get("perfect").value("mem.capacity").value == math.inf


def test_nodes_and_paths(lib):
    fermi = lib.get("fermi")
    assert fermi.nodes()[0] is fermi.device
    assert fermi.node("smps.smp.l1").path == "smps.smp.l1"
    assert fermi.node("l1") is fermi.node("fermi.smps.smp.l1")
    assert fermi.node("alu").parent.name == "alus"
    assert fermi.node("nothing") is None


# ------------------------------------------------------------------ equivalence (Appendix A)


@pytest.mark.parametrize(
    ("parent", "child", "split"),
    [("perfect", "accelerator", {"threads": ["threads"]}),
     ("accelerator", "gpu", {"threads": ["blocks", "threads"]}),
     ("gpu", "nvidia", {"blocks": ["blocks"], "threads": ["threads"]}),
     ("nvidia", "fermi", {"blocks": ["blocks"], "threads": ["warps", "threads"]}),
     ("nvidia", "hopper", {"blocks": ["blocks"], "threads": ["warps", "threads"]}),
     ("accelerator", "mic", {"threads": ["threads", "vectors"]}),
     ("mic", "xeon_phi", {"threads": ["threads"], "vectors": ["vectors"]}),
     ("perfect", "cpu", {"threads": ["threads", "vectors"]}),
     ("cpu", "x86_avx512", {"threads": ["threads"], "vectors": ["vectors"]})],
)
def test_every_edge_of_the_library_is_equivalent(lib, parent, child, split):
    p, c = lib.get(parent), lib.get(child)
    assert check_hierarchy(p, c) == []
    mapping = find_equivalent_par_groups(p, c)
    assert mapping[0][0] is p.parallelism and mapping[0][1] == [c.parallelism]
    assert {f.name: names(t) for f, t in mapping[1:]} == split


def test_hopper_blocks_use_the_relaxation(lib):
    nvidia, hopper = lib.get("nvidia"), lib.get("hopper")
    assert nvidia.par_group("blocks").max_nr_units < hopper.par_group("blocks").max_nr_units
    mapping = find_equivalent_par_groups(nvidia, hopper)
    assert (mapping[1][0].name, names(mapping[1][1])) == ("blocks", ["blocks"])


def test_space_equivalences_down_to_fermi(lib):
    nvidia, fermi = lib.get("nvidia"), lib.get("fermi")
    mapping = find_equivalent_par_groups(nvidia, fermi)
    got = {s.name: equivalent_space(s.name, nvidia, fermi, mapping).name
           for s in nvidia.memory_spaces()}
    assert got == {"global": "global", "shared": "shared", "reg": "reg", "local": "local"}
    accelerator, mic = lib.get("accelerator"), lib.get("mic")
    m = find_equivalent_par_groups(accelerator, mic)
    assert equivalent_space("reg", accelerator, mic, m) is mic.memory_space("reg")
    assert equivalent_space("dev", accelerator, mic, m) is mic.memory_space("dev")
