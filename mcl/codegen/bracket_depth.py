"""Bracket nesting of generated kernel source, against the limit of OpenCL C compilers.

clang, which PoCL and most OpenCL drivers compile with, stops at 256 nested brackets
(`(`, `[`, `{`): "bracket nesting level exceeded maximum of 256". A 250-deep `if` nest
in MCPL is legal and the interpreter runs it, but its generated kernel would fail to
build; code generation reports it first, at the MCPL line of the deepest bracket.

The printer of the C syntax tree measures as it prints (`Nesting`, mcl.codegen.ctree.TreePrinter):
a line of a function body stands inside as many braces as its depth in the tree, plus
the brackets of its own code (`deepest_bracket` of the line's code: its expressions are
text), and belongs to the MCPL statement of its span (or, for a closing or guard line,
the statement printed last).
"""

from __future__ import annotations

from dataclasses import dataclass

from mcl.diagnostics import Diagnostic, Span, error

MAX_BRACKETS = 256

_OPEN, _CLOSE = "([{", ")]}"


@dataclass(frozen=True)
class Nesting:
    """The deepest bracket nesting of generated code and the MCPL statement where it is
    reached first."""

    depth: int = 0
    span: Span | None = None

    def deeper(self, other: Nesting) -> Nesting:
        """The deeper of the two; this one where they are as deep (it came first)."""
        return other if other.depth > self.depth else self


def deepest_bracket(text: str) -> tuple[int, int]:
    """(the deepest bracket nesting of C source `text`, the 0-based line where it is
    reached first); comments and string and character literals do not count."""
    depth = deepest = line = deepest_line = 0
    i, size = 0, len(text)
    while i < size:
        c = text[i]
        if c == "\n":
            line += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = size if end < 0 else end
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = size if end < 0 else end + 2
            line += text.count("\n", i, end)
            i = end
            continue
        elif c in "\"'":
            i += 1
            while i < size and text[i] != c and text[i] != "\n":
                i += 2 if text[i] == "\\" else 1
        elif c in _OPEN:
            depth += 1
            if depth > deepest:
                deepest, deepest_line = depth, line
        elif c in _CLOSE:
            depth -= 1
        i += 1
    return deepest, deepest_line


def nesting_errors(nesting: Nesting, function: str) -> list[Diagnostic]:
    """An error when generated code (of module `function`) nests brackets deeper than
    compilers accept, located at the MCPL line of the deepest point."""
    # clang does not count the braces of a function body: on PoCL, a kernel nested 257
    # brackets deep by this count builds, one of 258 fails with the message above.
    depth = nesting.depth - 1
    if depth <= MAX_BRACKETS:
        return []
    span = nesting.span
    return [error(
        "codegen-nesting",
        f"the kernel source generated for {function} nests brackets {depth} deep; OpenCL "
        f"compilers built on clang (PoCL's among them) stop at {MAX_BRACKETS}",
        None if span is None or not span.file else Span.point(span.file, span.line, 1),
        "nest fewer ifs and loops here: join conditions with &&, or move the inner part "
        "into a function",
    )]
