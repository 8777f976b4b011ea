"""Output-defining, control-flow and indexing blocks (paper section 6.2).

"To determine the output-defining blocks the compiler finds the declarations in the
parameter list that are written and the declarations of the variables that are used in
return expressions. It then uses standard data-flow techniques to find all blocks on which
the output depends. We define the control-flow blocks as the set of blocks that perform
control-flow and all of their dependent blocks that are not in the output-defining blocks.
Finally, we define the indexing blocks as the blocks that define the indexing expressions,
but are neither in the output-defining blocks or the control-flow blocks."

Blocks are `Item`s (statements and loop/if header parts). Data flow is flow-insensitive
per variable: an item depends on every item that defines a variable it uses. The output
depends on *values* (`value_uses`); subscripts say where a value goes, so they lead to
indexing blocks.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

from mcl.feedback.facts.kernel import COND, COUNT, IF, INIT, STEP, DeclaredName, Item, KernelFacts

OUTPUT = "output-defining"
CONTROL_FLOW = "control-flow"
INDEXING = "indexing"
UNUSED = "unused"

_CONTROL_KINDS = frozenset({INIT, COND, STEP, COUNT, IF})


def classify(facts: KernelFacts) -> dict[Item, str]:
    """The block kind of every item."""
    defs_of: dict[DeclaredName, list[Item]] = defaultdict(list)
    for item in facts.items:
        for b in item.defs:
            defs_of[b].append(item)
            if b.root is not b:
                defs_of[b.root].append(item)

    written = {p for p in facts.params if "w" in facts.param_modes.get(p.name, "")}
    roots = [it for it in facts.items
             if it.returns or any(b.root in written for b in it.defs)]
    output = _closure(roots, defs_of, lambda it: it.value_uses)
    control = _closure([it for it in facts.items if it.kind in _CONTROL_KINDS], defs_of,
                       lambda it: it.value_uses | it.index_uses, exclude=output)
    seeds = _definers(defs_of, (b for it in facts.items if it in output or it in control
                                for b in it.index_uses))
    indexing = _closure(seeds, defs_of, lambda it: it.value_uses | it.index_uses,
                        exclude=output | control)
    kinds: dict[Item, str] = {}
    for item in facts.items:
        kinds[item] = (OUTPUT if item in output else CONTROL_FLOW if item in control
                       else INDEXING if item in indexing else UNUSED)
    return kinds


def _definers(defs_of: dict[DeclaredName, list[Item]], bindings: Iterable[DeclaredName]
              ) -> list[Item]:
    """The items that define any of `bindings` (or the variable each is part of)."""
    looked_up: set[DeclaredName] = set()
    out: list[Item] = []
    for b in bindings:
        for key in (b, b.root):
            if key not in looked_up:
                looked_up.add(key)
                out += defs_of.get(key, [])
    return out


def _closure(seeds: list[Item], defs_of: dict[DeclaredName, list[Item]],
             uses: Callable[[Item], Iterable[DeclaredName]],
             exclude: set[Item] | frozenset[Item] = frozenset()) -> set[Item]:
    """The items reachable from `seeds` through the definers of what each uses. A
    variable's definers are followed once: following them for every item that uses the
    variable made N statements updating one array quadratic (N times N definers)."""
    seen: set[Item] = set()
    looked_up: set[DeclaredName] = set()
    work = [it for it in seeds if it not in exclude]
    while work:
        item = work.pop()
        if item in seen:
            continue
        seen.add(item)
        for b in uses(item):
            for key in (b, b.root):
                if key not in looked_up:
                    looked_up.add(key)
                    work.extend(d for d in defs_of.get(key, ())
                                if d not in seen and d not in exclude)
    return seen
