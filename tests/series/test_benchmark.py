"""benchmarks/matmul_series.py runs versions and the vendor library in one run and prints
the ratios docs/performance.md asks for (a small size on the PoCL CPU device)."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest

from .series_support import benchmark_script


def _script() -> types.ModuleType:
    return benchmark_script("matmul_series")


def test_cpu_run_prints_versions_vendor_and_ratios(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "r.json"
    rc = _script().main(["--size", "70", "--rounds", "2", "--versions",
                         "perfect,x86_avx512_v2,fermi_v1,gpu", "--json", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "numpy (OpenBLAS)" in text and "vs perfect:" in text
    assert "vs numpy (OpenBLAS):" in text
    data = json.loads(out.read_text())
    by_name = {v["name"]: v for v in data["versions"]}
    assert by_name["perfect"]["leaf"] == "x86_avx512" and by_name["perfect"]["verified"]
    assert len(by_name["x86_avx512_v2"]["times"]) == 2
    assert by_name["fermi_v1"]["leaf"] == "fermi" and by_name["fermi_v1"]["verified"]
    assert "not a hand-written version" in by_name["gpu"]["problem"]
    assert data["vendors"]["numpy (OpenBLAS)"]["best_gflops"] > 0


def test_gpu_vendors_are_optional() -> None:
    """Without torch (this machine) cuBLAS is reported as not measured, not a crash."""
    import numpy as np

    result = _script().cublas_vendor(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32))
    assert isinstance(result, str) or callable(result)


def test_tuned_rows_use_the_tuned_constants(tmp_path: Path, capsys: pytest.CaptureFixture,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """--tuned adds "VERSION (tuned)" with the constants of its .tuned.toml (here a stand-in
    for the lookup, so the repository's kernels folder stays untouched)."""
    import mcl.report.measure as measure

    seen: list[str] = []

    def fake(program, leaf, device, args):  # noqa: ANN001, ANN202
        seen.append(leaf)
        return {"BLOCK_K": 64, "COLS": 64}

    monkeypatch.setattr(measure, "tuned_overrides", fake)
    out = tmp_path / "r.json"
    rc = _script().main(["--size", "70", "--rounds", "1", "--versions", "x86_avx512_v3",
                         "--tuned", "--json", str(out)])
    assert rc == 0 and seen == ["x86_avx512"]
    text = capsys.readouterr().out
    assert "x86_avx512_v3 (tuned): BLOCK_K = 64, COLS = 64" in text
    rows = {v["name"]: v for v in json.loads(out.read_text())["versions"]}
    assert rows["x86_avx512_v3 (tuned)"]["verified"] and rows["x86_avx512_v3"]["verified"]
    assert rows["x86_avx512_v3 (tuned)"]["constants"] == {"BLOCK_K": 64, "COLS": 64}
    # 70 rows / 96 per thread = 1, 70 columns / 64 per thread = 2 work-groups (tuned COLS).
    assert rows["x86_avx512_v3 (tuned)"]["launch"] == "2 x 1"
    assert rows["x86_avx512_v3"]["launch"] == "1 x 1"
