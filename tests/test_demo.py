"""`mcl demo` is the README's main job: it must keep running end to end on the PoCL CPU
device, every step succeeding."""

from __future__ import annotations

import pytest

from mcl.cli import main


def test_demo_runs_every_step(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--size", "37"]) == 0
    out = capsys.readouterr().out
    for step in ("1. The hierarchy", "3. Outer process", "5. The refinement series",
                 "7. The refined CPU version"):
        assert step in out
    assert "nrThreadsM" in out  # the translated kernel of step 3 (paper Fig. 9)
    assert out.count("all 1 outputs match the numpy reference") == 2


def test_demo_reports_a_failing_step(capsys: pytest.CaptureFixture[str]) -> None:
    from mcl.commands import demo

    calls: list[list[str]] = []

    def fake_main(argv: list[str]) -> int:
        calls.append(argv)
        return 1 if argv[0] == "translate" else 0

    args = demo.build_args(["--no-run"])
    assert demo.run(args, fake_main) == 1
    assert [c[0] for c in calls] == ["hwd", "check", "translate", "check", "report"]
    assert "step 3" in capsys.readouterr().out
