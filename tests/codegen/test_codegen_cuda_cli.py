"""`mcl codegen --lang cuda`, `mcl run --backend cuda` and `mcl tune --backend cuda`
without a GPU: the files written, and one line with exit status 1 for each thing that is
missing (bindings, driver, device, mapping) or a launch that exceeds a resource."""

from __future__ import annotations

import shutil
import subprocess
import sys
from enum import Enum
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mcl import pipeline
from mcl.backends.cuda import runner as cuda_runner
from mcl.backends.cuda.runner import CudaSession, _Kernel
from mcl.backends.opencl.runner import resource_message
from mcl.cli import main
from mcl.codegen.plan import KernelPlan
from mcl.diagnostics import MclError
from mcl.mcpl.loader import load_program
from mcl.output_files import marker_line
from mcl.resources import kernels_dir

from .support import library

MATMUL = str(kernels_dir() / "matmul" / "hopper_v1.mcpl")


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_codegen_lang_cuda_writes_kernels_and_harness(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "gen"
    assert main(["codegen", MATMUL, "--target", "hopper", "--lang", "cuda", "--no-tuned",
                 "-o", str(out)]) == 0
    expected = pipeline.generate(load_program(MATMUL, library=library()), "hopper", library(),
                               language="cuda")
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["matmul.cu", "matmul.h", "matmul.cpp", "mcl_cuda.h", "main.cpp", "CMakeLists.txt"])
    assert (out / "matmul.cu").read_text() == marker_line("matmul.cu") + expected.source
    cmake = (out / "CMakeLists.txt").read_text()
    assert "project(matmul_mcl LANGUAGES CXX CUDA)" in cmake
    assert "set(CMAKE_CUDA_ARCHITECTURES 90)" in cmake  # hopper.cuda.toml's arch
    assert "add_library(matmul_kernels OBJECT matmul.cu)" in cmake
    assert "CUDA::cuda_driver CUDA::nvrtc" in cmake
    source = (out / "matmul.cpp").read_text()
    # the same host code as the OpenCL harness, with the CUDA runtime's spellings
    assert 'mcl::Kernel kernel = mcl::create_kernel(module.program, "matmul");' in source
    assert "CUdeviceptr c_buffer = mcl::create_buffer(ctx, c_bytes, c);" in source
    assert "cl_" not in source.split('R"MCL_OPENCL(')[0]
    assert expected.source in source  # the kernels, embedded
    header = (out / "matmul.h").read_text()
    assert '#include "mcl_cuda.h"' in header and "CUmodule program = nullptr;" in header
    assert "cmake -S" in capsys.readouterr().out


def _cuda_toolkit_with_nvrtc() -> bool:
    """nvcc, cmake and NVRTC's header (the harness compiles against it)."""
    nvcc = shutil.which("nvcc")
    if nvcc is None or shutil.which("cmake") is None:
        return False
    roots = [Path(nvcc).resolve().parents[1], *Path("/usr/local").glob("cuda*")]
    return any((root / "include" / "nvrtc.h").is_file() for root in roots)


@pytest.mark.skipif(not _cuda_toolkit_with_nvrtc(),
                    reason="no CUDA toolkit with NVRTC (nvcc, cmake, nvrtc.h): the CMake "
                    "project of --lang cuda is built only where one is installed; NVRTC from "
                    "PyPI covers the kernels (test_codegen_cuda.py)")
def test_cuda_cmake_project_builds(tmp_path: Path) -> None:
    out = tmp_path / "gen"
    assert main(["codegen", MATMUL, "--target", "hopper", "--lang", "cuda", "--no-tuned",
                 "-o", str(out)]) == 0
    for command in (["cmake", "-S", str(out), "-B", str(out / "build")],
                    ["cmake", "--build", str(out / "build")]):
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
    assert (out / "build" / "matmul_main").is_file()


