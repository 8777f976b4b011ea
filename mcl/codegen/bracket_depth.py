"""Bracket nesting of generated kernel source, against the limit of OpenCL C compilers.

clang, which PoCL and most OpenCL drivers compile with, stops at 256 nested brackets
(`(`, `[`, `{`): "bracket nesting level exceeded maximum of 256". A 250-deep `if` nest
in MCPL is legal and the interpreter runs it, but its generated kernel would fail to
build; code generation reports it first, at the MCPL line of the deepest bracket (each
generated statement ends in a `// FILE.mcpl:LINE` comment, mcl.codegen.statements).
"""

from __future__ import annotations

import re
from pathlib import Path

from mcl.diagnostics import Diagnostic, Span, error

MAX_BRACKETS = 256

_OPEN, _CLOSE = "([{", ")]}"
_WHERE = re.compile(r"//.*?([^\s/]+\.mcpl):(\d+)")


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


def nesting_errors(text: str, function: str, source: str | None) -> list[Diagnostic]:
    """An error when the generated `text` nests brackets deeper than compilers accept,
    located at the MCPL line of the deepest point (`source`: the MCPL file's path)."""
    depth, at = deepest_bracket(text)
    # clang does not count the braces of a function body: on PoCL, a kernel nested 257
    # brackets deep by this count builds, one of 258 fails with the message above.
    depth -= 1
    if depth <= MAX_BRACKETS:
        return []
    span = None
    lines = text.splitlines()
    for k in range(min(at, len(lines) - 1), -1, -1):  # the statement's own comment, or above
        found = _WHERE.search(lines[k])
        if found:
            name = found.group(1)
            path = source if source is not None and Path(source).name == name else name
            span = Span.point(path, int(found.group(2)), 1)
            break
    return [error(
        "codegen-nesting",
        f"the kernel source generated for {function} nests brackets {depth} deep; OpenCL "
        f"compilers built on clang (PoCL's among them) stop at {MAX_BRACKETS}",
        span,
        "nest fewer ifs and loops here: join conditions with &&, or move the inner part "
        "into a function",
    )]
