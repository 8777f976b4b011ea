"""Barrier semantics: units of a group advance together from barrier to barrier.

A `barrier(S)` synchronises all units that share memory space S (mcpl.md §4, paper
section 4.3): the executing units below one instance of the scope that declares S. For a
barrier nested in foreach statements, that set is the units of one *root* foreach —
a foreach whose par_group differs from the enclosing foreach's (directly nested foreach
statements over the same par_group are extra dimensions of one set of units, Fig. 2).
The root that resolves `barrier(S)` is the outermost enclosing root whose par_group lies
at or below the scope of S: e.g. on gpu, `barrier(local)` (local lives in `block`)
resolves at the `threads` foreach of one block, `barrier(dev)` at the `blocks` foreach.

At run time each unit whose code can reach a barrier is a generator that yields a
`BarrierToken` at the barrier. A foreach runs its units in phases: it advances every unit
to its next barrier (or to its end); when all arrived at the same barrier, the phase is
over. If the token belongs to an outer root, the foreach passes it up (it is a generator
itself) and resumes its units when the outer root resumes it.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass

from mcl.diagnostics import MclError, Span, error
from mcl.hdl.model import HardwareDescription, Parallelism, ParGroup, ParUnit
from mcl.identity import Ref
from mcl.mcpl import ast


@dataclass(frozen=True, eq=False)
class BarrierToken:
    """What a unit yields when it reaches a barrier statement (one token per statement)."""

    space: str
    root: Ref[ast.Foreach]  # the root foreach that resolves this barrier
    span: Span | None


@dataclass(frozen=True)
class ForeachInfo:
    """A foreach on the compile-time stack around a statement."""

    id: Ref[ast.Foreach]  # the statement itself (equal foreach statements are distinct roots)
    group: str
    is_root: bool
    span: Span | None
    # Slot of each unit's frame holding how many units of `group` run inside one
    # enclosing unit so far (`mcl.translate.unit_limits`); None when the group is unlimited.
    units_slot: int | None = None


def scope_depth(scope: Parallelism | ParGroup | ParUnit) -> int:
    """Nesting depth in the parallelism hierarchy: the root 0, its par_group 1, that
    group's par_unit 2, the next par_group 3, ..."""
    depth = 0
    while not isinstance(scope, Parallelism):
        scope = scope.group if isinstance(scope, ParUnit) else scope.parent
        depth += 1
    return depth


def resolving_root(
    space: str, stack: list[ForeachInfo], hwd: HardwareDescription | None, span: Span | None
) -> ForeachInfo | None:
    """The root foreach whose units `barrier(space)` synchronises; None outside foreach
    statements (the host has nobody to wait for)."""
    roots = [f for f in stack if f.is_root]
    if not roots:
        return None
    declared = hwd.memory_space(space) if hwd is not None else None
    if declared is None:
        # Without a hardware description (or for a space it does not know) the natural
        # reading is the innermost set of units, e.g. the threads of one block.
        return roots[-1]
    space_depth = scope_depth(declared.scope)
    for root in roots:
        group = hwd.par_group(root.group) if hwd is not None else None
        if group is not None and scope_depth(group) >= space_depth:
            return root
    raise MclError(
        error(
            "interp-barrier-space",
            f"barrier({space}): memory space '{space}' is not shared by the units of any "
            "enclosing foreach statement",
            span,
            hint="a barrier names a space declared outside the units that synchronise",
        )
    )


def lockstep(
    units: list[Iterator[BarrierToken]], root_id: Ref[ast.Foreach] | None, where: str
) -> Generator[BarrierToken, None, None]:
    """Run `units` phase by phase; yield the tokens of barriers that an outer root resolves.

    `where` describes the foreach for messages. A barrier reached by some but not all of
    the units, or units waiting at different barriers, is an error: on a device it would
    hang or be undefined."""
    while True:
        tokens: list[BarrierToken] = []
        finished = 0
        for unit in units:
            try:
                tokens.append(next(unit))
            except StopIteration:
                finished += 1
        if not tokens:
            return
        first = tokens[0]
        if finished:
            raise MclError(
                error(
                    "interp-barrier-divergence",
                    f"barrier({first.space}) was reached by {len(tokens)} of "
                    f"{len(tokens) + finished} units of {where}; the other units finished "
                    "without reaching it",
                    first.span,
                    hint="every unit that shares the space must execute the same barriers: "
                    "keep barriers out of conditions and loops whose trip count differs "
                    "between units",
                )
            )
        for token in tokens:
            if token is not first:
                raise MclError(
                    error(
                        "interp-barrier-divergence",
                        f"units of {where} wait at different barriers: this one and the "
                        f"barrier at {token.span}",
                        first.span,
                        hint="every unit that shares the space must execute the same barriers",
                    )
                )
        if first.root != root_id:
            yield first
