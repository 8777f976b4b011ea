"""Acceptance (issue 7): the generated C++ host harness of matmul and convolution builds
with CMake and g++ against the system OpenCL headers and ICD loader, runs on PoCL, and
its outputs equal numpy's. Needs the Debian packages opencl-headers ocl-icd-opencl-dev
pocl-opencl-icd cmake g++ (./scripts/test installs them): without them these tests FAIL."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from mcl import pipeline
from mcl.backends import emit_harness
from mcl.mcpl.loader import load_program
from mcl.resources import kernels_dir
from mcl.verify import expected_outputs, load_reference, make_inputs, verify

from .support import library, load
from .test_codegen_emit import TWOPHASE


def _build(generated, folder: Path, options: tuple[str, ...] = ()) -> Path:
    """Write the harness, configure and build it; the example driver's path."""
    for tool in ("cmake", "g++"):
        assert shutil.which(tool), f"{tool} is missing: apt-get install {tool} (see .ci/run)"
    files = emit_harness(generated).files()
    assert set(files) == {
        f"{generated.name}.cl",
        f"{generated.name}.h",
        f"{generated.name}.cpp",
        "mcl_opencl.h",
        "main.cpp",
        "CMakeLists.txt",
    }
    for name, text in files.items():
        (folder / name).write_text(text)
    build = folder / "build"
    for command in (
        [
            "cmake",
            "-S",
            str(folder),
            "-B",
            str(build),
            "-DCMAKE_BUILD_TYPE=Release",
            "-DCMAKE_CXX_FLAGS=-Wall -Werror=return-type",
            *options,
        ],
        ["cmake", "--build", str(build), "-j", "2"],
    ):
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
    return build / f"{generated.name}_main"


def _run(driver: Path, function: str, data: Path, scalars: dict[str, object]) -> str:
    command = [str(driver), function, str(data), *(f"{k}={v}" for k, v in scalars.items())]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.parametrize(("kernel", "leaf"), [("matmul", "fermi"), ("convolution", "x86_avx512")])
def test_harness_builds_runs_and_matches_numpy(tmp_path: Path, kernel: str, leaf: str) -> None:
    folder = kernels_dir() / kernel
    program = load_program(folder / "perfect.mcpl", library=library())
    generated = pipeline.generate(pipeline.checked(program, library()), leaf, library())
    driver = _build(generated, tmp_path)
    ref = load_reference(folder / "reference.py")
    sizes, args = make_inputs(ref, {}, seed=3)
    data = tmp_path / "data"
    data.mkdir()
    scalars = {}
    for name, value in args.items():
        if isinstance(value, np.ndarray):
            value.tofile(data / f"{name}.bin")
        else:
            scalars[name] = value
    out = _run(driver, kernel, data, scalars)
    assert f"{kernel}: kernel time" in out and "Portable Computing Language" in out
    results = {
        name: np.fromfile(data / f"{name}.out.bin", dtype=args[name].dtype).reshape(
            args[name].shape
        )
        for name in ref.outputs
    }
    checks = verify(ref, expected_outputs(ref, args), results, args)
    assert all(c.ok for c in checks), [c.note for c in checks]
    # Only written arrays come back.
    assert not (data / "a.out.bin").exists()


def test_harness_runs_host_loops_and_several_kernels(tmp_path: Path) -> None:
    generated = pipeline.generate(load(tmp_path, TWOPHASE), "x86_avx512", library())
    source = emit_harness(generated).source
    assert "for (int it = 0; it < iters; it++) {" in source
    assert source.count("cl_kernel kernel = clCreateKernel(") == 2
    # The first kernel's private array is sized by n: built with -D for the n of the call.
    assert 'const std::string options = "-DMCL_SIZE_window=" + std::to_string(' in source
    driver = _build(generated, tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    n, iters = 13, 2
    a = np.arange(n, dtype=np.float32)
    a.tofile(data / "a.bin")
    np.zeros(n, np.float32).tofile(data / "b.bin")  # read by the function: the driver needs it
    _run(driver, "twophase", data, {"n": n, "iters": iters})
    expected = a + 1
    expected[: n // 2] *= 2**iters
    np.testing.assert_array_equal(np.fromfile(data / "b.out.bin", np.float32), expected)



@pytest.mark.parametrize(("arguments", "status", "message"), [
    (["n=5.5", "m=3", "p=7"], 1, "error: n=5.5: not an integer"),
    (["n=abc", "m=3", "p=7"], 1, "error: n=abc: not an integer"),
    (["n=99999999999", "m=3", "p=7"], 1, "error: n=99999999999: out of the range of its type"),
    (["n=-5", "m=3", "p=7"], 1, "error: c would have -15 elements: check the sizes given"),
    (["n=5", "m=3", "p=7", "q=1"], 1, "error: unknown argument q=...: matmul takes n, m, p"),
    (["n=5", "m=3", "p=7", "--verbose"], 2, "error: unknown argument --verbose"),
    (["n=5", "m=3", "p=8"], 1, "a.bin does not hold exactly 40 elements of 4 bytes"),
    (["n=5", "m=3"], 1, "error: missing argument p=VALUE"),
])
def test_the_driver_is_as_strict_as_mcl_run(tmp_path: Path, matmul_driver: Path,
                                            arguments: list[str], status: int,
                                            message: str) -> None:
    driver = matmul_driver
    data = tmp_path / "data"
    data.mkdir()
    np.ones(5 * 7, np.float32).tofile(data / "a.bin")
    np.ones(7 * 3, np.float32).tofile(data / "b.bin")
    done = subprocess.run([str(driver), "matmul", str(data), *arguments], capture_output=True,
                          text=True, check=False, timeout=120)
    assert (done.returncode, done.stdout) == (status, "")
    assert message in done.stderr


def test_the_driver_refuses_a_missing_input_and_an_unwritable_output(
        tmp_path: Path, matmul_driver: Path) -> None:
    driver = matmul_driver
    sizes = ["n=5", "m=3", "p=7"]
    done = subprocess.run([str(driver), "matmul", str(tmp_path / "none"), *sizes],
                          capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 1 and "cannot read" in done.stderr and "a.bin" in done.stderr
    data = tmp_path / "data"
    data.mkdir()
    np.ones(5 * 7, np.float32).tofile(data / "a.bin")
    np.ones(7 * 3, np.float32).tofile(data / "b.bin")
    (data / "c.out.bin").mkdir()  # where the output goes: a folder, not writable as a file
    done = subprocess.run([str(driver), "matmul", str(data), *sizes], capture_output=True,
                          text=True, check=False, timeout=120)
    assert done.returncode == 1 and "cannot write" in done.stderr, done.stderr


@pytest.fixture(scope="module")
def matmul_driver(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example driver of matmul perfect at fermi, built once for the tests above."""
    program = load_program(kernels_dir() / "matmul" / "perfect.mcpl", library=library())
    generated = pipeline.generate(pipeline.checked(program, library()), "fermi", library())
    return _build(generated, tmp_path_factory.mktemp("strict-driver"))
