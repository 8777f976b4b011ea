"""Figures a detected description takes from its bundled parent: those the parent's
authors fitted on measurements of the time model's validation cases (docs/validation.md)
and that neither a query nor `--measure` gives.

A block the generator writes replaces the parent's block of that name whole, so a figure
of the parent's `cache l2` that the generated block leaves out is gone from the child:
hopper.hdl's `partial_write_bandwidth` (the L2's rate for partly written sectors) and
`atomic_interval` (how long an atomic request holds its line) would vanish from a
detected H100, and with them the time model's partial-write and atomic terms (a
transpose that writes partial sectors estimated 5x too fast).
"""

from __future__ import annotations

import re
from pathlib import Path

# The parent's figures that a generated block carries over, by block.
FITTED: dict[str, tuple[str, ...]] = {
    "cache l2": ("atomic_interval", "partial_write_bandwidth"),
}


def fitted(parent: str, block: str) -> list[tuple[str, str]]:
    """`(statement, comment)` for each of `block`'s FITTED figures that the bundled
    `parent`.hdl states, in its order; none where it states none or there is no file."""
    from mcl.resources import hwdescs_dir

    path = Path(hwdescs_dir()) / f"{parent}.hdl"
    names = FITTED.get(block, ())
    if not names or not path.is_file():
        return []
    body = _block_body(path.read_text(), block)
    found = []
    for name in names:
        match = re.search(rf"^\s*({name}\s*=\s*[^;]+;)", body, re.MULTILINE)
        if match:
            found.append((match.group(1), f"as {parent}.hdl: fitted on measurements of the "
                          "time model's validation cases, not measured by --measure"))
    return found


def _block_body(text: str, block: str) -> str:
    """The text between `block {` and its closing brace (blocks of figures do not nest)."""
    start = re.search(rf"^{re.escape(block)}\s*\{{", text, re.MULTILINE)
    if start is None:
        return ""
    end = text.find("\n}", start.end())
    return text[start.end():end if end >= 0 else len(text)]
