"""Lines of styled text for people's reports (diagnostics, feedback), printed through rich
where a style may show, and as plain text where rich would show none.

rich's console costs about 25 ms to import and set up, a twelfth of SymPy's import, so a
twelfth of the whole `mcl check --feedback` budget (docs/feedback.md, "Start-up"); a build
or an editor runs the check with its output going to a pipe or a file, where rich prints
no style anyway. A `Line` holds its text and styles as rich's `Text` holds them (a base
style and spans), so that `to_rich` gives the very `Text` the reports made before; a
printer for a stream that is no terminal writes `plain_text`, which is what rich's
console writes there. rich decides in more ways than a terminal test whether to style
(FORCE_COLOR, TTY_COMPATIBLE, TTY_INTERACTIVE, Jupyter): where any of them is present,
rich prints, as before. tests/test_styled.py holds the two ways of printing to the same
output on text with tabs, control characters and wide characters.

Both printers wrap a line's prose to the output's width (mcl.output_width); a `verbatim`
line (a quoted source line, the marker under it) is never wrapped.
"""

from __future__ import annotations

import builtins
import os
import sys
from typing import TYPE_CHECKING, Protocol, TextIO

from mcl.output_width import cells, output_width, width_is_stated, wrap_points

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

TAB_SIZE = 8  # rich's console: tab stops every 8 cells
# The control characters rich's `Text` removes from what it is given (rich.control).
_STRIPPED = str.maketrans("", "", "\x07\x08\x0b\x0c\x0d")
# Environment variables by which rich styles output that is no terminal.
_RICH_DECIDES = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")


class Line:
    """A line of text with a style for all of it and styled spans (rich's `Text`)."""

    __slots__ = ("keep", "spans", "style", "text", "verbatim")

    def __init__(self, text: str = "", style: str | None = None, *,
                 verbatim: bool = False) -> None:
        self.text = text.translate(_STRIPPED)
        self.style = style
        self.spans: list[tuple[int, int, str]] = []
        # Printed as it is, never wrapped: a quoted source line and the marker under it
        # (mcl.output_width).
        self.verbatim = verbatim
        # Characters at its start never cut by wrapping (a `file:line:col: severity:`).
        self.keep = 0

    def append(self, text: str, style: str | None = None) -> Line:
        # As rich's `Text.append`, spans and all (an empty one where only control
        # characters were given: it shows nothing either way).
        if text:
            text = text.translate(_STRIPPED)
            if style:
                self.spans.append((len(self.text), len(self.text) + len(text), style))
            self.text += text
        return self

    def __add__(self, other: Line) -> Line:
        # As rich's `Text + Text`: the left's style stays the style of the whole line, the
        # right's becomes a span over its text.
        joined = Line(verbatim=self.verbatim or other.verbatim)
        joined.text, joined.style, joined.spans = self.text, self.style, list(self.spans)
        joined.keep = self.keep
        if not other.text:
            return joined
        offset = len(self.text)
        if other.style:
            joined.spans.append((offset, offset + len(other.text), other.style))
        joined.spans += [(a + offset, b + offset, s) for a, b, s in other.spans]
        joined.text += other.text
        return joined

    def piece(self, start: int, end: int, indent: int) -> Line:
        """`text[start:end]` after `indent` spaces, with the style and the spans over it."""
        part = Line(" " * indent, verbatim=self.verbatim)
        part.style = self.style
        part.text += self.text[start:end]
        part.spans = [(max(a, start) - start + indent, min(b, end) - start + indent, s)
                      for a, b, s in self.spans if a < end and b > start]
        return part

    def wrapped(self, width: int, stated: bool = True) -> list[Line]:
        """The line as rows of at most `width` cells (mcl.output_width: prose broken at
        spaces with a hanging indent); a verbatim line, or one with a tab (whose stops
        would move), as it is; a diagnostic's line (one with a `keep` prefix) as it is
        where no one `stated` the width (`width_is_stated`)."""
        if self.verbatim or "\t" in self.text or cells(self.text) <= width \
                or (self.keep and not stated):
            return [self]
        rows: list[Line] = []
        offset = 0
        for row in self.text.split("\n"):
            keep = self.keep - offset if offset < self.keep else 0
            rows += [self.piece(offset + a, offset + b, indent)
                     for a, b, indent in wrap_points(row, width, keep=keep)]
            offset += len(row) + 1
        return rows

    def to_rich(self) -> Text:
        from rich.text import Span, Text

        return Text(self.text, style=self.style or "",
                    spans=[Span(a, b, s) for a, b, s in self.spans])


