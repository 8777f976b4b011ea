"""The feedback's SymPy dummies (loop counters, stand-ins for data and for values not
known statically), the same objects from one analysis of a kernel to the next.

The editor's worker analyses a kernel again at every edit. With a new `sympy.Dummy` for
every loop counter at every analysis, no formula of one analysis is equal to one of the
next, so nothing SymPy keeps (its cache of constructors and assumptions) and nothing the
feedback keeps by formula serves the next edit, though an edit inside one loop leaves
the counts of every other loop as they were (paper section 6.2: the counts are derived
from the loops' bounds and guards alone).

Within `reused_dummies()` (one analysis, as the worker runs it), the k-th dummy made
under a name and assumptions is the k-th one made under them by the last analysis: the
dummies of one analysis are distinct from each other, as fresh ones are, and they are
made in the same order, so their SymPy order (by name, assumptions, then the order they
were made in) is that of fresh ones too. What an analysis finds is therefore what it
finds with fresh dummies (tests/lsp/test_reused_dummies.py runs a sequence of edits
both ways). Outside, every dummy is fresh (`mcl check`: one analysis per process).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sympy

# Dummies kept before the store starts again empty: a kernel makes a few hundred (a
# counter per loop, a stand-in per data read), and the worker sees one kernel at a time.
MAX_KEPT = 4096

_Key = tuple[str, tuple[tuple[str, Any], ...]]
_kept: dict[_Key, list[sympy.Dummy]] = {}
_made: dict[_Key, int] | None = None  # per name and assumptions, in this analysis; None: off


def dummy(name: str, **assumptions: Any) -> sympy.Dummy:
    """`sympy.Dummy(name, **assumptions)`; within `reused_dummies`, the one of the same
    rank made by the last analysis."""
    if _made is None:
        return sympy.Dummy(name, **assumptions)
    key = (name, tuple(sorted(assumptions.items())))
    rank = _made.get(key, 0)
    _made[key] = rank + 1
    kept = _kept.setdefault(key, [])
    if rank == len(kept):
        kept.append(sympy.Dummy(name, **assumptions))
    return kept[rank]


def reusing() -> bool:
    """Is an analysis within `reused_dummies` running (the editor's worker)? Only then
    can what one analysis found by formula serve the next (mcl.feedback.facts.nest_counts)."""
    return _made is not None


@contextmanager
def reused_dummies() -> Iterator[None]:
    """One analysis whose dummies are those of the last analysis made this way, rank
    for rank. Not re-entrant: an analysis within another would share its dummies."""
    global _made
    if _made is not None:
        raise RuntimeError("reused_dummies() is already active")
    if sum(len(v) for v in _kept.values()) > MAX_KEPT:
        _kept.clear()
    _made = {}
    try:
        yield
    finally:
        _made = None


def made() -> dict[_Key, int]:
    """How many dummies this analysis has made so far, by name and assumptions (empty
    outside `reused_dummies`)."""
    return dict(_made or {})


def make_again(since: dict[_Key, int], now: dict[_Key, int]) -> None:
    """Make the dummies made between the counts `since` and `now` (of `made`) once more,
    for a computation whose kept result is used instead of running it: the dummies made
    after it are then those of the analysis that ran it, rank for rank, and so are the
    formulas that hold them (found in SymPy's cache and the kept results)."""
    for (name, assumptions), count in now.items():
        for _ in range(count - since.get((name, assumptions), 0)):
            dummy(name, **dict(assumptions))
