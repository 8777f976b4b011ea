"""Readable, unique names for the variables the translation generates.

Appendix A.4 only says CREATEVAR; the paper's Fig. 9 shows what we want people to read:
the new index of a foreach over par_group `blocks` that replaces index `j` is `bj`, the
number of `threads` units for a count `m` is `nrThreadsM`. The rules:

- index variable: first letter of the par_group + the original index (`j` -> `bj`, `tj`;
  after a second split `tj` -> `wtj`, `ttj`);
- dimension variable: `nr` + par_group capitalised + a suffix: the count's name when the
  count is a parameter or module constant (`m` -> `nrThreadsM`, `MAX_LEN` ->
  `nrThreadsMaxLen`), else the original index (`nrThreadsTj` for a count that is an
  expression, a generated variable, or already named as a count like `NR_THREADS_M`).

Every generated name is checked against all names of the function and the module (and
the ones generated before it); on a clash a number is appended (`bj2`).
"""

from __future__ import annotations

from collections.abc import Iterable

from mcl.mcpl import ast


class NameSupply:
    """Hands out names that are not yet taken (by the function, the module, or earlier
    generated names)."""

    def __init__(self, taken: Iterable[str]):
        self._taken = set(taken)

    def fresh(self, base: str) -> str:
        name, n = base, 2
        while name in self._taken:
            name, n = f"{base}{n}", n + 1
        self._taken.add(name)
        return name

    def __contains__(self, name: str) -> bool:
        return name in self._taken


def capitalised(name: str) -> str:
    return name[:1].upper() + name[1:]


def index_name(group: str, original_index: str) -> str:
    """Fig. 9: the `blocks` index replacing `j` is `bj`."""
    return group[:1].lower() + original_index


def dimension_name(group: str, count: ast.Expr, original_index: str, globals_: set[str]) -> str:
    """Fig. 9: the number of `threads` units for count `m` is `nrThreadsM`. `globals_` are
    the parameters and module constants, whose names make the best suffix — unless the
    name is itself a count (`nrRows`, `NR_THREADS_M`), where the index reads better."""
    if (
        isinstance(count, ast.Name)
        and count.name in globals_
        and not count.name.lower().startswith("nr")
    ):
        suffix = _camel(count.name)
    else:
        suffix = capitalised(original_index)
    return f"nr{capitalised(group)}{suffix}"


def _camel(name: str) -> str:
    """`m` -> `M`, `rows` -> `Rows`, `N` -> `N`, `MAX_LEN` -> `MaxLen`."""
    if "_" in name or (name.isupper() and len(name) > 1):
        return "".join(part.capitalize() for part in name.split("_") if part)
    return capitalised(name)
