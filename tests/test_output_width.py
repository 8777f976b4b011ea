"""Text output fits the width a user expects when piped: $COLUMNS, else 80 columns
(mcl.output_width); quoted source lines and JSON are never wrapped."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mcl.output_width import DEFAULT_WIDTH, output_width, wrap_points, wrap_text
from mcl.styled import Line, PlainPrinter, RichPrinter

ROOT = Path(__file__).resolve().parents[1]
PROSE = ("approximation: the if/else at line 86 is not decided: counted as its larger "
         "branch, per kind of operation (an upper bound of either path)")


def test_width_is_columns_else_80_when_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    assert output_width(io.StringIO()) == DEFAULT_WIDTH == 80
    monkeypatch.setenv("COLUMNS", "132")
    assert output_width(io.StringIO()) == 132
    monkeypatch.setenv("COLUMNS", "wide")  # not a number: as if unset
    assert output_width(io.StringIO()) == 80


def test_prose_is_broken_at_spaces_with_a_hanging_indent() -> None:
    text = "  file.mcpl:86:13: warning: " + PROSE
    rows = [" " * indent + text[a:b] for a, b, indent in wrap_points(text, 40)]
    assert len(rows) > 2 and all(len(row) <= 40 for row in rows)
    assert rows[0].startswith("  file.mcpl:86:13: warning:")
    assert all(row.startswith("      ") and row[6] != " " for row in rows[1:])
    # nothing lost or added but the spaces at the cuts
    assert " ".join(row.strip() for row in rows) == text.strip()


def test_a_word_longer_than_the_width_is_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    rows = wrap_text("x = " + "a*b" * 40, io.StringIO()).splitlines()
    assert rows[0] == "x =" and all(len(row) == 80 for row in rows[1:-1])
    assert "".join(row.strip() for row in rows[1:]) == "a*b" * 40


def test_kept_prefix_is_never_cut_and_a_too_long_one_keeps_the_line_whole() -> None:
    line = Line("/deep/path/k.mcpl:3:12: error: ")
    line.keep = len(line.text)
    line.append("unknown variable 'undefined_name'")
    rows = line.wrapped(40)
    assert rows[0].text == "/deep/path/k.mcpl:3:12: error: unknown"
    assert rows[1].text.strip() == "variable 'undefined_name'"
    assert [row.text for row in line.wrapped(20)] == [line.text]  # prefix wider than 20
    # the first word of the message stays on the prefix's row, even past the width
    rows = line.wrapped(34)
    assert rows[0].text == "/deep/path/k.mcpl:3:12: error: unknown"
    assert rows[1].text.strip() == "variable 'undefined_name'"


def test_styles_follow_the_text_over_the_rows() -> None:
    line = Line("word " * 10 + "styled here", style="dim").append(" tail", style="bold")
    rows = line.wrapped(30)
    last = rows[-1]
    assert all(row.style == "dim" for row in rows)
    (a, b, style), = last.spans
    assert (last.text[a:b], style) == (" tail", "bold")


def test_verbatim_lines_and_lines_with_tabs_stay_whole() -> None:
    long = "x" * 200
    assert Line(long, verbatim=True).wrapped(80)[0].text == long
    joined = Line("  12 | ", verbatim=True) + Line(long)
    assert joined.wrapped(80) == [joined]
    assert Line("a\t" + "b " * 100).wrapped(80)[0].text.startswith("a\t")


@pytest.mark.parametrize("make", [
    lambda buffer: PlainPrinter(),
    lambda buffer: RichPrinter(__import__("rich.console").console.Console(
        file=buffer, width=50, no_color=True)),
])
def test_printers_wrap_to_the_width(make, monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", "50")
    buffer = io.StringIO()
    make(buffer).print(Line("  " + PROSE))
    out = buffer.getvalue() or capsys.readouterr().out
    assert len(out.splitlines()) > 2 and max(map(len, out.splitlines())) <= 50


def _mcl(*args: str, columns: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = columns
    return subprocess.run([sys.executable, "-m", "mcl", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=False, timeout=600)


@pytest.mark.parametrize("columns", [None, "60"])
def test_check_feedback_piped_fits_but_quoted_source_lines(columns: str | None) -> None:
    """The feedback of a kernel whose messages ran to 300 columns: every line fits, but
    the quoted source lines and their markers, which are shown as they are, and -- where
    no $COLUMNS states a width -- each message's `file:line:col:` line, kept whole for
    the tools that read a pipe."""
    out = _mcl("check", "--feedback", "-v", "kernels/matmul/hopper_v2.mcpl", columns=columns)
    assert out.returncode == 0, out.stderr
    width = int(columns or 80)
    lines = (out.stdout + out.stderr).splitlines()
    wide = [line for line in lines if len(line) > width]
    place = re.compile(r"\s*\S+:\d+:\d+: (warning|info|suggestion): .*")
    if columns is None:
        wide = [line for line in wide if not place.fullmatch(line)]
        heads = [line for line in lines if place.fullmatch(line)]
        assert any(len(line) > 2 * width for line in heads)  # kept whole, not wrapped
    # only quoted source lines, and a head whose place and first word are wider
    head = re.compile(r"\s*\S+: (warning|info|suggestion): \S+")
    assert all(" | " in line or head.fullmatch(line) for line in wide), wide
    assert sum(" | " not in line for line in wide) <= len(lines) // 10
    source = [line for line in lines if line.endswith("if (i < n && k < p) {")]
    assert source and all(line.split("| ", 1)[1].strip() == "if (i < n && k < p) {"
                          for line in source)


def test_a_diagnostic_stays_one_line_in_a_pipe_without_columns(tmp_path: Path) -> None:
    """As GCC and Clang print theirs: a problem matcher reads the whole message from the
    `file:line:col: error:` line; with $COLUMNS stated it is wrapped."""
    source = tmp_path / "undeclared.mcpl"
    source.write_text("perfect void f(int n, float[n] a) {\n"
                      "  foreach (int i in n threads) { a[i] = undeclared_name; }\n}\n")
    whole = _mcl("check", str(source), columns=None)
    narrow = _mcl("check", str(source), columns="30")
    first = [line for line in whole.stderr.splitlines() if ": error: " in line]
    assert whole.returncode == 1 and first, whole.stderr
    assert first[0].rstrip().endswith("]") and len(first[0]) > 30  # whole, with its [code]
    assert len(narrow.stderr.splitlines()) > len(whole.stderr.splitlines())


def test_json_is_never_wrapped() -> None:
    out = _mcl("check", "--feedback", "--format", "json", "kernels/matmul/hopper_v2.mcpl",
               columns="40")
    document = json.loads(out.stdout)
    assert any(len(line) > 40 for line in out.stdout.splitlines())
    assert document
