"""`mcl hwd detect` without the hardware: recorded device queries (tests/detect/data) stand
in for the device, and every figure of the written description is checked against the
query it came from, through the library's own readers (mcl.hdl.peak, the loaded model)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from mcl.backends import load_mapping
from mcl.detect.generate import Generated, Measurements, generate
from mcl.detect.nvidia_specs import sm_spec
from mcl.detect.timing import Rate
from mcl.hdl.library import HwdLibrary, library_with
from mcl.hdl.model import HardwareDescription
from mcl.hdl.peak import bandwidth, peak_flops

DATA = Path(__file__).parent / "data"
H100 = "h100_query.json"           # recorded: NVIDIA OpenCL + cuda-bindings on an H100 SXM
XEON = "xeon_host_query.json"      # recorded: the GPU machine's host (AVX-512), no OpenCL
EPYC = "pocl_epyc_query.json"      # recorded: PoCL's CPU device on an AVX-512 EPYC
XEON_POCL = "xeon_pocl_query.json"  # recorded: PoCL's CPU device on the GPU machine's Xeon
AVX2 = "epyc_avx2_query.json"      # transcribed: an AVX2 EPYC without AVX-512
MI210 = "mi210_query.json"         # transcribed: an AMD GPU through ROCm's OpenCL
PARENTS = {H100: "hopper", XEON: "cpu", EPYC: "cpu", XEON_POCL: "cpu", AVX2: "cpu",
           MI210: "gpu"}


def recorded(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def install(generated: Generated, folder: Path) -> HwdLibrary:
    (folder / f"{generated.name}.hdl").write_text(generated.hdl)
    (folder / f"{generated.name}.opencl.toml").write_text(generated.mapping)
    library = library_with([folder])
    assert generated.name not in library.failed, library.failed.get(generated.name)
    return library


def described(name: str, folder: Path, measured: Measurements | None = None
              ) -> tuple[dict, HardwareDescription]:
    q = recorded(name)
    generated = generate(q, "detected", measured)
    return q, install(generated, folder).get("detected")


@pytest.mark.parametrize("name", sorted(PARENTS))
def test_the_description_loads_under_its_family_with_its_mapping(name: str, tmp_path: Path
                                                                 ) -> None:
    generated = generate(recorded(name), "detected")
    library = install(generated, tmp_path)
    assert library.parent("detected") == PARENTS[name] == generated.parent
    assert library.is_leaf("detected")
    mapping = load_mapping(library.get("detected"))
    assert set(mapping.par_groups) == {g.name for g in library.get("detected").par_groups()}


@pytest.mark.parametrize("name", sorted(PARENTS))
def test_every_figure_says_where_it_came_from(name: str) -> None:
    generated = generate(recorded(name), "detected")
    lines = generated.hdl.splitlines()
    numbered = [i for i, line in enumerate(lines)
                if re.search(r"=\s*\d|slots\(\w+, \d|op\(", line)]
    assert numbered
    for i in numbered:
        assert "//" in lines[i], f"no source for: {lines[i]}"


def _cpu_peak(q: dict, lanes: int) -> float:
    host = q["host"]
    mhz = host.get("max_mhz") or q.get("opencl", {}).get("max_clock_frequency") or host["mhz"]
    cores = host["sockets"] * host["cores_per_socket"]
    return cores * lanes * 2 * mhz * 1e6


@pytest.mark.parametrize(("name", "lanes"), [(XEON, 16), (EPYC, 16), (XEON_POCL, 16),
                                            (AVX2, 8)])
def test_a_cpu_s_lanes_come_from_its_isa_and_its_peak_from_cores_and_clock(
        name: str, lanes: int, tmp_path: Path) -> None:
    q, hwd = described(name, tmp_path)
    assert ("avx512f" in q["host"]["flags"]) == (lanes == 16)
    vectors = next(g for g in hwd.par_groups() if g.name == "vectors")
    assert vectors.count == lanes
    assert peak_flops(hwd) == pytest.approx(_cpu_peak(q, lanes))
    assert peak_flops(hwd, "double") == pytest.approx(_cpu_peak(q, lanes) / 2)
    assert bandwidth(hwd, "main") is None  # not measured: no invented roof


@pytest.mark.parametrize("name", [XEON, EPYC, XEON_POCL, AVX2])
def test_a_cpu_s_caches_are_its_sysfs_caches(name: str, tmp_path: Path) -> None:
    q, hwd = described(name, tmp_path)
    host = q["host"]
    cores = host["sockets"] * host["cores_per_socket"]
    caches = {info.node.name: info for info in hwd.caches()}
    assert set(caches) == {f"l{c['level']}" for c in host["caches"]}
    for cache in host["caches"]:
        info = caches[f"l{cache['level']}"]
        per_core = cache["instances"] >= cores
        expected = cache["size"] if per_core else (
            cache["size"] * cache["instances"] // host["sockets"])
        assert info.capacity == expected
        assert info.line_size == cache["line"]
        assert (info.node.parent.name == "core") == per_core


def test_the_h100_is_described_from_cuda_and_the_compute_capability_table(tmp_path: Path
                                                                           ) -> None:
    q, hwd = described(H100, tmp_path)
    cuda = q["cuda"]
    spec, _ = sm_spec(cuda["COMPUTE_CAPABILITY_MAJOR"], cuda["COMPUTE_CAPABILITY_MINOR"])
    clock = cuda["CLOCK_RATE"] * 1e3
    sms = cuda["MULTIPROCESSOR_COUNT"]
    assert peak_flops(hwd) == pytest.approx(sms * spec.fp32_lanes * 2 * clock)
    assert peak_flops(hwd, "double") == pytest.approx(sms * spec.fp64_per_clock * 2 * clock)
    memory = bandwidth(hwd, "global")
    assert memory is not None
    nominal = cuda["MEMORY_CLOCK_RATE"] * 1e3 * 2 * cuda["GLOBAL_MEMORY_BUS_WIDTH"] / 8
    assert memory.bytes_per_s == pytest.approx(nominal, rel=1e-6)
    infos = {i.node.name: i for i in hwd.memories() + hwd.caches()}
    assert infos["l2"].capacity == cuda["L2_CACHE_SIZE"]
    assert infos["on_chip"].capacity == cuda["MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"]
    assert infos["regs"].capacity == cuda["MAX_REGISTERS_PER_MULTIPROCESSOR"] * 4
    warps = next(g for g in hwd.par_groups() if g.name == "warps")
    assert warps.count == cuda["MAX_THREADS_PER_BLOCK"] // cuda["WARP_SIZE"]
    [threads] = [i for i in hwd.execution_units_for("thread") if i.node.name == "smp"]
    assert threads.slots == cuda["MAX_THREADS_PER_MULTIPROCESSOR"]


def test_the_h100_without_cuda_falls_back_to_opencl_and_the_table(tmp_path: Path) -> None:
    q = recorded(H100)
    del q["cuda"]
    generated = generate(q, "detected")
    assert generated.parent == "hopper"  # the NVIDIA OpenCL extension gives the capability
    hwd = install(generated, tmp_path).get("detected")
    ocl = q["opencl"]
    assert peak_flops(hwd) == pytest.approx(
        ocl["max_compute_units"] * 128 * 2 * ocl["max_clock_frequency"] * 1e6)
    assert bandwidth(hwd, "global") is None  # OpenCL gives no memory clock or bus width


def test_an_amd_gpu_has_the_lanes_of_its_simd_units(tmp_path: Path) -> None:
    q, hwd = described(MI210, tmp_path)
    ocl = q["opencl"]
    lanes = ocl["simd_per_compute_unit_amd"] * ocl["simd_width_amd"]
    assert peak_flops(hwd) == pytest.approx(
        ocl["max_compute_units"] * lanes * 2 * ocl["max_clock_frequency"] * 1e6)
    threads = next(g for g in hwd.par_groups() if g.name == "threads")
    assert threads.count == ocl["max_work_group_size"]


def test_a_gpu_with_small_work_groups_refines_accelerator(tmp_path: Path) -> None:
    q = recorded(MI210)
    q["opencl"]["max_work_group_size"] = 256
    generated = generate(q, "detected")
    assert generated.parent == "accelerator"
    install(generated, tmp_path)


@pytest.mark.parametrize("name", [H100, EPYC, MI210])
def test_measured_figures_become_the_roofs(name: str, tmp_path: Path) -> None:
    measured = Measurements(copy_bytes_per_s=123.4e9, fma_flops=4.321e12,
                            host_to_device=25e9, device_to_host=20e9)
    q, hwd = described(name, tmp_path, measured)
    assert peak_flops(hwd) == pytest.approx(measured.fma_flops, rel=1e-3)
    space = hwd.parallelism.spaces[0].name
    memory = bandwidth(hwd, space)
    assert memory is not None
    # The memory's roof is its peak: the nominal rate where the query gives one (CUDA's
    # memory clock x bus width, far above this copy), else the highest rate measured.
    cuda = q.get("cuda") or {}
    nominal = (cuda["MEMORY_CLOCK_RATE"] * 1e3 * 2 * cuda["GLOBAL_MEMORY_BUS_WIDTH"] / 8
               if cuda.get("MEMORY_CLOCK_RATE") else None)
    assert memory.bytes_per_s == pytest.approx(nominal or measured.copy_bytes_per_s, rel=1e-5)
    pcie = [n for n in hwd.device.walk() if n.name == "pcie" and n.kind == "interconnect"]
    if q.get("opencl", {}).get("type") == "gpu":  # the slower direction bounds transfers
        assert pcie[0].values["bandwidth"].value == pytest.approx(measured.device_to_host * 8)
    else:
        assert not pcie  # a CPU device shares the host's memory
    nominal = generate(q, "detected").hdl
    assert 'op("fma", 1);' in nominal
    assert f"measured {measured.fma_flops / 1e9:.1f} GFLOP/s" not in nominal


def test_the_default_name_is_an_identifier_from_the_device() -> None:
    from mcl.detect.generate import default_name

    assert default_name(recorded(H100)) == "nvidia_h100_80gb_hbm3"
    assert default_name(recorded(MI210)) == "amd_instinct_mi210"
    assert default_name(recorded(XEON)) == "intel_xeon_processor"
    assert default_name({"query_version": 1, "opencl": {"name": "8 core", "type": "gpu"}}) \
        == "d_8_core"


def test_an_nvidia_gpu_also_gets_a_cuda_mapping_for_its_architecture() -> None:
    """NAME.cuda.toml mirrors NAME.opencl.toml in CUDA's words (the format of
    hwdescs/hopper.cuda.toml): the same par_groups and spaces, the device's sm_XY."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pyproject installs tomli there
        import tomli as tomllib

    q = recorded(H100)
    generated = generate(q, "detected")
    assert generated.cuda_mapping is not None
    cuda = tomllib.loads(generated.cuda_mapping)
    opencl = tomllib.loads(generated.mapping)
    major, minor = q["cuda"]["COMPUTE_CAPABILITY_MAJOR"], q["cuda"]["COMPUTE_CAPABILITY_MINOR"]
    assert cuda["arch"] == f"sm_{major}{minor}"
    assert set(cuda["par_groups"]) == set(opencl["par_groups"])
    assert set(cuda["spaces"]) == set(opencl["spaces"])
    roles = {"work-group": "block", "work-item": "thread"}
    for group, mapped in opencl["par_groups"].items():
        assert cuda["par_groups"][group] == {"role": roles[mapped["role"]], "dim": mapped["dim"]}
    q["opencl"]["compute_capability_minor_nv"] = 6
    del q["cuda"]
    assert 'arch = "sm_96"' in (generate(q, "detected").cuda_mapping or "")
    for name in (EPYC, MI210):
        assert generate(recorded(name), "detected").cuda_mapping is None


