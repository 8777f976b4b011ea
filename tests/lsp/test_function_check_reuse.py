"""The check of a function's body is kept on its node (mcl.mcpl.function_check): in a
module of several functions, an edit inside one checks that one again, and each of the
others writes its kept diagnostics and side-table entries. Each step of a sequence of
edits -- inside one function, of a helper it calls, of a constant, of a line above every
function, and back -- must give the diagnostics, the tree and the side tables (every
type, binding and declaration, in the order the check wrote them, the bindings the very
objects of the declarations) of a check that reuses nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcl.identity import Ref
from mcl.lsp.analysis import Libraries, check_document
from mcl.lsp.config import Effective
from mcl.mcpl import ast, function_check, function_inputs, parse
from mcl.mcpl.check_function import FunctionChecker
from mcl.mcpl.sidetables import Binding, SideTables
from mcl.source_files import set_overlay
from tests.mcpl.check_support import ast_tree

# `scaled` calls `twice`, which writes nothing; `b` reads K; `k` neither. An unused
# variable in `k` and an index past `t` in `b` at K = 4 are what the diagnostics show.
MODULE = """\
const int K = 3;

perfect float twice(float x) {
  return x * 2.0;
}

perfect void scaled(int n, float[n] y, float[n] x) {
  foreach (int i in n threads) {
    y[i] = twice(x[i]);
  }
}

perfect void b(int n, int[n] out) {
  foreach (int i in n threads) {
    int[4] t;
    t[0] = 0;
    for (int j = 0; j < K; j++) {
      t[j + 1] = j;
    }
    out[i] = t[0];
  }
}

perfect void k(int n, int[n] out) {
  foreach (int i in n threads) {
    int x = out[i];
    out[i] = x + 1;
  }
}
"""


def _texts() -> list[tuple[str, str, set[str]]]:
    """(what, text, the functions whose bodies are checked again)."""
    every = {"twice", "scaled", "b", "k"}
    inside = MODULE.replace("x + 1", "x + 2")
    unused = MODULE.replace("    int x = out[i];\n", "    int x = out[i];\n    int u = 1;\n")
    helper = MODULE.replace("return x * 2.0;", "x = x + 1.0; return x;")
    four = MODULE.replace("K = 3", "K = 4")
    return [("the module", MODULE, every), ("inside k", inside, {"k"}),
            ("back", MODULE, {"k"}), ("an unused variable in k", unused, {"k"}),
            # (and k as before the unused variable)
            ("the helper writes its parameter", helper, {"twice", "scaled", "k"}),
            ("back", MODULE, {"twice", "scaled"}), ("the constant", four, every),
            ("inside k at K = 4", four.replace("x + 1", "x + 2"), {"k"}),
            ("a line above all", "\n" + four, every), ("back", MODULE, every)]


def _view(tables: SideTables, program: Any) -> tuple[Any, ...]:
    """The side tables with each node as its place in a walk of the program (so that
    two checks' tables compare), in the order they were written."""
    place: dict[Ref[object], int] = {}
    for module in program.modules.values():
        for node in ast.walk(module):
            place.setdefault(Ref(node), len(place))

    def where(node: object) -> object:
        return place.get(Ref(node), repr(node))

    def binding(b: Binding) -> tuple[Any, ...]:
        return (b.name, b.kind, b.type, b.spaces, b.const, where(b.node))

    for b in tables.bindings.values():  # one object per declaration
        assert tables.declared[Ref(b.node)] is b
    return (tuple((where(r.obj), t) for r, t in tables.types.items()),
            tuple((where(r.obj), binding(b)) for r, b in tables.bindings.items()),
            tuple((where(r.obj), binding(b)) for r, b in tables.declared.items()))


def _check(path: Path, text: str, libraries: Libraries) -> tuple[Any, ...]:
    set_overlay(path, text)
    try:
        result = check_document(path, Effective(), libraries)
    finally:
        set_overlay(path, None)
    return ([(d.code, str(d), d.span) for d in result.diagnostics],
            ast_tree(result.program), _view(result.tables, result.program))


def _fresh(path: Path, text: str, libraries: Libraries,
           monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    """The check of a process that reuses nothing."""
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


def _checked_bodies(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the functions whose bodies the checker walks, in order."""
    ran: list[str] = []
    original = FunctionChecker.run

    def spy(self: FunctionChecker) -> Any:
        if self.function.name != "<constants>":
            ran.append(self.function.name)
        return original(self)
    monkeypatch.setattr(FunctionChecker, "run", spy)
    return ran


def _steps(tmp_path: Path, libraries: Libraries, monkeypatch: pytest.MonkeyPatch
           ) -> list[tuple[str, bool, set[str], set[str]]]:
    """Per edit: (what, equal to the check that reuses nothing, bodies checked, expected)."""
    ran = _checked_bodies(monkeypatch)
    path = (tmp_path / "module.mcpl").resolve()
    path.write_text(MODULE, encoding="utf-8")
    out = []
    for what, text, expected in _texts():
        before = len(ran)
        kept = _check(path, text, libraries)
        checked = set(ran[before:])
        out.append((what, kept == _fresh(path, text, libraries, monkeypatch), checked,
                    expected))
    return out


def test_an_edit_checks_again_only_the_bodies_it_touched(
        tmp_path: Path, libraries: Libraries, monkeypatch: pytest.MonkeyPatch) -> None:
    codes = []
    for what, same, checked, expected in _steps(tmp_path, libraries, monkeypatch):
        assert same, what
        assert checked == expected, what
    path = (tmp_path / "module.mcpl").resolve()
    for _, text, _ in _texts():
        codes.append({d[0] for d in _check(path, text, libraries)[0]})
    assert "mcpl-unused-variable" in codes[3] and "mcpl-index-range" in codes[6]
    assert codes[0] == codes[2] == set()


def test_a_key_that_leaves_out_the_callees_is_caught(
        tmp_path: Path, libraries: Libraries, monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison above fails when a kept check ignores the functions it calls
    (`scaled` would keep the parameter modes of the helper before its edit)."""
    monkeypatch.setattr(function_check, "function_inputs",
                        lambda program, f: function_inputs.function_inputs(program, f)[:2])
    steps = _steps(tmp_path, libraries, monkeypatch)
    assert not all(same for _, same, _, _ in steps)
