"""Equivalence between a parent's and a child's parallelism hierarchy (the paper's
Appendix A.2 and A.3, with the relaxation of hdl.md §3.4).

The translator uses these to move a kernel one level down; the loader uses
`check_hierarchy` so that a child whose hierarchy cannot be translated to is rejected at
load time rather than crashing a translation later.
"""

from __future__ import annotations

import math
from typing import Union

from mcl.diagnostics import Diagnostic, MclError, Span, error
from mcl.hdl.model import (
    HardwareDescription,
    MemorySpace,
    Number,
    Parallelism,
    ParGroup,
    ParGroupMapping,
    ParUnit,
    product_of_counts,
)

Level = Union[ParGroup, Parallelism]


def _parent_group(group: ParGroup) -> Level:
    """GETPARENTPARGROUP: the par_group around the par_unit that holds `group`."""
    return group.parent.group if isinstance(group.parent, ParUnit) else group.parent


def _nr_units(levels: list[Level]) -> Number:
    """NRUNITS of a list: the product of the sizes (Appendix A.2: unlimited absorbs all)."""
    return product_of_counts(g.count if isinstance(g, ParGroup) else 1 for g in levels)


def _describe(levels: list[Level]) -> str:
    def one(g: Level) -> str:
        if isinstance(g, Parallelism):
            return "the top of the hierarchy"
        count = "unlimited" if g.count == math.inf else f"{g.count:g}"
        return f"'{g.name}' ({'exactly' if g.exact else 'at most'} {count})"

    return " x ".join(one(g) for g in levels)


def _relaxed(frm: ParGroup, to: list[Level]) -> bool:
    """hdl.md §3.4: both groups state only an upper bound and the child's is the larger —
    every program respecting the parent's bound respects the child's, so one-to-one."""
    return (
        len(to) == 1
        and isinstance(to[0], ParGroup)
        and not frm.exact
        and not to[0].exact
        and to[0].count >= frm.count
    )


def _fail(parent: HardwareDescription, child: HardwareDescription, message: str,
          span: Span | None, hint: str | None = None) -> MclError:
    return MclError(error(
        "hdl-not-equivalent",
        f"the parallelism hierarchy of '{child.name}' does not refine that of "
        f"'{parent.name}': {message}",
        span or child.parallelism.span or child.span,
        hint or "a child may only add memory spaces, par_groups and par_units, or split a "
        "par_group into nested ones with more specific counts (hdl.md §3.4)",
    ))


def find_equivalent_par_groups(
    parent: HardwareDescription, child: HardwareDescription
) -> ParGroupMapping:
    """Appendix A.2 FINDEQUIVALENTPARGROUPS, started as in A.1 TRANSLATE from the par_groups
    of the two executing par_units. Returns [(from, [to, ...]), ...], outermost first
    (index 0 is (parallelism, [parallelism])). Raises MclError when not equivalent.
    perfect -> gpu: [(parallelism, [parallelism]), (threads, [blocks, threads])]."""
    try:
        frm0, to0 = parent.executing_unit().group, child.executing_unit().group
    except ValueError as exc:
        raise _fail(parent, child, str(exc), None) from None
    mapping: ParGroupMapping = [(frm0, [to0])]
    while True:  # the paper's tail recursion, as a loop
        frm, to = mapping[0]
        if isinstance(frm, Parallelism) and isinstance(to[0], Parallelism):
            return mapping
        if isinstance(frm, Parallelism) or isinstance(to[0], Parallelism):
            extra = to[0] if isinstance(frm, Parallelism) else frm
            side = child if isinstance(frm, Parallelism) else parent
            raise _fail(parent, child,
                        f"par_group '{extra.name}' of '{side.name}' has no equivalent "
                        "(not equivalent)",
                        getattr(extra, "span", None) if side is child else None)
        assert isinstance(frm, ParGroup)
        parent_from = _parent_group(frm)
        parent_to = _parent_group(to[0])
        n_from, n_to = frm.count, _nr_units(to)
        if n_from == n_to or _relaxed(frm, to):
            mapping = [(parent_from, [parent_to]), *mapping]
        elif n_from < n_to:
            raise _fail(parent, child,
                        f"'{frm.name}' of '{parent.name}' ({_describe([frm])}) has fewer units "
                        f"than {_describe(to)} of '{child.name}' (from less than to)",
                        getattr(to[-1], "span", None))
        elif isinstance(parent_to, Parallelism):
            mapping = [(parent_from, [parent_to]), *mapping]
        else:
            mapping[0] = (frm, [parent_to, *to])


