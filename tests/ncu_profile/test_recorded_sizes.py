"""`mcl profile --counters` with a report recorded at other sizes than the run's: the
launch's grid tells, and one warning line with a hint says so (the comparison is still
printed); at the recorded sizes, nothing is said."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcl.cli import main
from mcl.profile.counters import ProfiledLaunch
from mcl.profile.prediction import Prediction
from mcl.profile.recorded_sizes import other_sizes

DATA = Path(__file__).parent / "data"
KERNELS = Path(__file__).resolve().parents[2] / "kernels"


def _profile(defines: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[dict, str]:
    assert main(["profile", str(KERNELS / "gesummv" / "hopper_v1.mcpl"), "--target", "hopper",
                 "--counters", str(DATA / "gesummv-hopper_v1.csv"), *defines,
                 "--format", "json"]) == 0
    out = capsys.readouterr()
    return json.loads(out.out), out.err


def test_counters_at_other_sizes_are_flagged(capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # the warning on one line
    document, err = _profile(["-D", "n=1000"], capsys)
    assert document["sizes"] == {"n": 1000}  # the comparison is still made
    lines = err.splitlines()
    assert lines[0].startswith("warning: --counters ") and lines[0].endswith(
        "[profile-counters-sizes]")
    assert "5 blocks, the kernel launches 125 at n=1000" in lines[0]
    assert lines[1].strip().startswith("= hint: give the sizes the report was recorded at")
    assert len(lines) == 2


def test_counters_at_the_recorded_sizes_say_nothing(capsys: pytest.CaptureFixture[str]
                                                    ) -> None:
    _, err = _profile([], capsys)  # the reference's n=37, as recorded
    assert err == ""


def test_only_a_report_of_one_launch_with_a_grid_is_judged() -> None:
    predicted = Prediction("f", grid_blocks=8)
    one = [ProfiledLaunch("k", {"launch__grid_size": 16.0})]
    assert other_sizes("r.csv", one, predicted, {"n": 4}) is not None
    assert other_sizes("r.csv", one * 2, predicted, {"n": 4}) is None  # two kernels
    assert other_sizes("r.csv", [ProfiledLaunch("k", {})], predicted, {"n": 4}) is None
    assert other_sizes("r.csv", one, Prediction("f"), {"n": 4}) is None
