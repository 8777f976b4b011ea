"""`mcl codegen` and `mcl run --target`: files written, kernel time and rate reported,
device selection by spec, and clear errors (never a traceback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl import pipeline
from mcl.backends.opencl.runner import list_devices, select_device
from mcl.cli import main
from mcl.diagnostics import MclError
from mcl.mcpl.loader import load_program
from mcl.output_files import marker_line
from mcl.resources import kernels_dir

from .support import library

MATMUL = str(kernels_dir() / "matmul" / "perfect.mcpl")


def test_codegen_writes_kernels_and_harness(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "gen"
    assert main(["codegen", MATMUL, "--target", "fermi", "-o", str(out)]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(
        ["matmul.cl", "matmul.h", "matmul.cpp", "mcl_opencl.h", "main.cpp", "CMakeLists.txt"]
    )
    checked = pipeline.checked(load_program(MATMUL, library=library()), library())
    expected = pipeline.generate(checked, "fermi", library())
    # the file is the generated OpenCL after codegen's marker line (mcl.output_files)
    assert (out / "matmul.cl").read_text() == marker_line("matmul.cl") + expected.source
    assert "find_package(OpenCL REQUIRED)" in (out / "CMakeLists.txt").read_text()
    assert (
        "double matmul(Module& module, int n, int m, int p, float* c, const float* a, "
        "const float* b);" in (out / "matmul.h").read_text()
    )
    assert "generated 1 kernel(s) of matmul for fermi" in capsys.readouterr().out


def test_codegen_default_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["codegen", MATMUL, "--target", "x86_avx512"]) == 0
    assert (tmp_path / "matmul_x86_avx512" / "matmul.cl").is_file()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["codegen", MATMUL, "--target", "gpu"], "is not a leaf description"),
        (["codegen", MATMUL, "--target", "fermii"], "did you mean 'fermi'"),
        (
            ["run", MATMUL, "--target", "fermi", "--device", "no-such-device"],
            "no OpenCL device matches 'no-such-device'",
        ),
        (["run", MATMUL, "--target", "fermi", "--interp"], "choose one of --interp and --target"),
        (["run", MATMUL, "--target", "fermi", "--repeat", "0"], "--repeat needs a positive count"),
    ],
)
def test_errors_are_diagnostics(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert message in " ".join(err.split())
    assert "Traceback" not in err


def test_codegen_rejects_invalid_kernels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.mcpl"
    bad.write_text(
        "perfect void f(int n, main float[n] a) {\n"
        "  foreach (int i in n threads) { a[i] = b; }\n}\n"
    )
    assert main(["codegen", str(bad), "--target", "fermi", "-o", str(tmp_path / "o")]) == 1
    assert "bad.mcpl:2:" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_run_target_verifies_and_reports_gflops(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["run", MATMUL, "--target", "hopper", "-D", "n=33", "--verify", "--repeat", "2"]
    assert main(argv) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "matmul (hopper) on n=33 m=23 p=13: kernel time" in out
    assert "(median of 2)" in out and "GFLOP/s on" in out
    assert "all 1 outputs match the numpy reference" in out


def test_run_target_reports_bandwidth_without_verifying(capsys: pytest.CaptureFixture[str]) -> None:
    histogram = str(kernels_dir() / "histogram" / "perfect.mcpl")
    assert main(["run", histogram, "--target", "xeon_phi", "--device", "portable"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "GB/s" in out and "match" not in out


def test_device_specs() -> None:
    devices = list_devices()
    assert devices, "pocl-binary-distribution provides at least one device"
    default = select_device()
    assert "portable computing language" in default.platform.name.lower()
    first_info, first = devices[0]
    assert select_device(f"{first_info.platform_index}:{first_info.device_index}") == first
    assert select_device("0") == first
    assert select_device("CPU").type & first.type
    with pytest.raises(MclError) as exc:
        select_device("99:0")
    assert "devices: 0:0" in (exc.value.diagnostics[0].hint or "")


def test_device_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCL_DEVICE", "no-such-device")
    with pytest.raises(MclError):
        select_device()
    monkeypatch.setenv("MCL_DEVICE", "0")
    assert select_device() == list_devices()[0][1]


def test_auto_device_prefers_the_mappings_type() -> None:
    from mcl.backends.opencl.runner import device_kind

    assert device_kind(select_device("auto", "cpu").type) == "cpu"
    kinds = {info.kind for info, _ in list_devices()}
    chosen = select_device("auto", "gpu")  # fermi's preference
    if "gpu" in kinds:
        assert device_kind(chosen.type) == "gpu"
    else:  # no GPU: the default device
        assert chosen == select_device()
