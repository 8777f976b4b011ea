"""`mcl demo` is the README's main job: it must keep running end to end on the PoCL CPU
device, every step succeeding, and read well in an 80-120 column terminal (issue 19: it
used to print about 900 lines, most of them the refinement table wrapped at 80 columns)."""

from __future__ import annotations

import pytest

from mcl.cli import main
from mcl.diagnostics import MclError, error
from mcl.report import load_series
from mcl.resources import kernels_dir


@pytest.mark.parametrize("columns", [80, 120])
def test_demo_runs_every_step_compactly(
    columns: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(["demo", "--size", "37"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    for step in ("1. The hierarchy", "3. Outer process", "5. The refinement series",
                 "7. The refined CPU version"):
        assert step in out
    assert "nrThreadsM" in out  # the translated kernel of step 3 (paper Fig. 9)
    # Step 4: the two suggestions of Table II's gpu row, with their hints (wrapped).
    words = " ".join(out.split())
    assert "local memory can be leveraged" in words
    assert "more than one element of c per thread" in words
    assert out.count("hint:") == 2
    # Step 5: one line per version of the series, not the whole table.
    table = out.split("5. The refinement series")[1].split("6. OpenCL")[0].splitlines()
    for version in load_series(kernels_dir() / "matmul").names():
        assert sum(line.startswith(version + " ") for line in table) == 1, version
    assert len(table) < 40
    assert out.count("all 1 outputs match the numpy reference") == 2
    # Readable: short (apart from step 5's line per version, which grows with the series),
    # and nothing wider than the terminal but commands, code and the timing line of `mcl
    # run`, which are shown as they would be typed or printed.
    assert len(lines) - len(load_series(kernels_dir() / "matmul").names()) < 125
    code = out.split("3. Outer process")[1].split("4. Inner process")[0].splitlines()
    too_wide = [line for line in lines
                if len(line.rstrip()) > columns and not line.startswith(("$ mcl", "matmul ("))
                and line not in code]
    assert too_wide == []


def test_demo_reports_failing_steps(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcl.commands import demo

    calls: list[list[str]] = []

    def fake_main(argv: list[str]) -> int:
        calls.append(argv)
        return 1 if argv[0] == "translate" else 0

    def broken_rows(*args: object, **kwargs: object) -> list[object]:
        raise MclError(error("x", "the analysis broke"))

    monkeypatch.setattr("mcl.report.build_rows", broken_rows)
    assert demo.run(demo.build_args(["--no-run"]), fake_main) == 1
    assert [c[0] for c in calls] == ["hwd", "translate"]  # the others show key messages
    out = capsys.readouterr().out
    for number in (2, 3, 4, 5):
        assert f"step {number} (" in out
    assert "step 1 (" not in out
    assert "the analysis broke" in out
