"""The detected H100 written again from its recorded query and a recorded round of
benchmarks/hwd_detect_measure.py (benchmarks/hwd_detect_replay.py), and the validation's
`--analyse` at such a description (benchmarks/validate_feedback.py --target/--hwd-path)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from benchmarks import validate_feedback
from benchmarks.hwd_detect_replay import main, rounds
from mcl.hdl.library import library_with
from mcl.hdl.peak import bandwidth

REPO = Path(__file__).resolve().parents[2]
LOG = REPO / "benchmarks/results/2026-12-06-detect-h100-chase.txt"
QUERY = Path(__file__).parent / "data/h100_query.json"


def test_every_round_s_figures_are_read_back_in_base_units() -> None:
    found = rounds(LOG.read_text())
    assert len(found) == 2
    last = found[-1]
    assert last["copy"].value == pytest.approx(2873.05e9)
    assert last["copy"].median == pytest.approx(2840.04e9)
    assert last["copy"].runs == 5
    assert last["latency_memory"].value == pytest.approx(343.93e-9)
    assert last["launch"].value == pytest.approx(3.84e-6)
    assert last["launch"].runs == 21
    assert "4224 work-groups" in last["copy"].how


def test_a_unit_other_than_the_log_s_is_refused() -> None:
    with pytest.raises(ValueError, match="unit"):
        rounds("## round 1: x\ncopy  1.00 GFLOP/s  median 1.00, worst 1.00 (5 runs) | how\n")


def test_the_replayed_description_states_the_recorded_roofs(tmp_path: Path) -> None:
    assert main([str(LOG), "--query", str(QUERY), "-o", str(tmp_path), "--round", "2"]) == 0
    library = library_with([tmp_path])
    assert "measured" not in library.failed, library.failed.get("measured")
    assert library.parent("measured") == "hopper"
    memory = bandwidth(library.get("measured"), "global")
    assert memory is not None
    # The nominal rate (2,619 MHz x 5,120 bit x 2), above every rate measured; the
    # launch as hopper.hdl's, the OpenCL events' 9,761 cycles in its comment.
    assert memory.bytes_per_s == pytest.approx(3352.32e9, rel=1e-6)
    assert library.get("measured").device.values["latency"] \
        == library.get("hopper").device.values["latency"]
    assert (tmp_path / "measured_feedback.py").is_file()


def test_the_analysis_predicts_at_the_given_description(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[list[str], dict[str, str] | None]] = []

    def run(argv: list[str], **kw: object) -> subprocess.CompletedProcess:
        calls.append((argv, kw.get("env")))  # type: ignore[arg-type]
        return subprocess.CompletedProcess(argv, 0, json.dumps(
            {"figures": [], "per_line": [], "suggestions": []}), "")

    monkeypatch.setattr(validate_feedback.subprocess, "run", run)
    case = validate_feedback.Case("x-hopper_v1", tmp_path / "x.mcpl", {"n": 4})
    validate_feedback.analyse_case(tmp_path, tmp_path / "x-hopper_v1.csv", case,
                                   "measured", ("/d1", "/d2"))
    [(argv, env)] = calls
    assert argv[argv.index("--target") + 1] == "measured"
    assert env is not None and env["MCL_HWD_PATH"].split(":")[:2] == ["/d1", "/d2"]
    validate_feedback.analyse_case(tmp_path, tmp_path / "x-hopper_v1.csv", case)
    argv, env = calls[-1]
    assert argv[argv.index("--target") + 1] == "hopper"
