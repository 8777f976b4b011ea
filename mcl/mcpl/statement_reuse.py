"""The model of an edited definition from the model of its text before the edit: only
the statements the edit touched, in the innermost block around it, are parsed again.

The language server parses each top-level definition alone and keeps the unchanged ones
(mcl.mcpl.parse, `reuse_definitions`). A kernel is mostly one long definition, though, and
a keystroke inside it changes one statement: parsing the whole definition again was about a
third of the check behind the diagnostics of the largest shipped kernels. Here the edit is
found by the text the old and the new version share at both ends; in the innermost block
(`Block: '{' stmts*=Stmt '}'`, mcpl.tx) around the whole edit, with its braces untouched,
the text from the end of the statement before the edit (or the `{`) to the start of the
statement after it (or the `}`) is parsed alone, wrapped in a function; its statements
replace the old ones in the old model, and the positions after them move by the change in
length.

Why the result is the whole parse's: the text before that stretch and after it is the old
text, which parsed with statement boundaries at both of its ends; the parse is a PEG's,
whose result at a position depends only on the text from there on, and a statement ends
at its `;` or `}` (no rule reads past them except an `if`'s optional `else`: an `else` at
the start of the stretch does not parse alone, and one after it is looked for). The
stretch must parse as statements up to the wrapper's closing brace, else the caller
parses the whole definition (which also reports any syntax error).
tests/mcpl/test_statement_reuse.py compares the two on chains of random edits of shipped
kernels, spans included.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

# The statements parsed alone are the body of this function (any name is a description name
# to the grammar: `Function: hwd=ID ret=Type name=ID ...`).
_BEFORE = "perfect void mcl_edited_statements() {"
_AFTER = "}"
# An `else` after the stretch would join an `if` at its end (mcpl.tx's comments and
# blanks skipped first).
_ELSE_NEXT = re.compile(r"(?:[ \t\r\n\f\v]+|//[^\n]*|/\*[\s\S]*?\*/)*else\b")


def common_ends(old: str, new: str) -> tuple[int, int]:
    """How many characters `old` and `new` share at their start, and then at their end
    (the two not overlapping in the shorter text)."""
    shortest = min(len(old), len(new))
    low, high = 0, shortest
    while low < high:  # (slices compare in C: a binary search, not a loop per character)
        mid = (low + high + 1) // 2
        if old[:mid] == new[:mid]:
            low = mid
        else:
            high = mid - 1
    start = low
    low, high = 0, shortest - start
    while low < high:
        mid = (low + high + 1) // 2
        if old[len(old) - mid:] == new[len(new) - mid:]:
            low = mid
        else:
            high = mid - 1
    return start, low


def edited_model(old_text: str, old_model: Any, text: str,
                 parse: Callable[[str], Any | None]) -> Any | None:
    """The model of `text` made from `old_model`, the model of `old_text` (changed in
    place: the caller keeps it no longer); None where the edit lies in no block or the
    new text of its statements does not parse alone as statements. `parse`: a text's
    model, or None on a syntax error."""
    start, end = common_ends(old_text, text)
    old_end = len(old_text) - end  # the edit replaced old_text[start:old_end]
    delta = len(text) - len(old_text)
    block = _innermost_block(old_model, start, old_end)
    if block is None:
        return None
    # The statements the edit touches, from the end of the one before them (or the
    # block's `{`) to the start of the one after them (or its `}`).
    stmts = block.stmts
    first = 0
    while first < len(stmts) and stmts[first]._tx_position_end <= start:
        first += 1
    after = first
    while after < len(stmts) and stmts[after]._tx_position < old_end:
        after += 1
    left = stmts[first - 1]._tx_position_end if first else block._tx_position + 1
    right = stmts[after]._tx_position if after < len(stmts) else block._tx_position_end - 1
    if _ELSE_NEXT.match(text, right + delta):
        return None
    wrapped_text = _BEFORE + text[left:right + delta] + _AFTER
    wrapped = parse(wrapped_text)
    items = getattr(wrapped, "items", None)
    if not items or len(items) != 1 or items[0].body._tx_position_end != len(wrapped_text):
        return None
    new = items[0].body.stmts
    for stmt in new:
        for node in _nodes(stmt):
            node._tx_position += left - len(_BEFORE)
            node._tx_position_end += left - len(_BEFORE)
    del stmts[first:after]  # (before the shift, which would move their ends)
    _shift_after(old_model, right, delta)
    stmts[first:first] = new
    return old_model


def _children(node: Any) -> Iterator[Any]:
    """The model nodes in the attributes of model node `node`."""
    for name, value in node.__dict__.items():
        if name.startswith("_tx"):
            continue
        if isinstance(value, list):
            yield from (v for v in value if hasattr(v, "_tx_position"))
        elif hasattr(value, "_tx_position"):
            yield value


def _nodes(root: Any) -> Iterator[Any]:
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(_children(node))


def _innermost_block(model: Any, start: int, end: int) -> Any | None:
    """The innermost block whose text holds `start`..`end` with its braces untouched."""
    found = None
    node = model
    while True:
        node = next((c for c in _children(node)
                     if c._tx_position < start and end < c._tx_position_end), None)
        if node is None:
            return found
        if type(node).__name__ == "Block":
            found = node


def _shift_after(model: Any, right: int, delta: int) -> None:
    """Move the positions from `right` on (where the statements after the edit start) by
    `delta`: the nodes from there, and the end of those around the edit. Nodes that end
    before it are left whole."""
    stack = [model]
    while stack:
        node = stack.pop()
        if node._tx_position >= right:
            node._tx_position += delta
        elif node._tx_position_end <= right:
            continue  # before the edit, all of it
        node._tx_position_end += delta  # (from the edit on, or around it)
        stack.extend(_children(node))