def plain_text(line: Line) -> str:
    """What rich's console writes for `line` (without its newline) where it shows no
    style and wraps nothing: each of its lines with the tabs expanded to stops every
    TAB_SIZE cells (a wide character takes two)."""
    if "\t" not in line.text:
        return line.text
    from rich.cells import cell_len

    out = []
    for row in line.text.split("\n"):
        parts = row.split("\t")
        expanded, cells = [], 0
        for part in parts[:-1]:
            cells += cell_len(part) + 1  # the tab itself becomes a space
            pad = -cells % TAB_SIZE
            expanded.append(part + " " * (1 + pad))
            cells += pad
        expanded.append(parts[-1])
        out.append("".join(expanded))
    return "\n".join(out)


class Printer(Protocol):
    def print(self, line: Line | None = None) -> None:
        """Print `line` and a newline (only the newline without one)."""


class PlainPrinter:
    """Lines as plain text on stdout or stderr (the stream of the moment, as rich's console
    takes it: a test may have replaced it), prose wrapped to the stream's width
    (mcl.output_width)."""

    def __init__(self, stderr: bool = False) -> None:
        self.stderr = stderr

    def print(self, line: Line | None = None) -> None:
        stream = sys.stderr if self.stderr else sys.stdout
        if line is None:
            stream.write("\n")
            return
        for row in line.wrapped(output_width(stream), width_is_stated(stream)):
            stream.write(plain_text(row) + "\n")


class RichPrinter:
    """Lines through a rich console, wrapped by mcl.output_width to the console's width
    and each row then printed whole (`soft_wrap`: rich's own wrapping would break a
    quoted source line, and the marker under it would drift)."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def print(self, line: Line | None = None) -> None:
        if line is None:
            self.console.print(soft_wrap=True)
            return
        for row in line.wrapped(self.console.width, width_is_stated(self.console.file)):
            self.console.print(row.to_rich(), soft_wrap=True)


def shows_no_style(stream: TextIO) -> bool:
    """Would rich's console print `stream` without any style? Only where nothing but the
    terminal test could decide: no environment variable rich reads for it, no Jupyter."""
    if any(name in os.environ for name in _RICH_DECIDES) or hasattr(builtins, "get_ipython"):
        return False
    try:
        return not stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def printer(out: Console | Printer | None = None, *, stderr: bool = False) -> Printer:
    """The printer for `out`: a printer as it is, a rich console through it; without one,
    plain text where rich would show no style on stdout (stderr), else rich's console."""
    if isinstance(out, (PlainPrinter, RichPrinter)):
        return out
    if out is not None:
        # `out` is a text stream here (the printers were returned above)
        return RichPrinter(out)  # type: ignore[arg-type]
    if shows_no_style(sys.stderr if stderr else sys.stdout):
        return PlainPrinter(stderr)
    return RichPrinter(text_console(stderr=stderr, soft_wrap=True))


def text_console(*, stderr: bool = False, soft_wrap: bool = False) -> Console:
    """A rich console for people's text on stdout (stderr), as wide as mcl.output_width
    says (the one width rule), without rich's guessing at numbers to highlight."""
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=soft_wrap,
                   width=output_width(sys.stderr if stderr else sys.stdout))
