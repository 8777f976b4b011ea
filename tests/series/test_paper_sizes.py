"""benchmarks/paper_sizes.py runs every shipped kernel, verified, with its rate and its
share of the copy bandwidth measured in the same run (small sizes on the PoCL CPU)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _script():
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from benchmarks import paper_sizes

    return paper_sizes


def test_small_run_verifies_and_compares_with_the_copy_bandwidth(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    rc = _script().main(["--small", "--rounds", "2", "--only", "reduction,spmv,transpose",
                         "--json", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "copy bandwidth" in text and "spmv (powerlaw)" in text
    data = json.loads(out.read_text())
    assert data["copy_bandwidth_gb_s"] > 0
    rows = {r["application"]: r for r in data["rows"]}
    assert set(rows) == {"reduction", "spmv", "spmv (powerlaw)", "transpose"}
    assert all(r["verified"] and len(r["times"]) == 2 for r in rows.values())
    assert rows["transpose"]["ratio"] == 0  # exact
    assert 0 < rows["spmv"]["ratio"] <= 1
    # bytes_moved over the best time, as a share of the copy bandwidth
    r = rows["reduction"]
    assert r["percent_of_copy"] == pytest.approx(
        r["rate"] / data["copy_bandwidth_gb_s"] * 100, rel=1e-6)


def test_paper_sizes_cover_every_kernel_and_gpu_versions() -> None:
    script = _script()
    from mcl.hdl.library import default_library

    apps = {app for app, _, _ in script.cases("gpu", small=False)}
    assert apps == {p.parent.name for p in (REPO / "kernels").glob("*/reference.py")}
    library = default_library()
    names = [p.name for p, _ in script.versions("reduction", "gpu", "hopper", library)]
    assert names == ["perfect.mcpl", "gpu_v1.mcpl"]
    names = [p.name for p, _ in script.versions("transpose", "gpu", "hopper", library)]
    assert names == ["perfect.mcpl", "gpu_v1.mcpl", "hopper_v1.mcpl"]
    assert [p.name for p, _ in script.versions("reduction", "cpu", "x86_avx512", library)] \
        == ["perfect.mcpl"]
