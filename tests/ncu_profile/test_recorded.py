"""Reports recorded by Nsight Compute 2025.3.1 on an H100 (`mcl profile --save-counters`,
at the references' small sizes): the raw page of every launch and the source page per
MCPL line, read as `mcl profile --counters` reads them."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from mcl.cli import main
from mcl.profile.counters import parse_raw_csv
from mcl.profile.source_lines import for_file, parse_source_csv
from mcl.schemas import load_schema

DATA = Path(__file__).parent / "data"
KERNELS = Path(__file__).resolve().parents[2] / "kernels"


def test_the_raw_page_of_a_real_report() -> None:
    [launch] = parse_raw_csv((DATA / "gesummv-hopper_v1.csv").read_text())
    assert launch.kernel == "gesummv"
    m = launch.metrics
    assert m["gpu__time_duration.sum"] > 0
    assert m["launch__block_size"] == 256 and m["launch__grid_size"] == 5  # n=37, 8 rows
    assert 0 < m["sm__warps_active.avg.pct_of_peak_sustained_active"] <= 100
    assert m["smsp__sass_inst_executed_op_local_ld.sum"] == 0


def test_source_lines_are_the_mcpl_lines_that_access_memory() -> None:
    # transpose's page keeps its machine-instruction rows: they are skipped
    text = (DATA / "transpose-perfect.source.csv").read_text()
    lines = for_file(parse_source_csv(text), "kernels/transpose/perfect.mcpl")
    source = (KERNELS / "transpose" / "perfect.mcpl").read_text().splitlines()
    accessing = [n for n, c in lines.items() if c.values.get("global_requests")]
    assert accessing == [5]
    assert "b[j, i] = a[i, j]" in source[5 - 1]
    # the store b[j, i]: consecutive threads (j) lie a row apart, more sectors than ideal
    c = lines[5]
    assert c.values["global_sectors"] > c.values["global_sectors_ideal"]
    assert parse_source_csv("") == {}


def profile(name: str, kernel: str, capsys: pytest.CaptureFixture[str]) -> dict:
    assert main(["profile", str(KERNELS / kernel), "--target", "hopper", "--counters",
                 str(DATA / f"{name}.csv"), "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    jsonschema.validate(document, load_schema("profile"))
    return document


def test_reduction_lines(capsys: pytest.CaptureFixture[str]) -> None:
    document = profile("reduction-gpu_v1", "reduction/gpu_v1.mcpl", capsys)
    rows = {(r["line"], r["kind"]): r for r in document["per_line"]}
    # the strided loop `for (k = t; k < chunk; k += BLOCK)` diverges at chunk = 37
    assert rows[(21, "divergence")]["measured"] == 28
    # the tree in shared memory: no bank conflicts measured, none predicted
    assert rows[(31, "bank-conflicts")]["measured"] == 1.0
    assert rows[(31, "bank-conflicts")]["ok"] is True
    assert document["sizes"] == {"n": 1000, "chunk": 37}


def test_gesummv_kernel_figures(capsys: pytest.CaptureFixture[str]) -> None:
    document = profile("gesummv-hopper_v1", "gesummv/hopper_v1.mcpl", capsys)
    figures = {f["kind"]: f for f in document["figures"]}
    n = document["sizes"]["n"]
    assert figures["dram-read"]["predicted"] == 4 * (2 * n * n + n)
    assert figures["occupancy-theoretical"]["measured"] == 100.0
    assert figures["time-bound"]["ok"] is True  # the bound is below the measured time
    # ncu ran the SM at its base clock: the estimate is the model's at that clock
    [launch] = document["kernels"]
    clock = (launch["metrics"]["gpc__cycles_elapsed.max"]
             / (launch["metrics"]["gpu__time_duration.sum"] * 1e-9))
    assert document["sm_clock_hz"] == pytest.approx(clock) and 1.5e9 < clock < 1.7e9
    assert figures["time-estimate"]["note"] == f"at the measured SM clock, {clock / 1e9:.3g} GHz"
    lines = {r["line"] for r in document["per_line"]}
    assert {48, 49, 76} <= lines  # a[i, j], b[i, j], y[i]
