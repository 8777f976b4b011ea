"""Pause Python's cyclic garbage collector while a front end builds a large tree.

Parsing allocates millions of short-lived objects (Arpeggio parse-tree nodes, NoMatch
exceptions, textX model objects, AST nodes); nearly all are freed by reference counting,
and the one cyclic structure, the textX model with its parent links, lives until the
parse ends anyway. The cyclic collector nevertheless runs every 700 allocations and its
full collections scan every live object, so on a large source it spends a share of
the time that grows with the tree (25 % at 30 KB, 40 % at 300 KB of MCPL;
benchmarks/bench_frontend_scaling.py). Pausing it changes no result and, as measured,
not the peak memory either; it is restored when the block ends, also on an exception.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Run the block with the cyclic collector off (nested blocks are fine)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
