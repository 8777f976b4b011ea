"""Figures a detected description takes from its bundled parent: those the parent's
authors fitted on measurements of the time model's validation cases (docs/validation.md)
and that neither a query nor `--measure` gives.

A block the generator writes replaces the parent's block of that name whole, so a figure
of the parent's `cache l2` that the generated block leaves out is gone from the child:
hopper.hdl's `partial_write_bandwidth` (the L2's rate for partly written sectors) and
`atomic_interval` (how long an atomic request holds its line) would vanish from a
detected H100, and with them the time model's partial-write and atomic terms (a
transpose that writes partial sectors estimated 5x too fast).

The launch (the device's `latency`) is kept from the parent too where the parent states
one: hopper.hdl's is Nsight Compute's duration of an empty kernel, the timing the model
is validated against, while --measure times one with OpenCL's profiling events, which
count more (an H100: 3.8 us best, 4.9 median, against ncu's 2.2-3.2 us; docs/hdl.md).
"""

from __future__ import annotations

import re
from pathlib import Path

# The parent's figures that a generated block carries over, by block.
FITTED: dict[str, tuple[str, ...]] = {
    "cache l2": ("atomic_interval", "partial_write_bandwidth"),
}


def launch(parent: str) -> str | None:
    """The bundled `parent`.hdl's launch, `latency = ...;` of its device block (None
    where it states none: a generic description's device has no launch cost)."""
    return _stated(parent, f"device {parent}", "latency")


def fitted(parent: str, block: str) -> list[tuple[str, str]]:
    """`(statement, comment)` for each of `block`'s FITTED figures that the bundled
    `parent`.hdl states, in its order; none where it states none or there is no file."""
    return [(statement, f"as {parent}.hdl: fitted on measurements of the time model's "
             "validation cases, not measured by --measure")
            for name in FITTED.get(block, ())
            if (statement := _stated(parent, block, name)) is not None]


def _stated(parent: str, block: str, name: str) -> str | None:
    """`name = ...;` as `block` of the bundled `parent`.hdl states it; None where it
    states none or there is no such file."""
    from mcl.resources import hwdescs_dir

    path = Path(hwdescs_dir()) / f"{parent}.hdl"
    if not path.is_file():
        return None
    match = re.search(rf"^\s*({name}\s*=\s*[^;]+;)", _block_body(path.read_text(), block),
                      re.MULTILINE)
    return match.group(1) if match else None


def _block_body(text: str, block: str) -> str:
    """The text between `block {` and its closing brace (blocks of figures do not nest)."""
    start = re.search(rf"^{re.escape(block)}\s*\{{", text, re.MULTILINE)
    if start is None:
        return ""
    end = text.find("\n}", start.end())
    return text[start.end():end if end >= 0 else len(text)]
