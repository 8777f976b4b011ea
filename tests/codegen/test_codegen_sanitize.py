"""The generated C++ harness under AddressSanitizer and UndefinedBehaviorSanitizer (issue
20): CMake option MCL_SANITIZE=ON; the matmul driver (fermi, whose sizes the tiles do not
divide) must build, run on PoCL, match numpy and print no sanitizer report."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from mcl import pipeline
from mcl.backends import emit_harness
from mcl.mcpl.loader import load_program
from mcl.resources import kernels_dir
from mcl.verify import expected_outputs, load_reference, make_inputs, verify

from .support import library
from .test_codegen_harness import _build

pytestmark = pytest.mark.sanitize


def test_cmake_offers_the_sanitize_option() -> None:
    program = load_program(kernels_dir() / "vectoradd" / "perfect.mcpl", library=library())
    checked = pipeline.checked(program, library())
    cmake = emit_harness(pipeline.generate(checked, "hopper", library())).files()["CMakeLists.txt"]
    assert 'option(MCL_SANITIZE "build with -fsanitize=address,undefined" OFF)' in cmake


def test_matmul_harness_is_clean_under_asan_and_ubsan(tmp_path: Path) -> None:
    folder = kernels_dir() / "matmul"
    program = load_program(folder / "perfect.mcpl", library=library())
    checked = pipeline.checked(program, library())
    driver = _build(pipeline.generate(checked, "fermi", library()), tmp_path,
                    ("-DMCL_SANITIZE=ON", "-DCMAKE_BUILD_TYPE=Debug"))
    linked = subprocess.run(["ldd", str(driver)], capture_output=True, text=True).stdout
    assert "libasan" in linked and "libubsan" in linked, linked
    ref = load_reference(folder / "reference.py")
    _, args = make_inputs(ref, {}, seed=5)
    data = tmp_path / "data"
    data.mkdir()
    scalars = []
    for name, value in args.items():
        if isinstance(value, np.ndarray):
            value.tofile(data / f"{name}.bin")
        else:
            scalars.append(f"{name}={value}")
    # Leaks inside the OpenCL runtime (PoCL, the ICD loader) are not the harness's; a
    # suppression keeps LeakSanitizer on for our code.
    suppressions = tmp_path / "lsan.supp"
    suppressions.write_text("leak:libpocl\nleak:libOpenCL\nleak:libLLVM\nleak:libclang\n")
    env = {**os.environ, "LSAN_OPTIONS": f"suppressions={suppressions}:print_suppressions=0",
           "ASAN_OPTIONS": "abort_on_error=0:halt_on_error=1",
           "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1"}
    done = subprocess.run([str(driver), "matmul", str(data), *scalars], capture_output=True,
                          text=True, check=False, timeout=600, env=env)
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    assert "Sanitizer" not in report and "runtime error" not in report, report
    results = {name: np.fromfile(data / f"{name}.out.bin", dtype=args[name].dtype).reshape(
        args[name].shape) for name in ref.outputs}
    assert all(c.ok for c in verify(ref, expected_outputs(ref, args), results, args))
