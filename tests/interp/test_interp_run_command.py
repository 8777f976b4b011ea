"""`mcl run FILE --interp`: inputs from the folder's reference, a comparison table, exit
status 0 on a match and 1 otherwise — and diagnostics, not tracebacks, for bad input."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mcl.cli import main
from mcl.resources import kernels_dir

MATMUL = kernels_dir() / "matmul" / "perfect.mcpl"


def test_matching_kernel_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(MATMUL), "--interp", "-D", "n=13", "-D", "m=37"]) == 0
    out = capsys.readouterr().out
    assert "n=13 m=37 p=13" in out
    assert "OK" in out and "FAIL" not in out


def test_gpu_kernel_with_barriers(capsys: pytest.CaptureFixture[str]) -> None:
    path = kernels_dir() / "reduction" / "gpu_v1.mcpl"
    assert main(["run", str(path), "--interp", "-D", "chunk=37", "--seed", "3"]) == 0
    assert "reduction (gpu)" in capsys.readouterr().out


def test_translated_kernel_runs_with_level(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(MATMUL), "--interp", "--level", "fermi", "-D", "m=37"]) == 0
    assert "matmul (fermi)" in capsys.readouterr().out


def _copy_kernel(tmp_path: Path, edit: tuple[str, str]) -> Path:
    folder = tmp_path / "matmul"
    folder.mkdir()
    shutil.copy(kernels_dir() / "matmul" / "reference.py", folder / "reference.py")
    kernel = folder / "perfect.mcpl"
    kernel.write_text(MATMUL.read_text().replace(*edit))
    return kernel


def test_mismatch_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = _copy_kernel(tmp_path, ("c[i, j] = sum;", "c[i, j] = sum * 1.01;"))
    assert main(["run", str(kernel), "--interp"]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "differ" in out


def test_reference_override(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = tmp_path / "mm.mcpl"
    kernel.write_text(MATMUL.read_text())
    assert main(["run", str(kernel), "--interp"]) == 1  # no reference.py beside it
    assert "no numpy reference" in capsys.readouterr().err
    ref = str(kernels_dir() / "matmul" / "reference.py")
    assert main(["run", str(kernel), "--interp", "--reference", ref]) == 0


def test_runtime_error_is_a_diagnostic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel = _copy_kernel(tmp_path, ("k < p;", "k <= p;"))
    assert main(["run", str(kernel), "--interp"]) == 1
    err = capsys.readouterr().err
    lines = kernel.read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "a[i, k]" in text)
    column = lines[line - 1].index("a[i, k]") + 1
    assert f"{kernel}:{line}:{column}: error: index 13 is out of bounds" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-D", "q=3"], "'q' is not a size of this kernel"),
        (["-D", "n=x"], "the value of 'n' is not a number"),
        (["-D", "n=2.5"], "a size is an integer, not 2.5"),
        (["-D", "n"], "cannot read value definition 'n'"),
        (["--function", "nope"], "defines no function 'nope'"),
        (["--seed", "-1"], "the seed cannot be negative"),
        (["--reference", "/nonexistent/reference.py"], "no numpy reference"),
        ([], None),
    ],
)
def test_bad_options(
    argv: list[str], message: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    interp = [] if message is None else ["--interp"]
    assert main(["run", str(MATMUL), *interp, *argv]) == 1
    err = capsys.readouterr().err
    assert (message or "--interp") in err
    assert "Traceback" not in err
