"""The read/write inference keeps each function's result on its node with the modes of
the callees it asked about (mcl.mcpl.kept_answers): an edit walks again the function it
touched and the callers whose callees' modes changed. Each step of a sequence of edits --
inside one function, a callee that starts and stops writing its parameter (so its callers
and theirs change), a constant, a line above every function -- must give the parameter
modes and every variable's mode of an inference that keeps nothing, and the diagnostics
of a check that reuses nothing."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchmarks.bench_lsp_typing import DEFAULT, INSERTED, TYPED, body_start, module_of
from mcl.lsp.analysis import Libraries, check_document
from mcl.lsp.config import Effective
from mcl.mcpl import access, ast, check, parse
from mcl.mcpl.access import AccessTable
from mcl.source_files import set_overlay

from .conftest import KERNELS

# `outer` calls `scaled` (defined after it: the fixed point needs a second round), which
# passes elements of `x` to `twice`; `k` calls nothing.
MODULE = """\
const int K = 3;

perfect void outer(int n, float[n] y, float[n] x) {
  scaled(n, y, x);
}

perfect float twice(float x) {
  return x * 2.0;
}

perfect void scaled(int n, float[n] y, float[n] x) {
  foreach (int i in n threads) {
    y[i] = twice(x[i]);
  }
}

perfect void k(int n, int[n] out) {
  foreach (int i in n threads) {
    int x = out[i];
    out[i] = x + K;
  }
}
"""
WRITES = MODULE.replace("return x * 2.0;", "x = x + 1.0; return x;")


def _texts() -> list[tuple[str, str, set[str]]]:
    """(what, text, the functions whose variables' modes are inferred again)."""
    every = {"outer", "twice", "scaled", "k"}
    return [("the module", MODULE, every),
            ("inside k", MODULE.replace("x + K", "x + 2"), {"k"}),
            ("back", MODULE, {"k"}),
            # x becomes written in twice, so in scaled and then in outer
            ("the callee writes its parameter", WRITES, {"twice", "scaled", "outer"}),
            ("back", MODULE, {"twice"}),  # the callers' modes as in the first text
            ("the callee reads it otherwise", MODULE.replace("x * 2.0", "x + x"), {"twice"}),
            ("the constant", MODULE.replace("K = 3", "K = 4"), {"twice"}),
            ("outer writes y itself", MODULE.replace("K = 3", "K = 4").replace(
                "  scaled(n, y, x);", "  y[0] = x[0];"), {"outer"}),
            ("a line above all", "\n" + WRITES, every),
            ("back", MODULE, every)]


def _no_keeping(monkeypatch: pytest.MonkeyPatch) -> None:
    def compute(node: object, key: str, found: Callable[[], Any]) -> Any:
        return found()
    monkeypatch.setattr(ast, "kept_on", compute)


def _modes(table: AccessTable, program: Any) -> list[tuple[str, dict[str, str], Any]]:
    """Each function's parameter modes and its variables' modes (keyed by the declaring
    nodes, so only an inference over the same tree compares equal)."""
    return [(f.name, table.params(f), table.effects(f))
            for m in program.modules.values() for f in m.functions]


def _fresh_diagnostics(path: Path, text: str) -> list[Any]:
    kept = parse._kept
    parse.reuse_definitions(False)
    set_overlay(path, text)
    try:
        result = check_document(path, Effective(), Libraries())
    finally:
        set_overlay(path, None)
        parse._kept = kept
    return [(d.code, str(d), d.span) for d in result.diagnostics]


def _steps(path: Path, texts: list[tuple[str, str, set[str]]], libraries: Libraries,
           monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool, set[str], set[str]]]:
    """Per edit: (what, equal to what keeps nothing, functions walked, expected)."""
    walked: list[str] = []
    tables: list[AccessTable] = []
    effects, table_of = access.function_effects, check.access_table

    def walk(function: Any, modes: Any) -> Any:
        walked.append(function.name)
        return effects(function, modes)

    def table(program: Any) -> AccessTable:
        tables.append(table_of(program))
        return tables[-1]

    monkeypatch.setattr(access, "function_effects", walk)
    monkeypatch.setattr(check, "access_table", table)
    out = []
    for what, text, expected in texts:
        before = len(walked)
        set_overlay(path, text)
        try:
            result = check_document(path, Effective(), libraries)
        finally:
            set_overlay(path, None)
        ran = set(walked[before:])
        kept = _modes(tables[-1], result.program)
        with monkeypatch.context() as m:
            _no_keeping(m)
            fresh = _modes(table_of(result.program), result.program)
            same = kept == fresh and [(d.code, str(d), d.span) for d in result.diagnostics] \
                == _fresh_diagnostics(path, text)
        out.append((what, same, ran, expected))
    return out


def test_an_edit_infers_again_only_what_it_changed(
        tmp_path: Path, libraries: Libraries, monkeypatch: pytest.MonkeyPatch) -> None:
    path = (tmp_path / "module.mcpl").resolve()
    steps = _steps(path, _texts(), libraries, monkeypatch)
    for what, same, ran, expected in steps:
        assert same, what
        assert ran == expected, what
    result_modes = {}
    for text in (MODULE, WRITES):
        set_overlay(path, text)
        try:
            program = check_document(path, Effective(), libraries).program
        finally:
            set_overlay(path, None)
        result_modes[text] = check.infer_access(program)["outer"]["x"]
    assert result_modes == {MODULE: "r", WRITES: "rw"}  # the edit reaches the caller's caller


def test_a_result_kept_whatever_the_callees_say_is_caught(
        tmp_path: Path, libraries: Libraries, monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison above fails when a kept result ignores its callees' modes (`scaled`
    and `outer` would keep `x` read after `twice` writes it)."""
    def by_node_only(function: ast.Function, modes: Any) -> Any:
        return ast.kept_on(function, "_effects_by_node",
                           lambda: access.function_effects(function, modes))
    monkeypatch.setattr(access, "_kept_effects", by_node_only)
    steps = _steps((tmp_path / "module.mcpl").resolve(), _texts(), libraries, monkeypatch)
    assert not all(same for _, same, _, _ in steps)


def test_typing_into_the_2000_line_module_walks_the_edited_function(
        tmp_path: Path, libraries: Libraries, monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmark's module (docs/editor.md, "Latency"): the texts that parse while a
    statement is typed into its last function, and a statement inserted at once."""
    text = module_of([KERNELS / f"{name}.mcpl" for name in DEFAULT], 2000)
    last = re.findall(r"^\w+ void (\w+)\(", text, re.MULTILINE)[-1]
    at = body_start(text)
    typed = " " + TYPED
    texts = [("the module", text, set())]
    texts += [(f"typed {typed[:n]!r}", text[:at - 1] + typed[:n] + text[at - 1:], {last})
              for n in (1, 2, 5, len(typed))]
    texts += [("inserted", text[:at] + "  " + INSERTED + "\n" + text[at:], {last}),
              ("back", text, {last})]
    steps = _steps((tmp_path / "module.mcpl").resolve(), texts, libraries, monkeypatch)
    assert len(steps[0][2]) > 5  # the first check walks every function
    for what, same, ran, expected in steps[1:]:
        assert same, what
        assert ran == expected, what
