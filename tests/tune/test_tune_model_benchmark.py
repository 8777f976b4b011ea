"""benchmarks/tune_model.py on PoCL, one small space: the four strategies run against one
exhaustive measurement and the table and JSON say how many evaluations each needed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcl.resources import kernels_dir

pytest.importorskip("kernel_tuner")

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_benchmark_compares_the_strategies_on_one_space(tmp_path: Path) -> None:
    # In a process of its own, as a user runs it: Kernel Tuner's strategies and the
    # model's forked ranking must not share the test runner's threads.
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "tune_model.py"), "--small", "--kernels",
         "blackscholes/hopper_v2", "--repeats", "2", "--iterations", "2", "--out", str(out)],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True,
        text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    (result,) = json.loads((out / "tune_model.json").read_text(encoding="utf-8"))
    assert result["problem"] is None
    # NR_WARPS (4, 8, 16) x GROUPS (1, 2, 4): every one allowed, measured, verified.
    assert result["configurations"] == result["allowed"] == result["verified"] == 9
    assert len(result["times_ms"]) == 9 and min(result["times_ms"].values()) == \
        result["best_ms"]
    model = result["model"]
    assert model["estimated"] == 9 and 1 <= model["measured"] <= 9
    assert 1 <= model["evaluations_to_within_3pct"] <= model["measured"]
    assert model["chosen_within_3pct"] and model["pairs_all"] == 9
    assert -1.0 <= model["rank_correlation_all"] <= 1.0
    for strategy in ("bayes_opt", "random_sample"):
        runs = result["others"][strategy]
        assert [r["seed"] for r in runs] == [0, 1] and all("error" not in r for r in runs)
        assert all(1 <= r["evaluations_to_within_3pct"] <= 9 for r in runs)
    text = (out / "tune_model.txt").read_text(encoding="utf-8")
    assert "blackscholes/hopper_v2 | 9 |" in text
    # Kernel Tuner's cache of the run lies under --out, not beside the shipped kernel.
    assert list((out / "work").rglob("*.tune-cache/*.json"))
    assert not (kernels_dir() / "blackscholes" / ".hopper_v2.tune-cache").exists()
