"""`mcl run --backend openmp` and `mcl codegen --lang openmp` on the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcl.cli import main
from mcl.resources import kernels_dir

MATMUL_V4 = str(kernels_dir() / "matmul" / "x86_avx512_v4.mcpl")


def test_run_verifies_matmul_v4_at_sizes_that_divide_no_tile(
        capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["run", MATMUL_V4, "--target", "x86_avx512", "--backend", "openmp",
                   "--verify", "-D", "n=100", "-D", "m=77", "-D", "p=130"])
    out = capsys.readouterr().out
    assert status == 0
    assert "(OpenMP, " in out and "C with OpenMP x86_avx512" in out
    assert "all 1 outputs match the numpy reference" in out


def test_run_json_names_the_backend(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["run", MATMUL_V4, "--target", "x86_avx512", "--backend", "openmp",
                   "--verify", "--format", "json"])
    document = json.loads(capsys.readouterr().out)
    assert status == 0 and document["executor"] == "openmp" and document["verified"]


@pytest.mark.usefixtures("whole_lines")  # reads a message from one line
def test_a_gpu_leaf_is_refused_with_the_reason(capsys: pytest.CaptureFixture[str]) -> None:
    hopper = str(kernels_dir() / "matmul" / "hopper_v1.mcpl")
    status = main(["run", hopper, "--target", "hopper", "--backend", "openmp", "--verify"])
    assert status != 0
    assert "generates C for CPU leaves" in capsys.readouterr().err


def test_codegen_writes_the_c_harness(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "matmul_c"
    status = main(["codegen", MATMUL_V4, "--target", "x86_avx512", "--lang", "openmp",
                   "--no-tuned", "-o", str(out)])
    assert status == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "CMakeLists.txt", "main.c", "matmul.c", "matmul.h", "matmul_host.c"]
    assert "#pragma omp parallel for" in (out / "matmul.c").read_text(encoding="utf-8")
    assert "cmake -S" in capsys.readouterr().out
