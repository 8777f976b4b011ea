"""`-D` values are checked against the type of the parameter they are given for: an int
takes no fraction and nothing beyond 32 bits, a byte 0..255 (mcl.defines.type_problem)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl.cli import main
from mcl.defines import type_problem
from mcl.resources import kernels_dir

KERNEL = str(kernels_dir() / "matmul" / "x86_avx512_v3.mcpl")


@pytest.mark.parametrize(("value", "type_name", "fits"), [
    (2048, "int", True), (2048.5, "int", False), (2.0, "int", False),
    (2**31 - 1, "int", True), (2**31, "int", False), (-(2**31), "int", True),
    (-(2**31) - 1, "int", False), (255, "byte", True), (256, "byte", False),
    (-1, "byte", False), (1.5, "float", True), (10**39, "float", False),
    (10**39, "double", True), (10**400, "double", False),
])
def test_type_problem(value: int | float, type_name: str, fits: bool) -> None:
    assert (type_problem(value, type_name) is None) is fits


@pytest.mark.usefixtures("whole_lines")  # reads a message from one line
def test_a_fraction_for_an_int_parameter_is_an_error_at_the_parameter(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["check", KERNEL, "-D", "n=2048.5", "-D", "m=512", "-D", "p=512"]) == 1
    err = capsys.readouterr().err
    head = next(line for line in err.splitlines() if "error:" in line)
    assert head.startswith(f"{KERNEL}:38:24: error: -D n=2048.5: 'n' is an int parameter")
    assert "not a whole number" in head and "Traceback" not in err


@pytest.mark.usefixtures("whole_lines")  # reads a message from one line
def test_a_huge_value_is_reported_not_ignored(capsys: pytest.CaptureFixture[str]) -> None:
    huge = "9" * 35
    assert main(["check", KERNEL, "-D", f"n={huge}"]) == 1
    assert "outside the range of int" in capsys.readouterr().err
    assert main(["run", KERNEL, "--interp", "-D", f"n={huge}"]) == 1
    assert "a size is outside the range of int" in capsys.readouterr().err


def test_byte_and_float_parameters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = tmp_path / "k.mcpl"
    kernel.write_text("module k;\nperfect void k(int n, byte b, float s, float[n] a) {\n"
                      "    foreach (int i in n threads) { a[i] = s * toFloat(b); }\n}\n")
    assert main(["check", str(kernel), "-D", "n=8", "-D", "b=255", "-D", "s=1.5"]) == 0
    capsys.readouterr()
    assert main(["check", str(kernel), "-D", "n=8", "-D", "b=300"]) == 1
    assert "'b' is a byte parameter, and 300 is outside the range of byte" \
        in capsys.readouterr().err
