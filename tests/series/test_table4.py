"""benchmarks/table4.py: the GPU Table IV rows of docs/performance.md (and of the log,
docs/performance-log.md) are the ones the script makes from the applications.py results
it names (nobody edits the figures)."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest

from .series_support import benchmark_script

REPO = Path(__file__).resolve().parents[2]


def _script() -> types.ModuleType:
    return benchmark_script("table4")


def test_the_document_holds_the_table_of_its_files() -> None:
    for name in ("performance.md", "performance-log.md"):  # the current page and the log
        document = (REPO / "docs" / name).read_text(encoding="utf-8")
        assert "<!-- table4: " in document, name
        assert _script().refresh(document) == document, name


def _row(name: str, kind: str, times: list[float], verified: bool | None) -> dict:
    return {"name": name, "kind": kind, "leaf": "hopper", "times": times,
            "verified": verified, "problem": None, "error_ratio": 0.1, "backend": "opencl",
            "best_rate": None, "best_gbs": None, "median_rate": None}


def test_a_row_ranks_verified_versions_against_every_peer_of_the_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _script()
    monkeypatch.setattr(script, "REPO", tmp_path)
    (tmp_path / "r.json").write_text(json.dumps({
        "device": "GPU X", "copy_gbs": {"runs": [900.0, 1000.0], "best": 1000.0},
        "cases": [{"app": "copy", "inputs": "wide", "unit": "GB/s", "defines": {"n": 4096},
                   "work": {"bytes": 1e9},
                   "rows": [_row("perfect", "version", [0.004, 0.002], True),
                            _row("v2", "version", [0.0015], True),
                            _row("v3", "version", [0.001], False),  # wrong: not ranked
                            _row("lib", "peer", [0.003], True)]}]}))
    lines = script.table(["r.json"]).splitlines()
    assert lines[2] == ("| copy wide | n = 4,096 | GB/s | 500.0 | 666.7 (v2) | lib: 333.3 | "
                        "1.33x | 2.00x | 67% |")
    assert "`r.json` (GPU X, copy 1000.0 GB/s)" in lines[-1]


def test_a_run_through_both_backends_names_the_best_ones_and_compares_like_with_like(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _script()
    monkeypatch.setattr(script, "REPO", tmp_path)
    rows = [_row("perfect", "version", [0.004], True), _row("v2", "version", [0.002], True),
            _row("perfect", "version", [0.005], True), _row("v2", "version", [0.001], True),
            _row("lib", "peer", [0.003], True)]
    for r in rows[2:4]:
        r["backend"] = "cuda"
    (tmp_path / "r.json").write_text(json.dumps({
        "device": "GPU X", "copy_gbs": {"runs": [1000.0], "best": 1000.0},
        "cases": [{"app": "copy", "inputs": None, "unit": "GB/s", "defines": {"n": 4096},
                   "work": {"bytes": 1e9}, "rows": rows}]}))
    lines = script.table(["r.json"]).splitlines()
    # the best is v2 through CUDA, over perfect through CUDA (200), not OpenCL's (250)
    assert lines[2] == ("| copy | n = 4,096 | GB/s | 200.0 | 1000.0 (v2, CUDA) | lib: 333.3 | "
                        "5.00x | 3.00x | 100% |")
