"""Which proposed changes a refinement can make, where a higher layer tells.

The default view shows a suggestion only as a refinement with its estimated gain
(docs/feedback.md, "What a report shows"): its finding's proposed change
(mcl.feedback.findings) must be one some refinement answers (`Refinement.answers`,
mcl.refine). Feedback stands below the refinements (docs/architecture.md, "Layers"), so
it cannot ask them itself: the command line and the editor's worker hand it a function
that names the change types they answer (`mcl.refine.answers.answered_changes`) before
they run, as they hand it the compiler's register count
(mcl.feedback.compiler_registers); it is called when a report first asks, so a command
without feedback loads nothing of it. Without one (a program that calls the analyses
directly) no change is answered, and the default view shows no suggestion.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

Names = Callable[[], Iterable[str]]
_teller: list[Names] = []
_told: list[frozenset[str]] = []


def use_answered(names: Names | None) -> None:
    """Ask `names` for the names of the ProposedChange types some refinement answers
    (None: none is answered)."""
    _teller[:] = [names] if names is not None else []
    _told.clear()


def answered() -> frozenset[str]:
    """The names of the change types some refinement answers (empty: none told)."""
    if not _told:
        _told.append(frozenset(_teller[0]()) if _teller else frozenset())
    return _told[0]
