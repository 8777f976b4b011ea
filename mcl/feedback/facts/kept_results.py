"""A bounded store of results of a pure function of SymPy expressions, for a result that
`functools.lru_cache` may not keep: one computed on a fallback (a budget ran out) must
be computed again next time, so the caller decides what is kept.

    store = KeptResults(1024)
    forget_with_per_process(store)    # emptied with SymPy's cache (mcl.lsp.worker)
    found = store.get(key)            # None: not kept
    ...
    store.put(key, value)

The editor's worker analyses the kernel again at every edit under the loop counters and
stand-ins of the last job (mcl.feedback.facts.stable_dummies), so the formulas of the
code an edit did not touch come back equal: SymPy's expressions are immutable and
compare by structure, and their results are found here (the paper's section 6 analyses
each kernel from its formulas alone).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class KeptResults(Generic[V]):
    """At most `entries` results by key, the least recently used going first."""

    def __init__(self, entries: int) -> None:
        self.entries = entries
        self._kept: OrderedDict[Hashable, V] = OrderedDict()
        self.enabled = True  # a caller may turn keeping off (tests compare with a fresh run)
        self.hits = 0
        self.misses = 0  # computations asked for (tests count them)

    def get(self, key: Hashable) -> V | None:
        found = self._kept.get(key)
        if found is None:
            self.misses += 1
            return None
        self.hits += 1
        self._kept.move_to_end(key)
        return found

    def put(self, key: Hashable, value: V) -> None:
        self._kept[key] = value
        self._kept.move_to_end(key)
        while len(self._kept) > self.entries:
            self._kept.popitem(last=False)

    def __len__(self) -> int:
        return len(self._kept)

    def cache_clear(self) -> None:
        self._kept.clear()
