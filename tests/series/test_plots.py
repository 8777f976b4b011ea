"""Plots of the refinement (issue 17) rendered from recorded JSON documents and checked by
their structure — axes, labels, one point per version — never against golden pixels.

The documents were recorded from real runs: `mcl report kernels/matmul --run -D n=512 ...
--format json` on the PoCL CPU device, `mcl roofline ... --level hopper --format json`, and
benchmarks/results/*-h200-matmul-series-4096.json (benchmarks/matmul_series.py on an H200).
"""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

import jsonschema
import pytest

from mcl.cli import main
from mcl.diagnostics import MclError
from mcl.report.plots import roofline_figure, save, series_figure, series_points
from mcl.schemas import load_schema

DATA = Path(__file__).parent / "data"
BENCHMARK = Path(__file__).parents[2] / "benchmarks" / "results" / \
    "2026-11-21-h200-matmul-series-4096.json"


def load(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def gids(ax) -> list[str]:
    return [a.get_gid() for a in [*ax.lines, *ax.collections] if a.get_gid()]


def test_series_from_a_report_document(tmp_path: Path) -> None:
    doc = load("report-run-x86_avx512-512.json")
    jsonschema.validate(doc, load_schema("report"))
    fig = series_figure(doc)
    (ax,) = fig.axes
    measured_rows = [r for r in doc["rows"] if r["performance"]]
    (measured,) = [ln for ln in ax.lines if ln.get_gid() == "measured"]
    assert list(measured.get_ydata()) == [r["performance"]["rate"] for r in measured_rows]
    (roof,) = [ln for ln in ax.lines if ln.get_gid() == "roof"]
    assert list(roof.get_ydata()) == pytest.approx(
        [r["performance"]["roofline"]["attainable"] * 1e-9 for r in measured_rows])
    (peer,) = [g for g in gids(ax) if g.startswith("peer:")]
    assert peer == "peer:numpy a @ b (float32, OpenBLAS)"
    assert ax.get_ylabel() == "GFLOP/s" and ax.get_yscale() == "log"
    assert [t.get_text().split("\n")[0] for t in ax.get_xticklabels()] == \
        [r["name"] for r in measured_rows]
    out = save(fig, tmp_path / "series.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_series_from_a_benchmark_document_has_its_vendor_as_peer(tmp_path: Path) -> None:
    doc = json.loads(BENCHMARK.read_text())
    points, peers, unit = series_points(doc)
    assert [p.name for p in points] == [v["name"] for v in doc["versions"] if v["best_gflops"]]
    assert set(peers) == {"cuBLAS SGEMM (no TF32)"} and unit == "GFLOP/s"
    fig = series_figure(doc)
    assert "peer:cuBLAS SGEMM (no TF32)" in gids(fig.axes[0])
    assert "4096" in fig.axes[0].get_title()
    svg = save(fig, tmp_path / "series.svg")
    assert ElementTree.parse(svg).getroot().tag.endswith("svg")


def test_roofline_chart_has_one_point_per_version(tmp_path: Path) -> None:
    doc = load("roofline-hopper-4096.json")
    jsonschema.validate(doc, load_schema("roofline"))
    fig = roofline_figure(doc)
    (ax,) = fig.axes
    points = [g for g in gids(ax) if g.startswith("point:")]
    assert points == [f"point:{p['name']}" for p in doc["points"]]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert ax.get_xlabel().startswith("arithmetic intensity") and ax.get_ylabel() == "GFLOP/s"
    roofs = {g for g in gids(ax) if g.startswith("roof:")}
    assert roofs == {"roof:hopper:compute", "roof:hopper:global", "roof:hopper:shared"}
    # each point sits at its attainable performance, against its bounding level
    for p, collection in zip(doc["points"], [c for c in ax.collections if c.get_gid()],
                             strict=True):
        x, y = collection.get_offsets()[0]
        bound = next(lv for lv in p["levels"] if lv["space"] == p["bound"])
        assert (x, y) == pytest.approx((bound["intensity"], p["attainable"] * 1e-9))
    assert save(fig, tmp_path / "roof.png").stat().st_size > 0


def test_plot_needs_png_or_svg_and_something_to_draw(tmp_path: Path) -> None:
    with pytest.raises(MclError):
        save(series_figure(load("report-run-x86_avx512-512.json")), tmp_path / "x.jpg")
    with pytest.raises(MclError):
        series_figure({"rows": []})
    with pytest.raises(MclError):
        roofline_figure({"points": []})


def test_mcl_roofline_plots_each_version(tmp_path: Path, capsys) -> None:
    from mcl.resources import kernels_dir

    out = tmp_path / "roof.svg"
    matmul = kernels_dir() / "matmul"
    assert main(["roofline", str(matmul / "perfect.mcpl"), str(matmul / "hopper_v2.mcpl"),
                 "--level", "hopper", "-D", "n=256", "-D", "m=256", "-D", "p=256",
                 "--plot", str(out)]) == 0
    text = capsys.readouterr().out
    # the lower bound: a, b and c moved once leave the naive kernel bound by the peak
    assert "perfect at hopper" in text and "bound by the arithmetic peak (compute)" in text
    assert "hopper_v2 at hopper" in text and "bound by shared memory bandwidth" in text
    assert ElementTree.parse(out).getroot().tag.endswith("svg")
    assert main(["roofline", str(matmul / "perfect.mcpl"), "--plot", str(tmp_path / "x.pdf")]) == 1
    assert "plot-format" in capsys.readouterr().err
