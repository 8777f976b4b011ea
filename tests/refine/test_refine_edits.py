"""Edits of a kernel's text by spans: only the spans change, the rest stays as written."""

from __future__ import annotations

import pytest

from mcl.diagnostics import Span
from mcl.refine.edits import (
    TextEdit,
    apply_edits,
    changed_lines,
    indentation,
    span_text,
    unified_diff,
)

TEXT = "// keep me\nconst int N = 8;  // eight\n  int x = N;\n"


def test_a_replacement_keeps_the_comments_around_it() -> None:
    edit = TextEdit(2, 15, 2, 16, "16")
    after = apply_edits(TEXT, [edit])
    assert after == "// keep me\nconst int N = 16;  // eight\n  int x = N;\n"
    assert changed_lines(TEXT, after) == 2


def test_insertions_at_one_place_keep_their_order_and_spans_read_back() -> None:
    after = apply_edits(TEXT, [TextEdit.inserting(3, 1, "  a;\n"),
                               TextEdit.inserting(3, 1, "  b;\n")])
    assert after.splitlines()[2:4] == ["  a;", "  b;"]
    assert span_text(TEXT, Span("f", 2, 1, 2, 17)) == "const int N = 8;"
    assert indentation(TEXT, 3) == "  "


def test_overlapping_edits_are_refused() -> None:
    with pytest.raises(ValueError):
        apply_edits(TEXT, [TextEdit(2, 1, 2, 10, "x"), TextEdit(2, 5, 2, 12, "y")])


def test_the_diff_names_both_versions() -> None:
    diff = unified_diff(TEXT, TEXT.replace("8", "16"), "k.mcpl", "k.mcpl (next version)")
    assert diff.startswith("--- k.mcpl\n+++ k.mcpl (next version)\n")
    assert "-const int N = 8;  // eight\n+const int N = 16;  // eight\n" in diff
