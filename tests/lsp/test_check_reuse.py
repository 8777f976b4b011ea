"""The check behind the editor's diagnostics reuses what an edit did not change: the
parse of unchanged definitions and of the statements around the edit
(mcl.mcpl.parse.reuse_definitions, mcl.mcpl.statement_reuse) and what each node of the
tree was found to hold (its children, walk, names: mcl.mcpl.ast.kept_on). Each step of a
sequence of code edits -- a constant, an inserted statement, a statement typed key by key
(most of its texts do not parse), a loop bound, the text back as it was -- must give the
diagnostics and the tree of a check that reuses nothing, word for word and span for
span."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcl.lsp.analysis import Libraries, check_document
from mcl.lsp.config import Effective
from mcl.mcpl import ast, parse
from mcl.source_files import set_overlay
from tests.mcpl.check_support import ast_tree, spy_on_statement_parse

from .conftest import KERNELS

ROOT = KERNELS.parent
# The largest kernel to check, and two that the barrier check warns about (what the
# flow analyses find from the names each node holds).
SOURCES = [KERNELS / "spmv/hopper_v17.mcpl",
           ROOT / "tests/mcpl/barrier_kernels/tree_without_barrier.mcpl",
           ROOT / "tests/mcpl/barrier_kernels/reused_name_tree_without_barrier.mcpl"]
TYPED = "float bench_scale = 2.0;"


def _texts(base: str) -> list[str]:
    """The edits: a number in the last statement of the kernel changed, a statement
    inserted at the top of its body, one typed there key by key, a `for` loop's bound."""
    body = base.index("{", base.index("void ")) + 1
    last = base.rindex(";", 0, base.rindex("}"))
    number = next(k for k in range(last, 0, -1) if base[k].isdigit())
    constant = base[:number] + "7" + base[number + 1:]
    inserted = base[:body] + "\n  int bench_t = 1;" + base[body:]
    typed = [base[:body] + "\n  " + TYPED[:k] + base[body:] for k in range(1, len(TYPED) + 1)]
    bound = base.find("; i < ")
    looped = base[:bound] + "; i < 1 + " + base[bound + len("; i < "):] if bound > 0 else base
    return [base, constant, base, inserted, base, *typed, looped, constant, base]


def _check(path: Path, text: str, libraries: Libraries) -> tuple[list[Any], Any]:
    set_overlay(path, text)
    try:
        result = check_document(path, Effective(), libraries)
    finally:
        set_overlay(path, None)
    return result.diagnostics, ast_tree(result.program)  # (spans included)


def _fresh(path: Path, text: str, libraries: Libraries,
           monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], Any]:
    """The check of a process that reuses nothing: a whole-file parse and every node's
    facts found again."""
    kept = parse._kept
    parse.reuse_definitions(False)
    with monkeypatch.context() as m:
        def compute(node: object, key: str, found: Callable[[], Any]) -> Any:
            return found()
        m.setattr(ast, "kept_on", compute)
        m.setattr(ast, "_KEPT_WALKS", frozenset())
        try:
            return _check(path, text, libraries)
        finally:
            parse._kept = kept


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_code_edits_give_the_diagnostics_of_a_check_that_reuses_nothing(
        source: Path, libraries: Libraries, monkeypatch: pytest.MonkeyPatch) -> None:
    path = source.resolve()
    texts = _texts(source.read_text(encoding="utf-8"))
    made = spy_on_statement_parse(monkeypatch)
    published = set()
    for step, text in enumerate(texts):
        diagnostics, program = _check(path, text, libraries)
        fresh_diagnostics, fresh_program = _fresh(path, text, libraries, monkeypatch)
        assert diagnostics == fresh_diagnostics, f"step {step}"
        assert program == fresh_program, f"step {step}"
        published.add(tuple((d.code, str(d)) for d in diagnostics))
    assert len(published) >= 4  # the edits change what is published
    assert sum(made) >= 5, made  # most edits parsed only the statements they touched
    if "barrier" in source.parent.name:  # and the warnings compared are there
        assert any(code == "mcpl-missing-barrier" for found in published for code, _ in found)
