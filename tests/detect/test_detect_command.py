"""`mcl hwd detect` end to end: the host's /proc and /sys read from a recorded tree, the
command on recorded queries (outputs, errors, JSON; the benchmarks are in
test_measure.py), and a kernel translated to a detected description and run verified
through PoCL."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from mcl.cli import main
from mcl.detect.query import query_host
from mcl.schemas import load_schema

DATA = Path(__file__).parent / "data"


def _write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_host_query_reads_topology_caches_and_memory(tmp_path: Path) -> None:
    """Two sockets of two cores with two threads each: 8 logical CPUs; L2 per core, L3 per
    socket (what sysfs's shared_cpu_list says)."""
    processors = []
    for cpu in range(8):
        socket, core = cpu // 4, (cpu // 2) % 2
        processors.append(f"processor\t: {cpu}\nmodel name\t: Test CPU\nphysical id\t: {socket}\n"
                          f"core id\t\t: {core}\ncpu MHz\t\t: 2000.000\n"
                          "flags\t\t: sse2 avx avx2 fma\n")
        base = f"sys/devices/system/cpu/cpu{cpu}/cache"
        first = cpu - cpu % 2
        for index, (level, kind, size, shared) in enumerate([
                (1, "Data", "48K", f"{first}-{first + 1}"),
                (1, "Instruction", "32K", f"{first}-{first + 1}"),
                (2, "Unified", "2048K", f"{first}-{first + 1}"),
                (3, "Unified", "16M", f"{socket * 4}-{socket * 4 + 3}")]):
            for name, value in (("level", level), ("type", kind), ("size", size),
                                ("coherency_line_size", 64), ("shared_cpu_list", shared)):
                _write(tmp_path, f"{base}/index{index}/{name}", f"{value}\n")
    _write(tmp_path, "proc/cpuinfo", "\n".join(processors))
    _write(tmp_path, "proc/meminfo", "MemTotal:       16384000 kB\nMemFree: 1 kB\n")
    _write(tmp_path, "sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "3500000\n")
    host = query_host(tmp_path)
    assert (host["sockets"], host["cores_per_socket"], host["threads_per_core"]) == (2, 2, 2)
    assert host["logical_cpus"] == 8 and host["max_mhz"] == 3500 and host["mhz"] == 2000
    assert host["mem_total_kb"] == 16384000
    assert "avx2" in host["flags"] and "avx512f" not in host["flags"]
    assert host["caches"] == [
        {"level": 1, "type": "Data", "size": 48 * 1024, "line": 64, "instances": 4},
        {"level": 2, "type": "Unified", "size": 2 << 20, "line": 64, "instances": 4},
        {"level": 3, "type": "Unified", "size": 16 << 20, "line": 64, "instances": 2}]


def test_detect_writes_both_files_and_refuses_to_overwrite(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    args = ["hwd", "detect", "--from-query", str(DATA / "h100_query.json"), "-o", str(tmp_path)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "specializes hopper" in out and "float peak: 66,908.2 GFLOP/s" in out
    hdl = tmp_path / "nvidia_h100_80gb_hbm3.hdl"
    for suffix in (".opencl.toml", ".cuda.toml"):
        assert (tmp_path / f"nvidia_h100_80gb_hbm3{suffix}").is_file()
    hdl.write_text("// edited by hand\n")
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "exists" in err and "--force" in err and "Traceback" not in err
    assert hdl.read_text() == "// edited by hand\n"
    assert main([*args, "--force"]) == 0
    assert "hardware_description nvidia_h100_80gb_hbm3;" in hdl.read_text()
    assert main(["hwd", "show", "nvidia_h100_80gb_hbm3", "--hwd-path", str(tmp_path)]) == 0
    assert "specializes hopper" in capsys.readouterr().out


def test_detect_json_names_the_files_and_peaks(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hwd", "detect", "--from-query", str(DATA / "mi210_query.json"), "-o",
                 str(tmp_path), "--name", "mi", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    jsonschema.validate(document, load_schema("hwd-detect"))
    assert document["name"] == "mi" and document["parent"] == "gpu"
    assert document["files"] == [str(tmp_path / "mi.hdl"), str(tmp_path / "mi.opencl.toml")]
    assert document["peak_flops"]["float"] == pytest.approx(104 * 64 * 2 * 1.7e9)
    assert document["bandwidths"] == [] and document["measured"] is False


@pytest.mark.parametrize(("extra", "code"), [
    (["--name", "9lives"], "detect-bad-name"),
    (["--name", "hopper"], "detect-name-taken"),
    (["--measure"], "detect-measure-recorded"),
])
def test_detect_errors_are_one_line_diagnostics(extra: list[str], code: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hwd", "detect", "--from-query", str(DATA / "h100_query.json"), "-o",
                 str(tmp_path), *extra]) == 1
    err = capsys.readouterr().err
    assert f"[{code}]" in err and "Traceback" not in err
    assert not list(tmp_path.iterdir())


def test_detect_rejects_an_output_that_is_a_file_before_querying(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    assert main(["hwd", "detect", "--from-query", str(tmp_path / "missing.json"), "-o",
                 str(target)]) == 1
    assert "not a folder" in capsys.readouterr().err  # not the missing query: checked first


def test_detect_rejects_a_file_that_is_no_query(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "q.json"
    bad.write_text("[1, 2]")
    assert main(["hwd", "detect", "--from-query", str(bad), "-o", str(tmp_path)]) == 1
    assert "[detect-bad-query]" in capsys.readouterr().err


def test_save_query_round_trips_through_from_query(tmp_path: Path) -> None:
    """Detect the host (no OpenCL needed), keep its query, and regenerate from it: the same
    description."""
    assert main(["hwd", "detect", "--device", "host", "-o", str(tmp_path / "a"), "--name",
                 "here", "--save-query", str(tmp_path / "q.json")]) == 0
    assert main(["hwd", "detect", "--from-query", str(tmp_path / "q.json"), "-o",
                 str(tmp_path / "b"), "--name", "here"]) == 0
    assert (tmp_path / "a/here.hdl").read_text() == (tmp_path / "b/here.hdl").read_text()


def test_a_kernel_translated_to_a_detected_cpu_runs_verified(tmp_path: Path) -> None:
    """matmul from perfect down to the (transcribed) AVX2 EPYC: 8-lane vectors, sizes the
    reference keeps off multiples of 8; its outputs match numpy through PoCL."""
    assert main(["hwd", "detect", "--from-query", str(DATA / "epyc_avx2_query.json"), "-o",
                 str(tmp_path), "--name", "zen3"]) == 0
    kernel = Path(__file__).parents[2] / "kernels/matmul/perfect.mcpl"
    assert main(["run", str(kernel), "--level", "zen3", "--target", "zen3", "--verify",
                 "--hwd-path", str(tmp_path)]) == 0


def test_devices_suggests_detect_until_a_description_matches(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("MCL_DEVICE", raising=False)
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    monkeypatch.delenv("MCL_HWD_PATH", raising=False)
    assert main(["devices"]) == 0
    assert "mcl hwd detect" in capsys.readouterr().err
    assert main(["hwd", "detect", "-o", str(tmp_path)]) == 0  # the default device
    capsys.readouterr()
    monkeypatch.setenv("MCL_HWD_PATH", str(tmp_path))
    assert main(["devices"]) == 0
    assert capsys.readouterr().err == ""


def test_a_bundled_machine_matches_its_device() -> None:
    from types import SimpleNamespace

    import pyopencl as cl

    from mcl.detect.match import matching_description
    from mcl.hdl.library import default_library

    def device(name: str, vendor: str) -> SimpleNamespace:
        return SimpleNamespace(name=name, vendor=vendor, type=cl.device_type.GPU,
                               platform=SimpleNamespace(name=vendor))

    library = default_library()
    assert matching_description(device("NVIDIA H100 80GB HBM3", "NVIDIA"), library) == "hopper"
    assert matching_description(device("NVIDIA A100-SXM4-40GB", "NVIDIA"), library) is None


def test_the_roofline_reads_its_roofs_from_a_measured_description(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """matmul at the detected CPU: the peak and the main-memory bandwidth of the roofline
    are the measured figures the description states."""
    from mcl.detect.generate import Measurements, generate

    measured = Measurements(copy_bytes_per_s=21.5e9, fma_flops=97.25e9)
    generated = generate(json.loads((DATA / "epyc_avx2_query.json").read_text()), "zen3",
                         measured)
    (tmp_path / "zen3.hdl").write_text(generated.hdl)
    (tmp_path / "zen3.opencl.toml").write_text(generated.mapping)
    kernel = Path(__file__).parents[2] / "kernels/matmul/perfect.mcpl"
    assert main(["roofline", str(kernel), "--level", "zen3", "--hwd-path", str(tmp_path),
                 "-D", "n=512", "-D", "m=512", "-D", "p=512", "--format", "json"]) == 0
    [point] = json.loads(capsys.readouterr().out)["points"]
    assert point["peak"] == pytest.approx(measured.fma_flops, rel=1e-5)
    [level] = point["levels"]
    assert level["space"] == "main"
    assert level["bandwidth"] == pytest.approx(measured.copy_bytes_per_s, rel=1e-5)


def test_the_cuda_query_reads_the_driver_attributes(monkeypatch: pytest.MonkeyPatch) -> None:
    """cuda-bindings' driver API, stood in for by a module answering as the H100 did
    (tests/detect/data/h100_query.json): the query returns what the driver returned."""
    import enum
    import sys
    from types import ModuleType, SimpleNamespace

    from mcl.detect.query import CUDA_ATTRIBUTES, query_cuda

    recorded = json.loads((DATA / "h100_query.json").read_text())["cuda"]
    result = enum.Enum("CUresult", "CUDA_SUCCESS CUDA_ERROR_INVALID_VALUE")
    attribute = enum.Enum("CUdevice_attribute",
                          [f"CU_DEVICE_ATTRIBUTE_{a}" for a in CUDA_ATTRIBUTES])
    ok = result.CUDA_SUCCESS

    def get_attribute(which: enum.Enum, device: int) -> tuple:
        name = which.name.removeprefix("CU_DEVICE_ATTRIBUTE_")
        if name not in recorded:
            return result.CUDA_ERROR_INVALID_VALUE, 0
        return ok, recorded[name]

    driver = SimpleNamespace(
        CUresult=result, CUdevice_attribute=attribute,
        cuInit=lambda flags: (ok,), cuDeviceGet=lambda ordinal: (ok, ordinal),
        cuDeviceGetName=lambda size, device: (ok, recorded["name"].encode() + b"\0" * 8),
        cuDeviceTotalMem=lambda device: (ok, recorded["total_mem"]),
        cuDeviceGetAttribute=get_attribute)
    module = ModuleType("cuda.bindings.driver")
    module.__dict__.update(vars(driver))
    bindings = ModuleType("cuda.bindings")
    bindings.driver = module  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cuda", ModuleType("cuda"))
    monkeypatch.setitem(sys.modules, "cuda.bindings", bindings)
    monkeypatch.setitem(sys.modules, "cuda.bindings.driver", module)
    assert query_cuda(0) == recorded


def _occupancy_messages(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    main(argv)
    document = json.loads(capsys.readouterr().out)
    return [m["message"] for m in document["messages"] if m.get("code") == "occupancy"]


def test_a_detected_hopper_gpu_keeps_hopper_s_occupancy_feedback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
        ) -> None:
    """The H100's description names hopper's occupancy function (NAME_feedback.py beside
    it); with the same figures as hopper.hdl it says what hopper says. Both with the
    registers estimated: NVRTC's count is taken for the bundled leaves only (a user's
    description has no CUDA mapping to generate the kernel with)."""
    from mcl.feedback import compiler_registers

    monkeypatch.setattr(compiler_registers, "use_counter", lambda counter: None)
    monkeypatch.setattr(compiler_registers, "_counter", [])
    assert main(["hwd", "detect", "--from-query", str(DATA / "h100_query.json"), "-o",
                 str(tmp_path), "--name", "h100"]) == 0
    assert (tmp_path / "h100_feedback.py").is_file()
    capsys.readouterr()
    kernel = str(Path(__file__).parents[2] / "kernels/matmul/hopper_v1.mcpl")
    sizes = ["-D", "n=4096", "-D", "m=4096", "-D", "p=4096", "--format", "json"]
    detected = _occupancy_messages(["check", kernel, "--feedback", "--level", "h100",
                                    "--hwd-path", str(tmp_path), *sizes], capsys)
    bundled = _occupancy_messages(["check", kernel, "--feedback", *sizes], capsys)
    assert detected and detected == bundled


@pytest.mark.parametrize(("cuda_name", "kept"), [("NVIDIA H100 80GB HBM3", True),
                                                 ("NVIDIA A100-SXM4-40GB", False)])
def test_cuda_figures_are_kept_only_for_the_same_device(
        cuda_name: str, kept: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """CUDA numbers devices its own way: an answer about another device is dropped."""
    from types import SimpleNamespace

    import pyopencl as cl

    from mcl.detect import query as query_module

    monkeypatch.setattr(query_module, "query_cuda",
                        lambda ordinal=0: {"name": cuda_name, "MULTIPROCESSOR_COUNT": 108})
    device = SimpleNamespace(name="NVIDIA H100 80GB HBM3", vendor="NVIDIA Corporation",
                             type=cl.device_type.GPU, platform=SimpleNamespace(name="NVIDIA CUDA"))
    q = query_module.query(device)
    assert q["opencl"]["name"] == "NVIDIA H100 80GB HBM3" and q["opencl"]["type"] == "gpu"
    assert ("cuda" in q) == kept
