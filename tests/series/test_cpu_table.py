"""benchmarks/cpu_table.py: the CPU table of docs/performance.md (and of the log,
docs/performance-log.md) is the one the script makes from the raw results it names (so
nobody edits the figures by hand)."""

from __future__ import annotations

import json
import types
from pathlib import Path

from .series_support import benchmark_script

REPO = Path(__file__).resolve().parents[2]


def _script() -> types.ModuleType:
    return benchmark_script("cpu_table")


def test_the_document_holds_the_table_of_its_files() -> None:
    for name in ("performance.md", "performance-log.md"):  # the current page and the log
        document = (REPO / "docs" / name).read_text(encoding="utf-8")
        assert "<!-- cpu-table: " in document, name
        assert _script().refresh(document) == document, name


def test_each_row_is_a_share_of_numpy_in_the_same_run(tmp_path: Path, monkeypatch) -> None:
    script = _script()
    monkeypatch.setattr(script, "REPO", tmp_path)
    (tmp_path / "r.json").write_text(json.dumps({
        "size": 64, "device": "cpu X",
        "gflops": {"1": {"v1": 5.0, "numpy (OpenBLAS)": 20.0},
                   "2": {"v1": 9.0, "v2": 12.0, "numpy (OpenBLAS)": 24.0}},
        "load_average": {"1": [1.0, 2.0], "2": [2.0, 3.5]}}))
    rows = script.table(["r.json"]).splitlines()
    assert rows[0] == ("| device | size | threads | v1 | v2 | numpy (OpenBLAS)"
                       " | load average before, after |")
    assert rows[2] == "| cpu X | 64³ | 1 | 5.0 (25%) | - | 20.0 | 1.0, 2.0 |"
    assert rows[3] == "| cpu X | 64³ | 2 | 9.0 (38%) | 12.0 (50%) | 24.0 | 2.0, 3.5 |"
