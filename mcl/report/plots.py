"""Pictures of the refinement, drawn with matplotlib (the optional extra `plot`)
from recorded JSON documents, so a plot can be redrawn from any saved run:

- `series_figure(doc)`: the series version by version — the measured rate of each version
  that ran, the roof (its attainable performance) as a line over the same versions, and
  the peers measured in the same run as horizontal lines. `doc` is a `mcl report --run
  --format json` document (mcl/schemas/report.schema.json) or the JSON of
  benchmarks/matmul_series.py (versions and vendors).
- `roofline_figure(doc)`: the roofline chart of a `mcl roofline --format json` document
  (mcl/schemas/roofline.schema.json): per level the compute roof and a slanted roof per
  memory level, and each version as one point at its intensity against the memory level
  that bounds it — at its measured performance when it ran, else at its attainable one.

`save(figure, path)` writes PNG or SVG by the file's suffix.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcl.diagnostics import MclError, error
from mcl.output_files import check_output_file, write_with

FORMATS = (".png", ".svg")
MEMORY_COLOURS = ("dimgray", "tab:olive", "tab:cyan", "tab:pink")


def _pyplot() -> Any:
    try:
        import matplotlib
    except ModuleNotFoundError as exc:
        raise MclError(error("plot-matplotlib", "plots need matplotlib",
                             hint="pip install 'mcl[plot]'")) from exc
    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt

    return plt


def check_plot_path(path: str) -> Path:
    """The output file of `--plot`, checked before any work is done: a format we can
    tell, in a folder we can write (mcl.output_files), and matplotlib there to draw it
    (`report --run --plot` measures every version first: minutes lost otherwise)."""
    out = Path(path)
    if out.suffix.lower() not in FORMATS:
        raise MclError(error("plot-format", f"--plot {path}: cannot tell the format",
                             hint="name a .png or .svg file"))
    _pyplot()
    return check_output_file(out, "--plot")


def save(figure: Any, path: str | Path) -> Path:
    out = check_plot_path(str(path))
    fmt = out.suffix.lower().lstrip(".")
    try:
        write_with(out, lambda temporary: figure.savefig(temporary, dpi=110,
                                                          bbox_inches="tight", format=fmt))
    finally:
        _pyplot().close(figure)
    return out


# ------------------------------------------------------------------------------- series


@dataclass(frozen=True)
class SeriesPoint:
    name: str
    rate: float  # measured, in `unit`
    roof: float | None  # attainable GFLOP/s, None without a peak at its leaf
    leaf: str


def series_points(doc: Mapping[str, Any]) -> tuple[list[SeriesPoint], dict[str, float], str]:
    """(the versions that ran, in order; the peers by name; the unit) of a report or
    matmul_series document."""
    points: list[SeriesPoint] = []
    peers: dict[str, float] = {}
    unit = "GFLOP/s"
    if "rows" in doc:  # mcl report --format json
        for row in doc["rows"]:
            perf = row.get("performance")
            if not perf or perf.get("rate") is None:
                continue
            unit = perf.get("unit") or unit
            roof = perf.get("roofline")
            points.append(SeriesPoint(row["name"], perf["rate"],
                                      roof["attainable"] * 1e-9 if roof else None, perf["leaf"]))
        peers = {name: p["rate"] for name, p in (doc.get("peers") or {}).items()
                 if p.get("rate") is not None}
    else:  # benchmarks/matmul_series.py --json
        for v in doc.get("versions", []):
            if v.get("best_gflops") is None:
                continue
            roof = v.get("roofline")
            points.append(SeriesPoint(v["name"], v["best_gflops"],
                                      roof["attainable"] * 1e-9 if roof else None,
                                      v.get("leaf", "")))
        peers = {name: p["best_gflops"] for name, p in doc.get("vendors", {}).items()
                 if p.get("best_gflops") is not None}
    return points, peers, unit


def series_figure(doc: Mapping[str, Any], title: str | None = None) -> Any:
    plt = _pyplot()
    points, peers, unit = series_points(doc)
    if not points:
        raise MclError(error("plot-nothing", "no version in the document has a measured rate",
                             hint="run the versions: mcl report DIR --run"))
    fig, ax = plt.subplots(figsize=(max(6.0, 0.8 * len(points) + 3), 4.5))
    xs = list(range(len(points)))
    ax.plot(xs, [p.rate for p in points], marker="o", linestyle="-", color="tab:blue",
            label="measured", gid="measured")
    roofs = [(x, p.roof) for x, p in zip(xs, points, strict=True) if p.roof is not None]
    if roofs:
        ax.plot([x for x, _ in roofs], [r for _, r in roofs], marker="_", markersize=18,
                linestyle=":", color="tab:red", label="roof (attainable)", gid="roof")
    colours = ("tab:green", "tab:purple", "tab:brown", "tab:gray")
    for i, (name, rate) in enumerate(peers.items()):
        ax.axhline(rate, linestyle="--", color=colours[i % len(colours)], label=name,
                   gid=f"peer:{name}")
    ax.set_yscale("log")
    ax.set_xticks(xs)
    ax.set_xticklabels([f"{p.name}\n({p.leaf})" if p.leaf else p.name for p in points],
                       rotation=30, ha="right", fontsize=8)
    ax.set_xlabel("version (leaf it ran from)")
    ax.set_ylabel(unit)
    ax.set_title(title or doc.get("title") or _benchmark_title(doc))
    ax.grid(True, which="both", axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def _benchmark_title(doc: Mapping[str, Any]) -> str:
    size = doc.get("size")
    return f"matmul series {size}³ on {doc.get('device', '?')}" if size else "series"


# ----------------------------------------------------------------------------- roofline


def roofline_figure(doc: Mapping[str, Any], title: str | None = None) -> Any:
    plt = _pyplot()
    points = doc.get("points", [])
    if not points:
        raise MclError(error("plot-nothing", "no version in the document has a roofline",
                             hint="choose a level with a peak (docs/hardware.md)"))
    points = [p for p in points if _numeric(p)]
    if not points:
        raise MclError(error("plot-no-sizes", "the chart needs numbers, and the figures of "
                             "these versions are symbolic in their sizes",
                             hint="give the sizes with -D, e.g. -D n=2048"))
    fig, ax = plt.subplots(figsize=(7.5, 5))
    xs = [lv["intensity"] for p in points for lv in p["levels"] if lv["intensity"]]
    lo, hi = min(xs + [1.0]) / 4, max(xs + [1.0]) * 4
    # The roofs of every level the versions were analysed at: its peak and the bandwidth
    # of each memory level any of its versions uses.
    roofs: dict[str, tuple[float, dict[str, float]]] = {}
    for p in points:
        peak, memories = roofs.setdefault(p["level"], (p["peak"] * 1e-9, {}))
        memories.update({lv["space"]: lv["bandwidth"] * 1e-9 for lv in p["levels"]})
    styles = ("-", "--", "-.", ":")
    for n, (level, (peak, memories)) in enumerate(roofs.items()):
        style = styles[n % len(styles)]
        ridges = [peak / bw for bw in memories.values() if bw]
        start = max(lo, min(ridges)) if ridges else lo
        ax.plot([start, hi], [peak, peak], color="black", linestyle=style, linewidth=1.2,
                label=f"{level} peak {peak:,.0f} GFLOP/s", gid=f"roof:{level}:compute")
        for k, (space, bw) in enumerate(memories.items()):
            grid = _geometric(lo, min(hi, peak / bw) if bw else hi)
            ax.plot(grid, [bw * x for x in grid], color=MEMORY_COLOURS[k % len(MEMORY_COLOURS)],
                    linestyle=style, linewidth=1,
                    label=f"{level} {space} {bw:,.0f} GB/s", gid=f"roof:{level}:{space}")
    markers = "osD^v<>ph*"
    for i, p in enumerate(points):
        x = _point_intensity(p)
        measured = p.get("measured")
        y = measured["rate"] * 1e-9 if measured else p["attainable"] * 1e-9
        ax.scatter([x], [y], marker=markers[i % len(markers)], s=50, zorder=3,
                   label=f"{p['name']} ({'measured' if measured else 'attainable'})",
                   gid=f"point:{p['name']}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (flop/byte) against the bounding memory level")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(title or doc.get("title") or "roofline")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    return fig


def _numeric(p: Mapping[str, Any]) -> bool:
    """Whether version `p` has a place on the chart: numeric intensities, and a measured
    or an attainable rate (without -D sizes they are symbolic: null in the document)."""
    rate = p.get("measured") or p.get("attainable") is not None
    return bool(rate) and all(lv["intensity"] is not None for lv in p["levels"])


def _point_intensity(p: Mapping[str, Any]) -> float:
    """Against the memory level whose roof is lowest (the outermost level when the kernel
    is bound by compute)."""
    by_space = {lv["space"]: lv for lv in p["levels"]}
    if p["bound"] in by_space:
        return by_space[p["bound"]]["intensity"]
    lowest = min(p["levels"], key=lambda lv: lv["bandwidth"] * lv["intensity"], default=None)
    return lowest["intensity"] if lowest else 1.0


def _geometric(lo: float, hi: float, n: int = 32) -> list[float]:
    if hi <= lo:
        return [lo, lo]
    step = (math.log(hi) - math.log(lo)) / (n - 1)
    return [math.exp(math.log(lo) + i * step) for i in range(n)]
