"""A user description with errors is reported at its own file:line:col by whichever command
meets it first, never as an unknown name; `mcl check X.hdl` checks a description."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl.cli import main
from mcl.resources import hwdescs_dir, kernels_dir

PERFECT = str(kernels_dir() / "matmul" / "perfect.mcpl")


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    """mycpu.hdl: the bundled cpu renamed, with a syntax error on line 13."""
    lines = (hwdescs_dir() / "cpu.hdl").read_text().splitlines()
    lines = [line.replace("hardware_description cpu;", "hardware_description mycpu;")
             for line in lines]
    lines[12] = "    this is broken"
    folder = tmp_path / "hwd"
    folder.mkdir()
    (folder / "mycpu.hdl").write_text("\n".join(lines) + "\n")
    return folder


def _first_error(err: str) -> str:
    assert "Traceback" not in err and "internal error" not in err
    return next(line for line in err.splitlines() if "error:" in line)


@pytest.mark.parametrize("argv", [
    ["check", PERFECT, "--level", "mycpu"],
    ["translate", PERFECT, "--to", "mycpu"],
    ["run", PERFECT, "--target", "mycpu"],
    ["codegen", PERFECT, "--target", "mycpu", "-o", "{tmp}/gen"],
    ["roofline", PERFECT, "--level", "mycpu"],
    ["hwd", "show", "mycpu"],
    ["hwd", "path", "perfect", "mycpu"],
])
def test_every_command_reports_the_description_error_where_it_is(
    argv: list[str], broken: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [a.replace("{tmp}", str(broken.parent)) for a in argv]
    assert main([*argv, "--hwd-path", str(broken)]) == 1
    err = capsys.readouterr().err
    assert _first_error(err).startswith(f"{broken / 'mycpu.hdl'}:13:10: error: syntax error")
    assert "unknown level" not in err and "did you mean" not in err


def test_a_kernel_written_for_a_broken_description(
    broken: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel = tmp_path / "k.mcpl"
    kernel.write_text(Path(PERFECT).read_text().replace("perfect void", "mycpu void"))
    assert main(["check", str(kernel), "--hwd-path", str(broken)]) == 1
    err = capsys.readouterr().err
    assert "hardware description 'mycpu' for function 'matmul' did not load" in err
    assert f"{broken / 'mycpu.hdl'}:13:10: error: syntax error" in err


def test_check_checks_a_description(broken: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(hwdescs_dir() / "fermi.hdl")]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "fermi.hdl: 0 errors, 0 warnings" and err == ""
    assert main(["check", str(broken / "mycpu.hdl")]) == 1
    out, err = capsys.readouterr()
    assert _first_error(err).startswith(f"{broken / 'mycpu.hdl'}:13:10: error:")
    assert "mcpl-syntax" not in err and out.strip() == "mycpu.hdl: 1 error, 0 warnings"


def test_check_of_a_missing_description(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                        ) -> None:
    assert main(["check", str(tmp_path / "gone.hdl")]) == 1
    assert "cannot read" in _first_error(capsys.readouterr().err)
