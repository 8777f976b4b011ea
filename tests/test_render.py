"""Rendering diagnostics: the marker stays under the offending text."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from mcl.diagnostics import Span, error
from mcl.render import render_diagnostics


def rendered(tmp_path: Path, source: str, span_of: str) -> list[str]:
    path = tmp_path / "k.mcpl"
    path.write_text(source)
    lines = source.split("\n")  # numbered as the parsers number them
    line_no = next(i for i, text in enumerate(lines, 1) if span_of in text)
    column = lines[line_no - 1].index(span_of) + 1
    console = Console(record=True, width=200, color_system=None)
    span = Span(str(path), line_no, column, line_no, column + len(span_of))
    render_diagnostics([error("x", "bad", span)], console)
    return console.export_text().splitlines()


def test_marker_sits_under_the_text_on_a_line_with_tabs(tmp_path: Path) -> None:
    # Spans count a tab as one column; the marker used to be placed by that count while
    # the terminal expanded the tabs, so it pointed left of the offending text.
    lines = rendered(tmp_path, "f() {\n\tx =\tbad_name;\n}\n", "bad_name")
    shown, marker = lines[1], lines[2]
    assert "\t" not in shown
    start = marker.index("^")
    assert shown[start : start + len("bad_name")] == "bad_name"
    assert marker[start:].rstrip() == "^" + "~" * (len("bad_name") - 1)


def test_marker_without_tabs_is_unchanged(tmp_path: Path) -> None:
    lines = rendered(tmp_path, "f() {\n    x = bad;\n}\n", "bad")
    assert lines[2].index("^") == lines[1].index("bad")


def test_marker_counts_wide_characters_as_two_cells(tmp_path: Path) -> None:
    from rich.cells import cell_len

    lines = rendered(tmp_path, "f() {\n  /* 日本語 */ x = bad;\n}\n", "bad")
    shown, marker = lines[1], lines[2]
    start = marker.index("^")
    assert start == cell_len(shown[: shown.index("bad")])


def test_the_shown_line_is_the_parsers_line_despite_form_feeds_and_carriage_returns(
    tmp_path: Path,
) -> None:
    # str.splitlines also breaks at '\f' (a page break in old C sources) and '\x1c', so the
    # line shown under a diagnostic used to be the wrong one after such a character.
    lines = rendered(tmp_path, "f() {\n  // page\fbreak \x1c here\r\n  x = bad;\n}\n", "bad")
    assert lines[1].endswith("x = bad;")
    assert lines[2].index("^") == lines[1].index("bad")


def test_source_lines_split_where_the_parsers_count_lines() -> None:
    from mcl.source_files import source_lines

    assert source_lines("a\nb\fc\x1cd\u2028e\n\nf") == ["a", "b\fc\x1cd\u2028e", "", "f"]
    assert source_lines("a\n") == ["a"] and source_lines("") == []


@pytest.mark.parametrize("columns", ["40", "200"])
@pytest.mark.parametrize("command", [["check"], ["run", "--interp"]])
def test_error_line_is_whole_when_piped_with_narrow_columns_and_a_long_path(
    tmp_path: Path, columns: str, command: list[str]
) -> None:
    # Issue 19: with stderr piped, rich wrapped at 80 columns (or $COLUMNS), so the
    # `file:line:col: error:` line broke in two depending on the checkout path length.
    folder = tmp_path / ("d" * max(1, 200 - len(str(tmp_path)) - len("/k.mcpl") - 1))
    folder.mkdir()
    kernel = folder / "k.mcpl"
    kernel.write_text(
        "perfect void k(int n, main float[n] a) {\n"
        "  foreach (int i in n threads) {\n"
        "    a[i] = undefined_name;\n"
        "  }\n"
        "}\n"
    )
    assert len(str(kernel)) >= 200
    env = {**os.environ, "COLUMNS": columns}
    out = subprocess.run(
        [sys.executable, "-m", "mcl", command[0], str(kernel), *command[1:]],
        capture_output=True, text=True, env=env, check=False,
    )
    assert out.returncode == 1
    head = f"{kernel}:3:12: error: "
    lines = [line for line in out.stderr.splitlines() if line.startswith(head)]
    assert len(lines) == 1, out.stderr
    assert "undefined_name" in lines[0]
    assert "Traceback" not in out.stderr
