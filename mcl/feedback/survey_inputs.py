"""Everything the lock-step walk of one access reads (mcl.feedback.lockstep: the
bank-conflict survey of a shared access, the lanes and addresses of a global one), as a
key: equal for the access of the next analysis that an edit left as it was, so that the
editor's worker finds the walk's result instead of walking the warps again (the paper's
section 6.5: the function judges each access from its address, its guards and the loops
around it).

The walk is a pure function of what the numeric evaluator reads for the access: its
address formula and element layout, the formulas of the guards around it, the shapes of
the loops around it (counters, values, trip counts), the accesses it may pair with
(their distance and which one issues the pair), the split of an index the data decide,
the user's values and the level's lock-step group and banks. The formulas are SymPy's,
made with the last analysis's dummies (mcl.feedback.facts.stable_dummies), so an
untouched access's key comes back equal, and a changed input makes it differ.

Where a formula names the counter of a loop that is not around the access (its shape is
then not in the key) the access has no key and is walked again every time.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import sympy

from mcl.feedback.data_conflicts import data_index
from mcl.feedback.facts.kernel import Item
from mcl.feedback.facts.layout import element_layout, flat_index
from mcl.feedback.facts.nest_counts import shape_key
from mcl.feedback.issued_accesses import Twin
from mcl.feedback.kernel_api import Kernel, MemoryInstruction, MissingValues, NotStatic
from mcl.hdl.model import ParGroup


def survey_key(kernel: Kernel, lockstep: ParGroup, groups: frozenset[str], banks: int,
               instruction: MemoryInstruction, pairs: Sequence[Twin]
               ) -> Hashable | None:
    """The inputs of the walk of `instruction` on the lock-step group `lockstep` (the
    block's par_groups `groups`; `banks` banks, 0 for a global access), with its twins
    `pairs` (none for a global access); None where a formula reads a loop the key does
    not describe, or the split of a data-decided index needs a value the survey may not
    ask for."""
    access = instruction.access
    address = sympy.sympify(flat_index(kernel.facts, access))
    try:
        split = data_index(kernel, instruction)
    except (MissingValues, NotStatic):
        return None  # (the survey asks only where the address is not static)
    formulas = [address, *(t.step for t in pairs)] + \
        ([] if split is None else [split.known])
    return item_key(kernel, lockstep, groups, access.item, formulas, (
        "survey", banks, instruction.kind, instruction.space, instruction.unit,
        instruction.element_bytes, access.element, access.field,
        access.binding.storage is None, len(access.indices),
        element_layout(kernel.facts, access.binding, access.field), address,
        tuple((t.step, t.carries) for t in pairs),
        None if split is None else (split.known, split.spread)))


def item_key(kernel: Kernel, lockstep: ParGroup, groups: frozenset[str], item: Item,
             formulas: Sequence[Any], more: tuple[Any, ...]) -> Hashable | None:
    """What a walk of the lanes that run `item` reads besides `formulas` and `more`
    (the access's): the formulas of its guards, the shapes of the loops around it, the
    user's values and the lock-step group; None where a formula reads a loop that is
    not around `item`."""
    symbolic = kernel.facts.evaluator
    conditions = tuple((symbolic.sym(guard.cond, guard.scope), guard.then)
                       for guard in item.guards)
    loops = tuple((shape_key(symbolic, loop), loop.group) for loop in item.loops)
    counters = {symbolic.counter(loop) for loop in kernel.facts.loops}
    read: set[sympy.Basic] = set()
    for formula in [*formulas, *(c for c, _ in conditions)]:
        if formula is not None:
            read |= sympy.sympify(formula).free_symbols
    for loop in item.loops:
        shape = symbolic.shape(loop)
        read |= sympy.sympify(shape.value).free_symbols | \
            sympy.sympify(shape.trips).free_symbols
    if (read & counters) - {symbolic.counter(loop) for loop in item.loops}:
        return None
    opaque = frozenset(s for s in read if symbolic.is_opaque(s))
    values = tuple(sorted(kernel.evaluator.values.items()))
    key = (lockstep.name, int(lockstep.count), groups, values, conditions, loops, opaque,
           more)
    # A value read from data is a new stand-in at every evaluation (the guard
    # `vals[k] != 0` has another in each analysis, and in each call): opaque to the
    # walk whichever it is, so each is named by its place among those of the key, one
    # name each, as distinct as before.
    stand_ins = sorted((s for s in read if symbolic.is_stand_in(s)),
                       key=sympy.default_sort_key)
    places = {s: sympy.Symbol(f"{s.name}#{k}", **s.assumptions0)
              for k, s in enumerate(stand_ins)}
    return _renamed(key, places) if places else key


def _renamed(part: Any, places: dict[sympy.Basic, sympy.Basic]) -> Any:
    """`part` (nested tuples and frozensets of SymPy objects and plain values) with the
    symbols of `places` replaced."""
    if isinstance(part, sympy.Basic):
        return part.xreplace(places)
    if isinstance(part, (tuple, frozenset)):
        return type(part)(_renamed(p, places) for p in part)
    return part
