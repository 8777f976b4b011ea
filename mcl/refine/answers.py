"""The proposed changes of the feedback each refinement answers, by refinement name: the
one table `Refinement.answers` reads, light to import (the findings' types only, not the
refinements with their code generation and numpy), so that `mcl check` and the editor
tell the default view which suggestions a refinement answers (mcl.feedback.refinable)
without loading the refinements. A refinement that answers no finding (set-constant,
unroll) has no entry."""

from __future__ import annotations

from mcl.feedback.findings import (
    CoalesceAccess,
    ComputeSeveralElements,
    KeepInRegister,
    PrivatiseArray,
    ProposedChange,
    RemoveBankConflict,
    ShareInFasterMemory,
)

ANSWERS: dict[str, tuple[type[ProposedChange], ...]] = {
    "hoist-load": (KeepInRegister,),
    "pad-shared": (RemoveBankConflict,),
    "stage-tile": (ShareInFasterMemory,),
    "swap-mapping": (CoalesceAccess,),
    "row-per-warp": (CoalesceAccess,),
    "stage-transpose": (CoalesceAccess,),
    "several-elements": (ComputeSeveralElements,),
    "privatise": (PrivatiseArray,),
}


def answered_changes() -> frozenset[str]:
    """The names of the change types some refinement answers."""
    return frozenset(t.__name__ for types in ANSWERS.values() for t in types)
