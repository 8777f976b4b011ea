"""The names of a kernel that has never parsed, from an error-tolerant scan of its text:
what completion offers while a new kernel is typed, before the parser has a tree.

MCPL declares C-like (mcpl.md §3): `const TYPE NAME` at the top level, `type NAME {`,
`LEVEL TYPE NAME(PARAMS) {`, and in a body `TYPE NAME =`/`;` or `foreach (int NAME in`,
where TYPE is a word or ends with `]` (`float[n, m] c`). The scan reads these patterns
in the text with its comments blanked, so a half-typed statement anywhere does not hide
the declarations around it. Variables are those of the function the cursor is in,
declared before the cursor (block scopes are not tracked: a guess, not the checker)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from mcl.mcpl.parse import KEYWORDS

# `//` to the end of the line, `/* ... */` (also unterminated: the cursor is inside it)
COMMENT = re.compile(r"//[^\n]*|/\*(?:.|\n)*?(?:\*/|$)")
_PRIMITIVES = frozenset({"void", "int", "float", "double", "byte", "bool"})
_WORD = r"[A-Za-z_]\w*"
_DIMS = r"(?:\s*\[[^\]\n]*\])*"
_CONSTANT = re.compile(rf"\bconst\s+{_WORD}{_DIMS}\s+({_WORD})")
_TYPE = re.compile(rf"\btype\s+({_WORD})\s*\{{")
_FUNCTION = re.compile(rf"(?m)^[ \t]*({_WORD})\s+{_WORD}{_DIMS}\s+({_WORD})\s*\(")
# a declaration in a body: the word before the name is a type or ends a dimension
_LOCAL = re.compile(rf"(\]|\b{_WORD})\s+({_WORD})\s*(?:=(?!=)|;|\bin\b)")


@dataclass(frozen=True)
class Scanned:
    name: str
    kind: str  # constant, type, function, parameter, variable, foreach index


def blank_comments(text: str) -> str:
    """`text` with each comment replaced by spaces (newlines kept: offsets stay)."""
    return COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def _depth_zero(code: str, offset: int) -> bool:
    return code.count("{", 0, offset) <= code.count("}", 0, offset)


def _functions(code: str) -> list[re.Match[str]]:
    """The function headers of `code` (blanked comments): group 1 the level, 2 the name."""
    return [m for m in _FUNCTION.finditer(code) if _depth_zero(code, m.start())
            and m.group(2) not in KEYWORDS and m.group(1) not in KEYWORDS]


def _around(functions: list[re.Match[str]], offset: int) -> re.Match[str] | None:
    return next((m for m in reversed(functions) if m.end() <= offset), None)


def level_at(text: str, offset: int) -> str | None:
    """The level (description) of the function around `offset`, as written."""
    current = _around(_functions(blank_comments(text)), offset)
    return current.group(1) if current is not None else None


def scan(text: str, offset: int) -> list[Scanned]:
    """The names declared in `text` that may be visible at `offset`: the top-level ones
    anywhere, the parameters and variables of the function around `offset` before it."""
    code = blank_comments(text)
    found = [Scanned(m.group(1), "constant") for m in _CONSTANT.finditer(code)
             if _depth_zero(code, m.start())]
    found += [Scanned(m.group(1), "type") for m in _TYPE.finditer(code)
              if _depth_zero(code, m.start())]
    functions = _functions(code)
    found += [Scanned(m.group(2), "function") for m in functions]
    current = _around(functions, offset)
    if current is not None:
        found += list(_in_function(code, current.end(), offset))
    return found


def _in_function(code: str, params_start: int, offset: int) -> Iterator[Scanned]:
    """The parameters (after the header's `(` at `params_start`) and the variables
    declared before `offset`."""
    depth, end = 1, params_start
    while end < min(offset, len(code)) and depth:
        depth += {"(": 1, ")": -1}.get(code[end], 0)
        end += 1
    params = code[params_start:end - 1 if depth == 0 else end]
    for piece in _top_level_commas(params):
        words = re.findall(_WORD, re.sub(r"\[[^\]]*\]", " ", piece))
        if len(words) >= 2 and words[-1] not in KEYWORDS:
            yield Scanned(words[-1], "parameter")
    for m in _LOCAL.finditer(code, end, offset):
        before, name = m.group(1), m.group(2)
        if name in KEYWORDS or (before != "]" and before in KEYWORDS
                                and before not in _PRIMITIVES):
            continue
        kind = "foreach index" if m.group(0).rstrip().endswith("in") else "variable"
        yield Scanned(name, kind)


def _top_level_commas(text: str) -> list[str]:
    pieces, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "[(":
            depth += 1
        elif c in "])":
            depth -= 1
        elif c == "," and depth == 0:
            pieces.append(text[start:i])
            start = i + 1
    pieces.append(text[start:])
    return pieces
