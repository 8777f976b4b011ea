"""What one lock-step load or store of a group of units costs (the paper's section 6.5:
"coalesced memory access for threads and the number of bank conflicts for threads").

The feedback functions compute the byte addresses the units of a warp touch with the
kernel evaluator; these pure functions turn such addresses into the two numbers the
programming guides reason about: memory transactions (lines) against the minimum, and
the degree of a shared-memory bank conflict.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Coalescing:
    """Lines one warp-wide access touches, and the fewest lines its bytes could fit in."""

    lines: int
    minimum: int

    @property
    def optimal(self) -> bool:
        return self.lines <= self.minimum


def coalescing(addresses: Iterable[int], element_bytes: int, line_bytes: int) -> Coalescing:
    """Lines touched by the accesses of one lock-step group, against the minimum: the
    distinct bytes it needs, packed one after another from its lowest address. Where the
    data starts inside a line (`rowptr[i + 1]`), the lines its contiguous bytes straddle
    are the least any order of the units could touch: only moving the data would save
    one, so that access is coalesced (as Nsight Compute's ideal sectors count it,
    docs/validation.md). Units reading the same element share it (a broadcast), so one
    element for all units is optimal."""
    distinct = set(addresses)
    lines = {
        line
        for address in distinct
        for line in range(address // line_bytes, (address + element_bytes - 1) // line_bytes + 1)
    }
    if not distinct:
        return Coalescing(0, 0)
    low = min(distinct)
    end = low + len(distinct) * element_bytes - 1
    return Coalescing(len(lines), end // line_bytes - low // line_bytes + 1)


@dataclass(frozen=True)
class BankConflict:
    """The worst number of distinct words one bank must deliver for one access (1 = no
    conflict), and the bank where that happens."""

    degree: int
    bank: int

    @property
    def conflict(self) -> bool:
        return self.degree > 1


def bank_conflict(addresses: Iterable[int], nr_banks: int, word_bytes: int) -> BankConflict:
    """Banked memory delivers one word per bank per cycle; units that read the same word
    share it. Successive words live in successive banks (Fermi tuning guide, 32 banks of
    32-bit words), so the conflict degree is the largest number of distinct words that
    fall in one bank."""
    words_per_bank: dict[int, set[int]] = defaultdict(set)
    for address in addresses:
        word = address // word_bytes
        words_per_bank[word % nr_banks].add(word)
    if not words_per_bank:
        return BankConflict(0, 0)
    bank, words = max(words_per_bank.items(), key=lambda item: (len(item[1]), -item[0]))
    return BankConflict(len(words), bank)
