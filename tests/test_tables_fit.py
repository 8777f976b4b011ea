"""Every table of `report`, `report --run`, `run`, `hwd show` and `tune` goes through
mcl.tables.print_table; rendered at 80 and 120 columns no cell is cut: every cell's text
is there in full (as a table column or as a per-row block), no line is wider than the
console and nothing ends in an ellipsis. `check` prints no table: its lines are whole."""

from __future__ import annotations

import copy
import io
import re
from typing import Any

import pytest
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table

import mcl.tables
from mcl.cli import main
from mcl.resources import kernels_dir

WIDTHS = (80, 120)
PRINT_TABLE = mcl.tables.print_table  # before the fixture replaces it
_SPACE = re.compile(r"\s+")


def _compact(text: str) -> str:
    return _SPACE.sub("", text)


@pytest.fixture
def printed(monkeypatch: pytest.MonkeyPatch) -> list[Table]:
    """The tables the command hands to print_table (copies, before it changes them)."""
    tables: list[Table] = []
    def recording(console: Console, table: Table) -> None:
        tables.append(copy.deepcopy(table))
        PRINT_TABLE(console, table)

    for module in ("mcl.tables", "mcl.report.render", "mcl.commands.hwd"):
        monkeypatch.setattr(f"{module}.print_table", recording)
    return tables


def _render(table: Table, width: int) -> str:
    buffer = io.StringIO()
    PRINT_TABLE(Console(file=buffer, width=width, color_system=None,
                                   force_terminal=False), copy.deepcopy(table))
    return buffer.getvalue()


def _columns(text: str, count: int) -> list[str]:
    """The text of each column of a rendered rich table, lines joined, spaces removed."""
    columns = [""] * count
    for line in text.splitlines():
        parts = re.split("[│┃]", line)
        if len(parts) == count + 2:  # with edges
            parts = parts[1:-1]
        if len(parts) == count:
            columns = [c + _compact(p) for c, p in zip(columns, parts, strict=True)]
    return columns


def assert_nothing_cut(table: Table) -> None:
    rows = mcl.tables.cells(table)
    assert rows, "a table with no rows tests nothing"
    for width in WIDTHS:
        text = _render(table, width)
        assert "…" not in text
        assert max(cell_len(line) for line in text.splitlines()) <= width
        if mcl.tables.fits(table, width):
            columns = _columns(text, len(table.columns))
            for row in rows:
                for i, cell in enumerate(row):
                    assert _compact(cell) in columns[i], (width, cell)
        else:
            whole = _compact(text)
            for row in rows:
                for cell in row:
                    assert _compact(cell) in whole, (width, cell)


def test_report_table(printed: list[Table], capsys: pytest.CaptureFixture[str]) -> None:
    folder = str(kernels_dir() / "matmul")
    assert main(["report", folder, "--versions", "x86_avx512_v2,gpu_v1", "-D", "n=1000"]) == 0
    (table,) = printed
    assert len(table.columns) == 4
    assert_nothing_cut(table)
    # at 80 columns the report is one block per version, every change in full
    text = _render(table, 80)
    assert "version: x86_avx512_v2" in text and "(auto-transla…" not in text


def test_report_run_table(printed: list[Table], capsys: pytest.CaptureFixture[str],
                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The measurement itself is replaced (an OpenCL build takes minutes on a loaded
    machine); the table is the one `report --run` prints, performance column included."""
    from mcl.report import measure

    def measured(program: Any, function: str, leaf: str, *args: Any, **kw: Any) -> Any:
        return measure.Measurement(leaf, "PoCL", 0.00123, 4.26, "GFLOP/s", True)

    monkeypatch.setattr(measure, "measure_program", measured)
    folder = str(kernels_dir() / "gesummv")
    assert main(["report", folder, "--run", "--versions", "x86_avx512_v1", "-D", "n=64",
                 "--repeat", "1"]) == 0
    (table,) = printed
    assert [str(c.header) for c in table.columns][-1] == "performance"
    assert any("4.26 GFLOP/s" in row[-1] for row in mcl.tables.cells(table))
    assert_nothing_cut(table)


def test_run_table(printed: list[Table], capsys: pytest.CaptureFixture[str]) -> None:
    kernel = str(kernels_dir() / "matmul" / "x86_avx512_v3.mcpl")
    assert main(["run", kernel, "--interp", "-D", "n=9", "-D", "m=7", "-D", "p=5"]) == 0
    (table,) = printed
    assert_nothing_cut(table)
    # the run table fits 80 columns as a table, its headers wrapped at spaces only
    assert mcl.tables.fits(table, 80)
    assert "err/bound" in _render(table, 80)


@pytest.mark.parametrize("name", ["fermi", "hopper", "x86_avx512", "xeon_phi"])
def test_hwd_show_tables(name: str, printed: list[Table],
                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hwd", "show", name]) == 0
    assert len(printed) == 2
    for table in printed:
        assert_nothing_cut(table)


def test_check_lines_are_never_cut(capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = str(kernels_dir() / "matmul" / "gpu_v1.mcpl")
    for width in WIDTHS:
        monkeypatch.setenv("COLUMNS", str(width))
        main(["check", kernel, "--feedback", "-D", "n=1000", "-D", "m=1000", "-D", "p=1000"])
        out = capsys.readouterr().out
        assert "…" not in out and "ceiling(m/256)" in out


def test_block_layout_keeps_sections_and_multi_line_cells() -> None:
    table = Table(title="t")
    table.add_column("name")
    table.add_column("text")  # no readable min_width: 152 columns wide, so blocks at 80
    table.add_row("section", "")
    table.add_row("v1", "• " + "x" * 150 + "\n• second line")
    text = _render(table, 80)
    assert "── section ──" in text and "name: v1" in text
    assert _compact("x" * 150) in _compact(text) and "• second line" in text
