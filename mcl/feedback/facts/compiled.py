"""What the feedback keeps per process across analyses: formulas compiled to Python
functions, and a bounded store for other results kept by formula.

The editor's worker analyses a kernel again at every edit, with new loop counters and
stand-ins, and the same formulas come back under new names (docs/feedback.md, "Speed"):
a formula is compiled once under its symbols renamed by position, each keeping its
assumptions, so that it is rebuilt as it was. `sympy.lambdify` is 20 to 30 ms a formula.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, Generic, TypeVar

import sympy

from mcl.mcpl.symbolic_values import by_position, renamed

# Entries a store keeps before it starts again empty: a kernel's figures are a few dozen
# formulas, and the editor's worker sees one kernel at a time.
SIZE = 256

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Store(Generic[K, V]):
    """A dict emptied when full: what is kept by formula stays bounded over a long
    editing session, and a kernel analysed again finds its own entries anew. (Not
    `functools.lru_cache`: some results are kept with what their computation found out
    on the way, `facts.sums`' approximation flag, or under a key made after a check.)"""

    def __init__(self, size: int = SIZE) -> None:
        self.size = size
        self._entries: dict[K, V] = {}

    def get(self, key: K) -> V | None:
        return self._entries.get(key)

    def put(self, key: K, value: V) -> V:
        if len(self._entries) >= self.size:
            self._entries.clear()
        self._entries[key] = value
        return value

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()


class Compiler:
    """Formulas compiled to functions of their symbols' values, passed by position, with
    the functions of `modules` (as `sympy.lambdify` takes them); each formula once per
    process, whatever its symbols are called."""

    def __init__(self, modules: Any, size: int = SIZE) -> None:
        self.modules = modules
        self.store: Store[Any, Callable[..., Any]] = Store(size)

    def __call__(self, symbols: Sequence[Any], exprs: Any) -> Callable[..., Any]:
        """The function of the values of `symbols`, in that order, that computes `exprs`
        (an expression, or a tuple of them for a tuple of results)."""
        positional = by_position(symbols)
        args = tuple(positional.values())
        if isinstance(exprs, tuple):
            canonical: Any = tuple(renamed(e, positional) for e in exprs)
        else:
            canonical = renamed(exprs, positional)
        key = (args, canonical)
        found = self.store.get(key)
        if found is None:
            found = self.store.put(key, sympy.lambdify(
                list(args), list(canonical) if isinstance(canonical, tuple) else canonical,
                modules=self.modules))
        return found
