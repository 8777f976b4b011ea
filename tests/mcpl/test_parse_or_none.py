"""`TreeModelBuilder.parse_or_none`: the model `parse` gives, or None exactly where
`parse` raises a syntax error, without Arpeggio's parse (the language server's reuse of
a definition's statements tries wrapped texts that may not parse and drops the error)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from check_support import ast_tree
from textx.exceptions import TextXSyntaxError

from mcl.mcpl import tree
from mcl.mcpl.build import build_module
from mcl.mcpl.parse import tree_builder

KERNEL = Path(__file__).resolve().parents[2] / "kernels" / "spmv" / "hopper_v20.mcpl"


def _texts() -> list[str]:
    """A shipped kernel, and copies cut short or with a character put in."""
    text = KERNEL.read_text()
    cuts = [text[:n] for n in range(200, len(text), len(text) // 7)]
    inserted = [text[:n] + c + text[n:] for n, c in
                zip(range(150, len(text), len(text) // 6), "@;{x(.", strict=False)]
    return [text, "perfect void f(int n) { }\n", *cuts, *inserted]


def _model(builder: Any, text: str) -> Any:
    try:
        model = builder.parse(text, "t.mcpl")
    except TextXSyntaxError:
        return None
    return ast_tree(build_module(model, text, "t.mcpl", set()))


@pytest.mark.parametrize("text", _texts())
def test_none_exactly_where_the_parse_fails(text: str, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    builder = tree_builder()
    expected = _model(builder, text)

    def no_arpeggio(self: Any) -> Any:
        raise AssertionError("Arpeggio's parse asked for")
    monkeypatch.setattr(tree.TreeModelBuilder, "metamodel", property(no_arpeggio))
    model = builder.parse_or_none(text, "t.mcpl")
    got = None if model is None else ast_tree(build_module(model, text, "t.mcpl", set()))
    assert got == expected