def test_codegen_lang_cuda_at_a_leaf_without_cuda_mapping(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(kernels_dir() / "matmul" / "perfect.mcpl")
    assert main(["codegen", path, "--target", "xeon_phi", "--lang", "cuda",
                 "-o", str(tmp_path / "x")]) == 1
    line = _one_error_line(capsys.readouterr().err)
    assert "'xeon_phi' has no CUDA mapping" in line


class _Result(Enum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_NO_DEVICE = 100


def _fake_driver(init: Any) -> SimpleNamespace:
    return SimpleNamespace(CUresult=_Result, cuInit=init)


@pytest.mark.parametrize("command", ["run", "tune"])
def test_no_driver_is_one_line(command: str, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    def init(flags: int) -> tuple[Any]:
        raise RuntimeError("libcuda.so.1: cannot open shared object file")

    monkeypatch.setattr(cuda_runner, "driver_module", lambda: _fake_driver(init))
    assert main([command, MATMUL, "--target", "hopper", "--backend", "cuda"]) == 1
    line = _one_error_line(capsys.readouterr().err)
    assert "no NVIDIA driver found" in line and "libcuda.so" in line


def test_no_device_is_one_line(monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cuda_runner, "driver_module",
                        lambda: _fake_driver(lambda flags: (_Result.CUDA_ERROR_NO_DEVICE,)))
    assert main(["run", MATMUL, "--target", "hopper", "--backend", "cuda"]) == 1
    assert "sees no CUDA device" in _one_error_line(capsys.readouterr().err)


def test_missing_bindings_name_the_extra(monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)  # import fails
    assert main(["run", MATMUL, "--target", "hopper", "--backend", "cuda"]) == 1
    err = capsys.readouterr().err
    assert "needs NVIDIA's Python bindings" in _one_error_line(err)
    assert "mcl[cuda]" in err


def test_run_backend_cuda_at_a_leaf_without_cuda_mapping(
        capsys: pytest.CaptureFixture[str]) -> None:
    path = str(kernels_dir() / "matmul" / "perfect.mcpl")
    assert main(["run", path, "--target", "xeon_phi", "--backend", "cuda"]) == 1
    assert "'xeon_phi' has no CUDA mapping" in _one_error_line(capsys.readouterr().err)


def _session(threads_per_block: int = 1024, registers_per_block: int = 65536,
             shared_per_block: int = 232448) -> CudaSession:
    session = object.__new__(CudaSession)
    session.threads_per_block = threads_per_block
    session.registers_per_block = registers_per_block
    session.shared_per_block = shared_per_block
    session.device = SimpleNamespace(name="NVIDIA H100", platform=SimpleNamespace(name="CUDA"))
    return session


def _plan() -> KernelPlan:
    return KernelPlan("matmul", "matmul", (), (), (), None, ())


def test_registers_over_the_limit_name_the_figures() -> None:
    kernel = _Kernel(function=None, registers=255, static_shared=0, max_threads=256)
    with pytest.raises(MclError) as exc:
        _session()._check_resources(_plan(), kernel, [32, 16], 0)
    text = str(exc.value)
    assert "uses 255 registers per thread" in text
    assert "a block of 512 threads needs 130560 registers" in text
    assert "a block has 65536 (at most 256 threads at 255 registers)" in text


def test_shared_memory_over_the_limit_names_the_figures() -> None:
    kernel = _Kernel(function=None, registers=32, static_shared=200000, max_threads=1024)
    with pytest.raises(MclError) as exc:
        _session()._check_resources(_plan(), kernel, [256], 40000)
    text = str(exc.value)
    assert "needs 240000 bytes of shared memory per block (200000 declared, 40000 sized " \
           "by the host)" in text
    assert "at most 232448" in text


def test_a_launch_within_the_limits_passes() -> None:
    kernel = _Kernel(function=None, registers=64, static_shared=16384, max_threads=1024)
    _session()._check_resources(_plan(), kernel, [32, 8], 1024)  # no error


def test_opencl_out_of_resources_names_the_resource() -> None:
    text = resource_message("matmul", [256], 128, 0, 0, 49152, "NVIDIA H100 (NVIDIA CUDA)")
    assert "work-groups of 256 = 256 work-items" in text and "at most 128" in text
    # matmul gpu_v3 at 4096 on the H100's OpenCL: the kernel's local memory counts the
    # 65,536 bytes of its host-sized tile, set as an argument before the query.
    text = resource_message("matmul", [256], 1024, 65540, 65536, 49152, "GPU")
    assert "needs 65540 bytes of local memory per work-group (65536 of them sized by the " \
           "host); GPU has 49152" in text
    # an implementation that leaves the arguments out of its figure: they are added
    text = resource_message("matmul", [256], 1024, 4, 65536, 49152, "GPU")
    assert "needs 65540 bytes" in text
