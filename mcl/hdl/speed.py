"""Which memory is faster (the paper's section 6.3, "Proposing faster memories").

The heuristics, in order: (1) the interconnects between each memory and the execution
units — higher bandwidth and lower latency are faster; (2) if that does not decide,
proximity to the execution units — a memory inside an execution unit (on-chip) is closer
than one outside, and a deeper one closer still; (3) capacity — the smaller the faster.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # types only: mcl.hdl.model imports this module (`is_faster`)
    from mcl.hdl.model import HardwareDescription, Link, MemoryInfo


def compare_memories(hwd: HardwareDescription, space_a: str, space_b: str) -> int:
    """+1 if the memory holding `space_a` is faster than the one holding `space_b`, -1 if
    slower, 0 if they are the same memory or nothing tells them apart."""
    ma, mb = _home(hwd, space_a), _home(hwd, space_b)
    if ma is None or mb is None or ma.node is mb.node:
        return 0
    la, lb = hwd.link(ma.node.path), hwd.link(mb.node.path)
    if la is not None and lb is not None:
        by_link = _compare_links(la, lb)
        if by_link:
            return by_link
    pa, pb = _proximity(ma), _proximity(mb)
    if pa != pb:
        return 1 if pa > pb else -1
    ca = ma.capacity if ma.capacity is not None else math.inf
    cb = mb.capacity if mb.capacity is not None else math.inf
    if ca != cb:
        return 1 if ca < cb else -1
    return 0


def _home(hwd: HardwareDescription, space: str) -> MemoryInfo | None:
    """The memory that holds a space (a memory before any cache of it)."""
    held = hwd.memories_for(space)
    return held[0] if held else None


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


def _compare_links(a: Link, b: Link) -> int:
    votes = []
    if a.latency is not None and b.latency is not None and a.latency.unit == b.latency.unit:
        votes.append(_sign(b.latency.value - a.latency.value))  # lower latency is faster
    if a.bandwidth is not None and b.bandwidth is not None:
        if a.bandwidth.value != b.bandwidth.value:
            votes.append(1 if a.bandwidth.value > b.bandwidth.value else -1)
    decided = {v for v in votes if v}
    return decided.pop() if len(decided) == 1 else 0  # conflicting or no evidence: undecided


def _proximity(m: MemoryInfo) -> int:
    """0 outside every execution unit; otherwise 1 + the depth of the unit it sits in."""
    return 0 if m.resides_on is None else 1 + m.resides_on.depth
