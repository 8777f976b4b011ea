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
from mcl.mcpl import ast, function_flow, parse
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


# Two functions in one module: the loop in `a` stays inside `t` while K is 3, not at 4
# (mcpl-index-range, found by the constant extents with the module's constants).
MODULE = """\
const int K = 3;

perfect void a(int n, int[n] b) {
  foreach (int i in n threads) {
    int[4] t;
    t[0] = 0;
    for (int j = 0; j < K; j++) {
      t[j + 1] = j;
    }
    b[i] = t[0];
  }
}

perfect void k(int n, int[n] b) {
  foreach (int i in n threads) {
    int x = b[i];
    b[i] = x + 1;
  }
}
"""


def _module_texts() -> list[str]:
    """Edits inside `k` only, and of the constant that `a` reads, and back."""
    inside = MODULE.replace("x + 1", "x + 2")
    inserted = MODULE.replace("    int x = b[i];\n", "    int x = b[i];\n    x = x * 2;\n")
    four = MODULE.replace("K = 3", "K = 4")
    shifted = four.replace("K = 4;\n", "K = 4;\n\n")  # a and k a line lower
    return [MODULE, inside, MODULE, inserted, four, four.replace("x + 1", "x + 2"), four,
            shifted, four, MODULE, inside]


def _flow_checks_by_function(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the functions whose flow checks ran, in order."""
    ran: list[str] = []
    original = function_flow.barrier_warnings

    def spy(function: ast.Function, *args: Any) -> Any:
        ran.append(function.name)
        return original(function, *args)
    monkeypatch.setattr(function_flow, "barrier_warnings", spy)
    return ran


def _module_steps(tmp_path: Path, libraries: Libraries, monkeypatch: pytest.MonkeyPatch
                  ) -> list[bool]:
    """For each step of the module's edits: the diagnostics and tree equal a check's
    that reuses nothing."""
    path = (tmp_path / "module.mcpl").resolve()
    path.write_text(MODULE, encoding="utf-8")
    same = []
    for text in _module_texts():
        kept = _check(path, text, libraries)
        same.append(kept == _fresh(path, text, libraries, monkeypatch))
    return same


def test_an_edit_inside_one_function_checks_the_flow_of_that_one_only(
        tmp_path: Path, libraries: Libraries, monkeypatch: pytest.MonkeyPatch) -> None:
    ran = _flow_checks_by_function(monkeypatch)
    path = (tmp_path / "module.mcpl").resolve()
    path.write_text(MODULE, encoding="utf-8")
    codes = []
    for step, text in enumerate(_module_texts()):
        before = len(ran)
        diagnostics, program = _check(path, text, libraries)
        checked = ran[before:]
        assert (diagnostics, program) == _fresh(path, text, libraries, monkeypatch), step
        codes.append([d.code for d in diagnostics])
        if step in (1, 3):  # an edit inside k: a's flow checks are kept
            assert checked == ["k"], step
        if step == 4:  # K read by a: a is checked again with its new value
            assert "a" in checked, step
        if step == 6:  # a's node and values as at step 4: a's result is kept
            assert "a" not in checked, step
    assert codes[0] == [] and "mcpl-index-range" in codes[4]
    assert codes[9] == []


def test_a_key_that_leaves_out_the_constants_is_caught(
        tmp_path: Path, libraries: Libraries, monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison above fails when the kept results ignore the values of the names
    (the function `a` is unchanged when K becomes 4 and would keep its clean result)."""
    monkeypatch.setattr(function_flow, "_key", lambda known, hwd: ((), hwd))
    assert not all(_module_steps(tmp_path, libraries, monkeypatch))
