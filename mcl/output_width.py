"""How wide mcl's text output may be, and prose wrapped to that width: the one rule for
every command that prints text for people.

The width is `$COLUMNS` where it is set (a positive number), else the terminal's width
where the stream is a terminal, else 80 columns: a pipe, a file or a CI log gets lines a
person can read without scrolling sideways (rich's console takes the same rule for its
tables). One exception: a diagnostic's `file:line:col: severity: message` line is wrapped
only where the width is stated (`$COLUMNS` or a terminal, `width_is_stated`), so tools
reading a pipe get each diagnostic on one line. JSON and generated code never pass
through here; source lines quoted under a diagnostic are printed as they are
(mcl.styled's `Line.verbatim`), so their columns and the marker under them stay true.

Prose is broken at spaces, continued on lines indented a little more than the first
(a hanging indent), so that a `file:line:col: severity:` line still starts the message
and every continuation reads as part of it. A word longer than the width (a path, a
formula without spaces) is cut where it must be."""

from __future__ import annotations

import os
from typing import IO, TextIO

DEFAULT_WIDTH = 80  # a stream that is no terminal, without $COLUMNS
MIN_WIDTH = 20  # below this, wrapping would only make lines unreadable
HANGING_INDENT = 4  # continuation lines: this many columns past the first line's indent


def stated_columns() -> int | None:
    """The width `$COLUMNS` states (a positive number), else None."""
    columns = os.environ.get("COLUMNS", "").strip()
    return int(columns) if columns.isdigit() and int(columns) > 0 else None


def is_terminal(stream: IO[str] | None) -> bool:
    """Is `stream` a terminal (False for no stream, or one that cannot say)?"""
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def width_is_stated(stream: IO[str] | None) -> bool:
    """Did someone state the width of `stream`: `$COLUMNS`, or a terminal's own size? A
    diagnostic's first line is wrapped only then. In a pipe or a file without
    `$COLUMNS`, it stays one line however long, as GCC and Clang print theirs: editors'
    and CI's problem matchers read a diagnostic's message from its `file:line:col:` line."""
    return stated_columns() is not None or is_terminal(stream)


def output_width(stream: TextIO | None) -> int:
    """The width text for `stream` is wrapped to: `$COLUMNS`, else the terminal's width,
    else DEFAULT_WIDTH (never below MIN_WIDTH)."""
    columns = stated_columns()
    if columns is not None:
        return max(columns, MIN_WIDTH)
    try:
        terminal = os.get_terminal_size(stream.fileno()).columns \
            if stream is not None and is_terminal(stream) else 0
    except (AttributeError, ValueError, OSError):
        terminal = 0
    # a terminal that states no size (0 columns, as a bare pty may) counts as none
    return max(terminal, MIN_WIDTH) if terminal > 0 else DEFAULT_WIDTH


def cells(text: str) -> int:
    """Terminal cells `text` takes (a wide character takes two)."""
    if text.isascii():
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def wrap_points(text: str, width: int, hang: int | None = None, keep: int = 0
                ) -> list[tuple[int, int, int]]:
    """Where one row of prose (no line break, no tab) is cut to fit `width` cells: a list
    of (start, end, indent), each piece `text[start:end]` to be shown after `indent`
    spaces. The first piece keeps the text's own indent (its leading spaces); the others
    take the hanging indent (`hang` where given). Spaces at a cut are dropped. The first
    `keep` characters are never cut (a diagnostic's `file:line:col: severity:` prefix,
    which editors and CI read from one line); where they alone are wider than `width` (a
    deep checkout path), the row stays whole: no width can be met, and a tool reading the
    line gets the message with its place. The first row holds the first word after them
    too, even past the width: a message never starts below its `error:`, and a quoted
    name after a deep path is not cut."""
    if cells(text) <= width or cells(text[:keep]) > width:
        return [(0, len(text), 0)]
    if keep:
        after = text.find(" ", keep)
        keep = len(text) if after < 0 else after
    lead = len(text) - len(text.lstrip(" "))
    hang = min(lead + HANGING_INDENT if hang is None else hang, width // 2)
    pieces: list[tuple[int, int, int]] = []
    start, indent = 0, 0
    while True:
        room = width - indent
        if cells(text[start:]) <= room:
            pieces.append((start, len(text), indent))
            return pieces
        end = _fit(text, start, room)
        if not pieces and end < keep:
            end = keep
        floor = max(start + 1 + (lead if not pieces else 0), keep if not pieces else 0)
        cut = text.rfind(" ", floor, end + 1)
        if cut > start and text[start:cut].strip():
            end = cut
        pieces.append((start, end, indent))
        start = end
        while start < len(text) and text[start] == " ":
            start += 1
        if start >= len(text):
            return pieces
        indent = hang


def _fit(text: str, start: int, room: int) -> int:
    """The end of the longest piece of `text` from `start` that fits `room` cells (at
    least one character)."""
    end = min(len(text), start + room)
    while end > start + 1 and cells(text[start:end]) > room:
        end -= 1
    return end


def wrap_text(text: str, stream: TextIO | None, hang: int | None = None) -> str:
    """`text` (lines of prose) with every line wrapped to the width of `stream`."""
    width = output_width(stream)
    out = []
    for row in text.split("\n"):
        if "\t" in row:
            out.append(row)
            continue
        out.extend(" " * indent + row[a:b] for a, b, indent in wrap_points(row, width, hang))
    return "\n".join(out)


def say(text: str, *, file: TextIO | None = None, hang: int | None = None,
        flush: bool = False) -> None:
    """Print `text`, prose, wrapped to the width of `file` (stdout by default); `hang`
    sets the continuation lines' indent (a table's column) instead of the hanging one."""
    import sys

    stream = file if file is not None else sys.stdout
    stream.write(wrap_text(text, stream, hang=hang) + "\n")
    if flush:
        stream.flush()