@pytest.mark.parametrize("name", [H100, MI210])
def test_a_zero_figure_is_left_out_and_the_description_loads(name: str, tmp_path: Path
                                                             ) -> None:
    """A driver that reports a cache line of 0 B and a measurement that gave 0 B/s: HDL
    refuses both figures (the analyses divide by them), so they are left out."""
    q = recorded(name)
    q["opencl"]["global_mem_cacheline_size"] = 0
    measured = Measurements(copy_bytes_per_s=0.0)
    generated = generate(q, "detected", measured)
    assert "cache_line_size = 0" not in generated.hdl
    assert "bandwidth = 0" not in generated.hdl
    install(generated, tmp_path)


def _rate(value: float) -> Rate:
    return Rate(value, value * 0.98, value * 0.95, 5, "test figure")


@pytest.mark.parametrize("name", [H100, MI210, EPYC])
def test_the_memory_roof_is_no_less_than_any_rate_measured(name: str, tmp_path: Path) -> None:
    """The roofline's "at least" divides by the roof, so a kernel that reads faster than
    the copy (as an H100's does) must not beat it: the roof is the highest of the nominal
    rate and the measured read, write and copy; the measured ones are in its comment."""
    q = recorded(name)
    cuda = q.get("cuda") or {}
    nominal = (cuda["MEMORY_CLOCK_RATE"] * 1e3 * 2 * cuda["GLOBAL_MEMORY_BUS_WIDTH"] / 8
               if cuda.get("MEMORY_CLOCK_RATE") else 0.0)
    for read in (0.9 * nominal or 150e9, 1.1 * nominal or 150e9):
        rates = {"copy": _rate(100e9), "read": _rate(read), "write": _rate(120e9)}
        measured = Measurements(copy_bytes_per_s=100e9, fma_flops=4e12, rates=rates)
        generated = generate(q, "detected", measured)
        (tmp_path / "detected_feedback.py").write_text(generated.feedback or "")
        hwd = install(generated, tmp_path).get("detected")
        memory = bandwidth(hwd, hwd.parallelism.spaces[0].name)
        assert memory is not None
        assert memory.bytes_per_s == pytest.approx(max(read, nominal), rel=1e-5)
        flat = " ".join(generated.hdl.replace("//", " ").split())
        assert "copy 100.0 GB/s" in flat and "read " in flat and "write 120.0 GB/s" in flat


def test_a_detected_hopper_keeps_hopper_s_launch_and_comments_the_measured_one(
        tmp_path: Path) -> None:
    """hopper.hdl's launch is a profiler's duration of an empty kernel, what the time model
    is validated against; the OpenCL events --measure times count more, so a description
    that specializes hopper states hopper's and the measured one in the comment. A GPU
    whose parent states none (MI210 under gpu) states the measured median."""
    launch = Rate(3.84e-6, 4.93e-6, 7.74e-6, 21, "an empty kernel")
    measured = Measurements(rates={"launch": launch})
    hopper = generate(recorded(H100), "detected", measured).hdl
    device = hopper[hopper.index("device detected {"):].split("}")[0]
    assert "\n  latency = 4000 cycles;" in device
    assert "here 9761 cycles measured (the median)" in " ".join(
        device.replace("//", " ").split())
    q = recorded(MI210)
    gpu = generate(q, "detected", measured).hdl
    clock_hz = q["opencl"]["max_clock_frequency"] * 1e6
    device = gpu[gpu.index("device detected {"):].split("}")[0]
    assert f"\n  latency = {round(4.93e-6 * clock_hz)} cycles;" in device