def find_space_level(space: MemorySpace, mapping: ParGroupMapping) -> tuple[int, bool] | None:
    """Appendix A.3 FINDMEMORYSPACE: (level in the mapping, declared in the par_unit?)."""
    for level, (frm, _) in enumerate(mapping):
        if space.scope is frm:
            return level, False
        if isinstance(frm, ParGroup) and space.scope is frm.unit:
            return level, True
    return None


def equivalent_space(
    space_name: str,
    parent: HardwareDescription,
    child: HardwareDescription,
    mapping: ParGroupMapping,
) -> MemorySpace:
    """Appendix A.3 FINDEQUIVALENTMEMORYSPACE: a space declared in a par_unit maps to one of
    the innermost target par_unit, one declared in a par_group (or at the top) to one of
    the outermost target par_group. Among those, the first with the same read-only-ness;
    a read-only space may fall back to a writable one. (Refinement: among equally good
    candidates a space of the same name wins, then one with the same `default` flag.)
    gpu -> nvidia: equivalent_space('local', ...) is nvidia's `shared`."""
    ms = parent.memory_space(space_name)
    if ms is None:
        raise MclError(error("hdl-unknown-space",
                             f"'{parent.name}' has no memory space '{space_name}'"))
    found = find_space_level(ms, mapping)
    if found is None:
        raise _fail(parent, child, f"memory space '{space_name}' is outside the mapped "
                    "par_groups", None)
    level, in_unit = found
    targets = mapping[level][1]
    if in_unit:
        last = targets[-1]
        scope = last.unit if isinstance(last, ParGroup) else None
        candidates = scope.spaces if scope is not None else []
        where = f"par_unit '{scope.name}'" if scope is not None else "the innermost par_unit"
    else:
        first = targets[0]
        candidates = first.spaces
        where = ("the top of the hierarchy" if isinstance(first, Parallelism)
                 else f"par_group '{first.name}'")
    chosen = _pick(ms, candidates)
    if chosen is None:
        kind = "writable " if not ms.read_only else ""
        raise _fail(parent, child,
                    f"memory space '{space_name}' of '{parent.name}' has no equivalent: "
                    f"{where} of '{child.name}' declares no {kind}memory space",
                    getattr(targets[-1 if in_unit else 0], "span", None),
                    "spaces of a split par_group reappear in the outermost resulting "
                    "par_group, those of its par_unit in the innermost par_unit (hdl.md §3.4)")
    return chosen


def _pick(ms: MemorySpace, candidates: list[MemorySpace]) -> MemorySpace | None:
    def rank(c: MemorySpace) -> tuple[int, int]:
        return (c.name != ms.name, c.default != ms.default)

    same = [c for c in candidates if c.read_only == ms.read_only]
    if same:
        return min(same, key=rank)  # min is stable: declaration order breaks ties
    if ms.read_only and candidates:
        return min(candidates, key=rank)
    return None


def check_hierarchy(parent: HardwareDescription, child: HardwareDescription) -> list[Diagnostic]:
    """Load-time check (hdl.md §3.4): the par_groups of `child` are equivalent to those of
    `parent` and every memory space of `parent` has an equivalent in `child`."""
    try:
        mapping = find_equivalent_par_groups(parent, child)
    except MclError as exc:
        return exc.diagnostics
    problems: list[Diagnostic] = []
    for space in parent.memory_spaces():
        try:
            equivalent_space(space.name, parent, child, mapping)
        except MclError as exc:
            problems += exc.diagnostics
    return problems
