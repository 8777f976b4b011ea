"""Reading source files (MCPL kernels, hardware descriptions) as text.

Both front ends read their files here, so a missing file, a folder, or bytes that are not
UTF-8 give the same kind of diagnostic: the file name, and for undecodable bytes the line
and column where they stand (a byte offset means nothing to someone looking at an editor).
A UTF-8 byte order mark, which some Windows editors write, is skipped.
"""

from __future__ import annotations

from pathlib import Path

from mcl.diagnostics import Diagnostic, MclError, Span, error


def read_source(path: str | Path, code: str) -> str:
    """The text of `path`; `MclError` with diagnostic code `code` when it cannot be read."""
    path = Path(path)
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


def source_lines(text: str) -> list[str]:
    """The lines of `text` (read in text mode, so with '\\n' line ends) as the parsers number
    them. `str.splitlines` also splits at form feeds, '\\x1c'-'\\x1e', '\\x85' and U+2028,
    which would show the wrong line under a diagnostic."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines
