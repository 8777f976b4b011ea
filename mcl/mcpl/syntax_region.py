"""The syntax error of an edit, found by parsing only the top-level definitions it touched.

While a person types, most texts of a buffer do not parse. The whole-file parse of such a
text fails in the compiled parser and is run again by Arpeggio for its error: about a
second and a half of CPU for a 2,000-line module on the 2-core machine (docs/editor.md,
"Latency", round 13). Given the last text of the file that parsed (`good`), the edit is
what lies between the two texts' common prefix and suffix; the region is the span of the
top-level definitions of `good` that the edit overlaps (`mcl.mcpl.parse.definition_ends`),
and the region of the text now is parsed alone, at its own lines and columns.

Why its error is the whole file's. A PEG parse is deterministic and Arpeggio reports the
furthest position at which a rule failed, with every rule that failed there. The text
before the region is `good`'s, where it parsed, so the whole-file parse reaches the
region's start as a top-level item, as the parse of the region alone does. When the
region's parse fails at a position before its end, no rule tried got as far as the
region's end (it would have failed there, further), so no rule of the whole-file parse
looked at the text after the region either: both fail at the same position with the same
rules. Left to the whole-file parse: a failure at the region's first token (there the
whole file's parse also tries what may follow the previous definition, a type's `;`) or
at its end (an unclosed brace reaches into what follows), a region with an unclosed `/*`
(one token, the comment, would end after the region), a region that parses (the whole
file may still not) and an edit outside every definition.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from mcl.diagnostics import Diagnostic

# The parse of a text: None where it parses, else the 1-based line and column of its
# failure and its syntax error (mcl.mcpl.parse gives it, with its parser).
ParseError = Callable[[str], tuple[int, int, Diagnostic] | None]

_COMMENT = re.compile(r"//[^\n]*|/\*[\s\S]*?\*/")  # mcpl.tx's Comment rule
_HEADER = re.compile(r"(?:package|module)\b")
_BLANK = re.compile(r"(?:\s|//[^\n]*|/\*[\s\S]*?\*/)*")


@dataclass(frozen=True)
class Region:
    """The definitions an edit touched: characters `start`..`old_end` of the good text,
    `start`..`new_end` of the text now (the same text before and after them)."""

    start: int
    old_end: int
    new_end: int
    definitions: int  # how many definitions of the good text it spans


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix (by halving: each comparison is C's)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _common_suffix(a: str, b: str, limit: int) -> int:
    low, high = 0, limit
    while low < high:
        mid = (low + high + 1) // 2
        if a[len(a) - mid:] == b[len(b) - mid:]:
            low = mid
        else:
            high = mid - 1
    return low


def edited_region(good: str, text: str, ends: list[int]) -> Region | None:
    """The definitions of `good` (`ends`: the offsets just past each,
    `mcl.mcpl.parse.definition_ends`) that the edit making `text` touched; None when the
    texts are equal or the edit reaches outside every definition (the file's tail)."""
    if good == text:
        return None
    prefix = _common_prefix(good, text)
    suffix = _common_suffix(good, text, min(len(good), len(text)) - prefix)
    edit_start, edit_end = prefix, len(good) - suffix  # in `good`
    starts = [0, *ends[:-1]]
    # a definition that ends where the edit starts is touched too: text typed just after
    # its `}` may continue it (a type's optional `;`)
    touched = [k for k, (s, e) in enumerate(zip(starts, ends, strict=True))
               if e >= edit_start and s <= edit_end]
    if not touched or ends[touched[-1]] < edit_end:
        return None
    first, last = touched[0], touched[-1]
    delta = len(text) - len(good)
    return Region(starts[first], ends[last], ends[last] + delta, len(touched))


def region_error(good: str, text: str, ends: list[int], parse_error: ParseError
                 ) -> Diagnostic | None:
    """The syntax error the whole-file parse of `text` gives, found by `parse_error` of
    only the region of the edit from `good` (a text of the same file that parsed, `ends`
    its definitions' ends); None where only the whole-file parse can tell (see the
    module's docstring), or `text` may parse."""
    region = edited_region(good, text, ends)
    if region is None:
        return None
    part = text[region.start:region.new_end]
    if "/*" in _COMMENT.sub("", part):
        return None  # an unclosed block comment
    blank = _BLANK.match(part)  # (it matches the empty string)
    first_token = region.start + (blank.end() if blank is not None else 0)
    if first_token >= region.new_end or region.start > 0 and _HEADER.match(text, first_token):
        return None  # (alone, a region would take `package` or `module` for the header)
    line = text.count("\n", 0, region.start) + 1
    column = region.start - text.rfind("\n", 0, region.start)
    # what stands before the region, as blanks: the parse sees the region at its place
    padded = "\n" * (line - 1) + " " * (column - 1) + part
    failed = parse_error(padded)
    if failed is None:
        return None  # the region parses alone: the whole file decides
    at = region.start + _offset_in(part, column, failed[0] - line, failed[1])
    return failed[2] if first_token < at < region.new_end else None


def _offset_in(part: str, column: int, lines: int, col: int) -> int:
    """The offset in `part` (which starts at column `column`) of column `col` of its line
    `lines` (0: its first)."""
    if lines <= 0:
        return col - column
    at = -1
    for _ in range(lines):
        at = part.find("\n", at + 1)
        if at < 0:
            return len(part)
    return at + col
