"""What the warps of a brute-force trace (brute.py) touch, for the tests that hold the
GPU leaves' warp analyses (lines per warp, bank-conflict degree, active lanes;
mcl.feedback.lockstep) against it: the accesses at one site, grouped into warps of the
first block, and the lines and bank words they touch, computed without mcl.feedback."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
from brute import Trace

from mcl.feedback.messages import Message
from mcl.mcpl.printer import print_expr

WARP = 32
LINE = 128
BANKS, WORD = 32, 4


def warp_addresses(trace: Trace, facts: Any, text: str, mode: str,
                   by_iteration: bool = False, line: int | None = None
                   ) -> dict[Any, list[int]]:
    """Byte addresses per warp of the first block at the access sites printed `text`:
    a unit's warp is its position (warps x threads, threads fastest) divided by 32.
    `by_iteration`: per warp and iteration of the for-loops around the site, as a warp
    issues them (key: (warp, loop values)). `line`: only the sites on that line."""
    loops = {id(x.node): x for x in facts.loops}
    nodes = {id(a.node) for a in facts.accesses if print_expr(a.node) == text
             and (line is None or (a.node.span is not None and a.node.span.line == line))}
    per_warp: dict[Any, list[int]] = defaultdict(list)
    for n, (slot, index, values) in enumerate(trace.log):
        site = trace.slots[slot]
        if site.node not in nodes or mode not in site.mode:
            continue
        at = {loops[k].group: v for k, v in zip(site.loops, values, strict=True)
              if loops[k].kind == "foreach"}
        if at.get("blocks", 0):
            continue  # the first block only (bi and bj both 0: every blocks loop at 0)
        if any(v for k, v in zip(site.loops, values, strict=True)
               if loops[k].group == "blocks"):
            continue
        position = at.get("warps", 0) * WARP + at["threads"]
        array = trace.memory[n][0]
        flat = int(np.ravel_multi_index(index, array.shape))
        iteration = tuple(v for k, v in zip(site.loops, values, strict=True)
                          if loops[k].kind != "foreach")
        key = (position // WARP, iteration) if by_iteration else position // WARP
        per_warp[key].append(flat * 4)
    return per_warp


def count_lines(addresses: list[int], line: int = LINE) -> int:
    """Lines (fermi: 128 B; hopper: sectors of 32 B) the 4-byte elements touch."""
    return len({b // line for a in addresses for b in (a, a + 3)})


def least_lines(addresses: list[int], line: int = LINE) -> int:
    """The fewest lines the distinct 4-byte elements fit in, one after another from the
    lowest address (data that starts inside a line straddles it in any order)."""
    low = min(addresses)
    return count_lines([low + 4 * k for k in range(len(set(addresses)))], line)


def conflict_degree(addresses: list[int]) -> int:
    """Most distinct 4-byte words in one of 32 banks."""
    banks: dict[int, set[int]] = defaultdict(set)
    for a in addresses:
        banks[(a // WORD) % BANKS].add(a // WORD)
    return max(len(v) for v in banks.values())


def find_message(messages: list[Message], code: str, text: str) -> Message | None:
    found = [m for m in messages if m.code == code and text in m.text]
    assert len(found) <= 1, found
    return found[0] if found else None


def numeric_values(message: Message) -> dict:
    return {k: v.numeric for k, v in message.values}
