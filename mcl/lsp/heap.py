"""The editor's processes keep what they load for good out of the garbage collector's way.

CPython's cycle collector looks at every tracked object of a generation when it collects
it, and the oldest generation holds all that lives long: in the language server and its
feedback worker, the imported modules (pygls' and lsprotocol's classes, mcl's, SymPy's in
the worker), the hardware descriptions' library and what the first check and job made
-- some 160,000 objects that live as long as the process. A check of the 2,000-line
module makes enough long-lived objects (the side tables, the kept results of its nodes)
that a full collection started during about every second check and looked at all of
them: 30 to 170 ms per check on average, over a third of its CPU time (measured with
gc.callbacks; docs/editor.md, "Latency"). `settle()`, once those objects are loaded,
collects once and moves the survivors to the permanent generation (`gc.freeze`), so the
later collections look only at what the documents made since; garbage is still found as
before among those.
"""

from __future__ import annotations

import gc

__all__ = ["settle", "settled"]

_settled = False


def settle() -> bool:
    """Collect once and keep every object alive now out of later collections; only the
    first call of the process does (later objects belong to the documents). Returns
    whether this call did."""
    global _settled
    if _settled:
        return False
    _settled = True
    gc.collect()
    gc.freeze()
    return True


def settled() -> bool:
    """Has `settle` run in this process?"""
    return _settled
