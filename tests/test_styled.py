"""The plain printer writes what rich's console writes where it shows no style (mcl.styled),
and a `Line` makes the `Text` the reports made with rich directly."""

from __future__ import annotations

import contextlib
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.text import Text

from mcl import styled
from mcl.styled import Line, PlainPrinter, RichPrinter

# Text a report may hold: tabs, the control characters rich removes, escapes, newlines,
# wide (CJK, emoji) and combining characters.
_CHARS = st.sampled_from(list("ab ~|^\t\n\r\x07\x08\x0b\x0c\x1bé中😀\u0301") + ["[bold]"])
_TEXT = st.lists(_CHARS, max_size=30).map("".join)
_STYLE = st.sampled_from([None, "bold", "dim", "bold red", "bold cyan"])
_PIECES = st.lists(st.tuples(_TEXT, _STYLE), min_size=1, max_size=4)


def _line_and_text(pieces: list[tuple[str, str | None]], joined: bool
                   ) -> tuple[Line, Text]:
    """The same line built both ways: `Line(a, s) + Line(b, t)` (or appended pieces) and
    the rich `Text` built the same way."""
    (first, style), rest = pieces[0], pieces[1:]
    line, text = Line(first, style), Text(first, style=style or "")
    for piece, piece_style in rest:
        if joined:
            line = line + Line(piece, piece_style)
            text = text + Text(piece, style=piece_style or "")
        else:
            line.append(piece, piece_style)
            text.append(piece, style=piece_style)
    return line, text


def _rich_output(*texts: Text | None) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, highlight=False, soft_wrap=True)
    for t in texts:
        console.print() if t is None else console.print(t)
    return buffer.getvalue()


@settings(max_examples=300, deadline=None)
@given(_PIECES, st.booleans())
def test_line_is_the_rich_text(pieces: list[tuple[str, str | None]], joined: bool) -> None:
    line, text = _line_and_text(pieces, joined)
    made = line.to_rich()
    assert made.plain == text.plain
    assert str(made.style) == str(text.style)
    assert [(s.start, s.end, str(s.style)) for s in made.spans] == \
        [(s.start, s.end, str(s.style)) for s in text.spans]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), _PIECES), min_size=1, max_size=4), st.booleans())
def test_plain_printer_writes_what_rich_writes(lines: list, joined: bool) -> None:
    made = [None if p is None else _line_and_text(p, joined) for p in lines]
    written = io.StringIO()
    with contextlib.redirect_stdout(written):
        printer = PlainPrinter()
        for pair in made:
            printer.print(None if pair is None else pair[0])
    assert written.getvalue() == _rich_output(*[None if p is None else p[1] for p in made])


def test_rich_printer_prints_whole_lines() -> None:
    buffer = io.StringIO()
    RichPrinter(Console(file=buffer, width=20)).print(Line("x" * 50 + "\tend", "bold"))
    assert buffer.getvalue() == "x" * 50 + "      end\n"


def test_plain_only_where_rich_would_show_no_style(monkeypatch: pytest.MonkeyPatch) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    assert styled.shows_no_style(io.StringIO())
    assert not styled.shows_no_style(Terminal())
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert not styled.shows_no_style(io.StringIO())
    monkeypatch.setattr(styled.sys, "stdout", io.StringIO())
    assert isinstance(styled.printer(), RichPrinter)
    monkeypatch.delenv("FORCE_COLOR")
    assert isinstance(styled.printer(), PlainPrinter)
    console = Console(file=io.StringIO())
    assert isinstance(styled.printer(console), RichPrinter)
    assert styled.printer(console).console is console  # type: ignore[union-attr]
