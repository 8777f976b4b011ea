"""Reading source files (MCPL kernels, hardware descriptions) as text.

Both front ends read their files here, so a missing file, a folder, or bytes that are not
UTF-8 give the same kind of diagnostic: the file name, and for undecodable bytes the line
and column where they stand (a byte offset means nothing to someone looking at an editor).
A UTF-8 byte order mark, which some Windows editors write, is skipped.

`SourcePositions` maps character offsets of a text to 1-based (line, column) and gives
the `Span` of a textX object; both grammars (mcl/hdl/syntax.py, mcl/mcpl/build.py) and
MCPL's syntax errors (mcl/mcpl/parse.py) use it, so a position means the same everywhere.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mcl.diagnostics import Diagnostic, MclError, Span, error

# Unsaved editor buffers (`mcl lsp`, docs/editor.md): resolved path -> text, read instead
# of the file on disk, so the editor's diagnostics describe what is on the screen.
_OVERLAYS: dict[str, str] = {}


def set_overlay(path: str | Path, text: str | None) -> None:
    """Read `text` for `path` from now on (None: read the file on disk again)."""
    key = str(Path(path).resolve())
    if text is None:
        _OVERLAYS.pop(key, None)
    else:
        _OVERLAYS[key] = text.replace("\r\n", "\n").replace("\r", "\n")


def overlays() -> dict[str, str]:
    """Every unsaved buffer: resolved path -> text (a copy)."""
    return dict(_OVERLAYS)


def replace_overlays(buffers: Iterable[tuple[str, str]]) -> None:
    """Read exactly `buffers` (path, text) from now on, and every other file from disk."""
    _OVERLAYS.clear()
    for path, text in buffers:
        set_overlay(path, text)


def overlay_text(path: str | Path) -> str | None:
    """The unsaved buffer standing in for `path`, if an editor holds one."""
    if not _OVERLAYS:
        return None
    try:
        return _OVERLAYS.get(str(Path(path).resolve()))
    except (OSError, RuntimeError, ValueError):
        return None


def read_source(path: str | Path, code: str) -> str:
    """The text of `path`; `MclError` with diagnostic code `code` when it cannot be read."""
    path = Path(path)
    buffer = overlay_text(path)
    if buffer is not None:
        return buffer
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise MclError(error(code, f"cannot read {path}: {exc.strerror or exc}")) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise MclError(_not_utf8(path, data, exc.start, code)) from None
    # Universal newlines, as `open()` in text mode: '\r\n' and a lone '\r' end a line, so
    # positions agree with every other reader of the file (the renderer, editors).
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _not_utf8(path: Path, data: bytes, offset: int, code: str) -> Diagnostic:
    line_start = data.rfind(b"\n", 0, offset) + 1
    line = data.count(b"\n", 0, offset) + 1
    column = len(data[line_start:offset].decode("utf-8-sig", errors="replace")) + 1
    return error(
        code,
        f"cannot read {path}: byte 0x{data[offset]:02x} is not UTF-8 text",
        Span.point(str(path), line, column),
        hint="save the file as UTF-8",
    )


# What separates tokens in MCPL and HDL: C's white space (C11 6.4), so a form feed or a
# vertical tab between two statements is a blank, as in the OpenCL C that mcl generates.
# Only '\n' ends a line (`source_lines`).
BLANKS = " \t\r\n\f\v"


def source_lines(text: str) -> list[str]:
    """The lines of `text` (read in text mode, so with '\\n' line ends) as the parsers number
    them. `str.splitlines` also splits at form feeds, '\\x1c'-'\\x1e', '\\x85' and U+2028,
    which would show the wrong line under a diagnostic."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


class SourcePositions:
    """The line starts of `text`, computed once; every lookup is a binary search."""

    def __init__(self, text: str, file: str):
        self.text = text
        self.file = file
        self.starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]

    def linecol(self, offset: int) -> tuple[int, int]:
        """The 1-based (line, column) of character `offset`."""
        line = bisect_right(self.starts, offset)
        return line, offset - self.starts[line - 1] + 1

    def offset(self, line: int, column: int) -> int:
        """The character offset of 1-based (line, column), clamped to the text."""
        if line > len(self.starts):
            return len(self.text)
        return min(self.starts[max(line, 1) - 1] + column - 1, len(self.text))

    def span(self, start: int, end: int) -> Span:
        """The span of characters start..end (exclusive), at least one character long."""
        line, col = self.linecol(start)
        end_line, end_col = self.linecol(max(end, start + 1))
        return Span(self.file, line, col, end_line, end_col)

    def span_of(self, obj: Any) -> Span:
        """The span of a textX model object."""
        return self.span(obj._tx_position, obj._tx_position_end)
