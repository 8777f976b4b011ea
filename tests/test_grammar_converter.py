"""Both grammars and their converters to our trees stay in step (mcl/grammar_converter.py):
every alternative of a choice rule has a `rule_` method and every `rule_` method names a
rule, checked when the metamodel is built."""

from __future__ import annotations

from typing import Any

import pytest

from mcl.grammar_converter import GrammarConverter, GrammarMismatch
from mcl.hdl.syntax import _Converter, _metamodel
from mcl.mcpl.build import ModelBuilder
from mcl.mcpl.parse import metamodel


def test_the_shipped_converters_match_their_grammars() -> None:
    assert ModelBuilder.mismatches(metamodel(), "mcpl") == []
    assert _Converter.mismatches(_metamodel(), "hdl") == []
    assert {"Stmt", "Primary"} <= set(ModelBuilder.CHOICES)


class Partial(GrammarConverter):
    """Converts blocks only, and names a rule the grammar does not have."""

    CHOICES = ("Stmt", "Gadget")

    def rule_Block(self, b: Any) -> str:
        return "block"

    def rule_Widget(self, w: Any) -> str:
        return "widget"


def test_a_missing_or_stray_conversion_is_named() -> None:
    problems = Partial.mismatches(metamodel(), "mcpl")
    assert "Partial.rule_Widget names no rule of mcpl.tx" in problems
    assert "Partial.CHOICES names no rule Gadget of mcpl.tx" in problems
    assert "mcpl.tx: Stmt can be Foreach, which Partial has no rule_Foreach for" in problems
    assert not any("rule_Block" in p for p in problems)
    with pytest.raises(GrammarMismatch, match="rule_Widget"):
        Partial.check(metamodel(), "mcpl")


def test_convert_refuses_an_object_of_an_unknown_rule() -> None:
    class Gizmo:
        pass

    with pytest.raises(GrammarMismatch, match="Partial has no rule_Gizmo"):
        Partial().convert(Gizmo())
