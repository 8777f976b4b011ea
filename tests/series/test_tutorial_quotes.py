"""The figures docs/tutorial.md quotes in its prose are what `mcl check` prints today:
a test fails when a quoted figure drifts (the tutorial once quoted intensities 0.49 and
0.86 that the tool had stopped printing)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mcl.cli import main
from mcl.resources import kernels_dir

TUTORIAL = Path(__file__).resolve().parents[2] / "docs" / "tutorial.md"
SIZES = ["-D", "n=2048", "-D", "m=2048", "-D", "p=2048"]


@pytest.mark.parametrize("version", ["v2", "v3"])
def test_the_quoted_intensity_is_what_check_prints(
    version: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCL_FEEDBACK_BUDGET", "60")  # no approximation on a slow machine
    prose = " ".join(TUTORIAL.read_text(encoding="utf-8").split())
    quoted = re.search(rf'for {version} "(arithmetic intensity [\d.]+ instructions per '
                       r'access)"', prose)
    assert quoted, f"docs/tutorial.md no longer quotes x86_avx512_{version}'s intensity"
    kernel = str(kernels_dir() / "matmul" / f"x86_avx512_{version}.mcpl")
    assert main(["check", kernel, *SIZES]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert quoted.group(1) in printed, (
        f"docs/tutorial.md quotes '{quoted.group(1)}' but `mcl check {kernel} "
        "-D n=2048 -D m=2048 -D p=2048` prints otherwise: update the tutorial")
