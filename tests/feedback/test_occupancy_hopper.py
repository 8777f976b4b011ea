"""Hopper occupancy against CUDA's occupancy calculator.

tests/feedback/data/hopper_occupancy.json holds blocks per SM measured with
`cudaOccupancyMaxActiveBlocksPerMultiprocessor` (CUDA 13) on an NVIDIA H200 for kernels
compiled with different register counts, threads per block and shared memory per block;
the file records the command and the program (benchmarks/gpu/occupancy_table.cu)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcl import pipeline
from mcl.feedback import occupancy
from mcl.feedback.analyses.functions import find_function, load_module
from mcl.feedback.facts.kernel import build_facts
from mcl.feedback.kernel_api import Kernel
from mcl.feedback.messages import FeedbackSeverity
from mcl.feedback.registry import analyse
from mcl.hdl.library import default_library
from mcl.mcpl.loader import load_program
from mcl.resources import hwdescs_dir

TABLE = json.loads((Path(__file__).parent / "data" / "hopper_occupancy.json").read_text())

KERNEL = """
hopper void scale(int n, global float[n] out, global float[n] src) {{
  foreach (int b in n / {threads} blocks) {{
    shared float[{floats}] tile;
    foreach (int w in {warps} warps) {{
      foreach (int t in 32 threads) {{
        int i = w * 32 + t;
        tile[i] = src[b * {threads} + i];
        barrier(shared);
        out[b * {threads} + i] = tile[i];
      }}
    }}
  }}
}}
"""


@pytest.fixture(scope="module")
def library():
    return default_library()


def hopper_kernel(tmp_path: Path, library, threads: int = 256, shared_floats: int = 1024):
    path = tmp_path / "scale.mcpl"
    path.write_text(KERNEL.format(threads=threads, warps=threads // 32, floats=shared_floats))
    program = load_program(path, (), library)
    function = program.main.functions[0]
    hwd = library.get("hopper")
    name, node = hwd.feedback_functions()[0]
    checked = pipeline.check(program, library)
    return Kernel(build_facts(function, checked, hwd), {}, node, name), program


@pytest.fixture(scope="module")
def hopper_sm(tmp_path_factory, library):
    kernel, _ = hopper_kernel(tmp_path_factory.mktemp("hopper"), library)
    module = load_module(hwdescs_dir() / "hopper_feedback.py")
    return module.hopper_multiprocessor(kernel)


def test_the_table_is_the_measured_one():
    assert TABLE["device"] == "NVIDIA H200" and TABLE["cc"] == "9.0"
    assert len(TABLE["cases"]) == 1008
    assert "cudaOccupancyMaxActiveBlocksPerMultiprocessor" in \
        (Path(__file__).parents[2] / "benchmarks" / "gpu" / "occupancy_table.cu").read_text()


def test_resources_come_from_hopper_hdl(hopper_sm):
    sm = hopper_sm.resources
    assert (sm.block_slots, sm.warp_slots, sm.thread_slots) == (32, 64, 2048)
    assert sm.registers == TABLE["regs_per_sm"] == 65536
    assert sm.shared_bytes == TABLE["smem_per_sm"] == 228 * 1024
    assert sm.register_partitions == 4  # hopper.hdl: 4 processing blocks per SM
    assert sm.shared_reserved == TABLE["reserved_smem_per_block"]
    assert hopper_sm.shared_space == "shared" and hopper_sm.block_unit == "block"


def test_every_case_of_the_cuda_table(hopper_sm):
    wrong = []
    for case in TABLE["cases"]:
        usage = occupancy.BlockUsage(case["threads"], case["regs"], case["smem"])
        got = occupancy.blocks_per_sm(hopper_sm.resources, usage)
        if got.blocks != case["blocks"]:
            wrong.append((case, got.blocks))
    assert not wrong, f"{len(wrong)} of {len(TABLE['cases'])} cases differ: {wrong[:5]}"


def test_the_table_exercises_every_limit(hopper_sm):
    limits = set()
    for case in TABLE["cases"]:
        usage = occupancy.BlockUsage(case["threads"], case["regs"], case["smem"])
        limits.update(occupancy.blocks_per_sm(hopper_sm.resources, usage).limiting)
    assert {"block slots", "warps", "registers", "shared memory"} <= limits


def test_the_occupancy_message(tmp_path, library):
    _, program = hopper_kernel(tmp_path, library, threads=256, shared_floats=12 * 1024)
    function = program.main.functions[0]
    checked = pipeline.check(program, library)
    (message,) = [m for m in analyse(function, checked, library.get("hopper"), {},
                                     only=["functions"]) if m.code == "occupancy"]
    assert message.severity == FeedbackSeverity.SUGGESTION
    values = {k: v.numeric for k, v in message.values}
    assert values["threads_per_block"] == 256 and values["shared_bytes_per_block"] == 48 * 1024
    # (48 kB + 1 kB reserved) per block in 228 kB: 4 blocks, 32 of 64 warps.
    assert values["blocks_per_sm"] == 4 and values["warps_per_sm"] == 32
    assert message.text.startswith("occupancy: 4 blocks per SM (32 of 64 warps, 50%), "
                                   "limited by shared memory")


def test_the_function_is_found_next_to_hopper_hdl(library):
    hwd = library.get("hopper")
    name, node = hwd.feedback_functions()[0]
    fn, _ = find_function(name, hwd, node)
    assert name == "occupancy" and fn.__module__.startswith("mcl_feedback_functions_hopper")
