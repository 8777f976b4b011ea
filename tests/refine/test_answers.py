"""The table of what each refinement answers (mcl.refine.answers), which `mcl check`
reads without loading the refinements, is what the refinements declare."""

from __future__ import annotations

from mcl.cli import _answered_changes
from mcl.refine.answers import ANSWERS, answered_changes
from mcl.refine.offers import REFINEMENTS


def test_the_table_is_what_every_refinement_answers() -> None:
    declared = {r.name: tuple(r.answers) for r in REFINEMENTS if r.answers}
    assert declared == ANSWERS
    assert answered_changes() == {t.__name__ for r in REFINEMENTS for t in r.answers}


def test_the_command_line_tells_the_feedback_the_table() -> None:
    assert _answered_changes() == answered_changes()
    assert {"RemoveBankConflict", "KeepInRegister"} <= answered_changes()
