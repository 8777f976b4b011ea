"""The language server resolves names through the checker's side tables
(mcl/mcpl/sidetables.py): definitions, references, rename, hover and highlighting agree
with the binding the checker recorded for each name."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl import pipeline
from mcl.hdl.library import load_library
from mcl.lsp import hover, lookup, navigation, references, tokens
from mcl.mcpl import ast

KERNEL = """\
const int N = 8;
perfect void k(int n, float[n] a, float[N] b) {
  a as float[n / 2][2] pairs;
  foreach (int i in n / 2 threads) {
    float x = pairs[i][0];
    for (int N = 0; N < 2; N++) {
      float x = pairs[i][N];
      pairs[i][1] = x;
    }
    pairs[i][0] = x + b[0];
  }
}
"""


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pipeline.SourceCheck]:
    path = tmp_path_factory.mktemp("tables") / "k.mcpl"
    path.write_text(KERNEL, encoding="utf-8")
    found = pipeline.check_source(path, [], load_library([], use_env=False))
    assert found.program is not None
    assert not [d for d in found.diagnostics if d.severity.value == "error"]
    return path, found


def _at(node: ast.Name) -> tuple[int, int]:
    assert node.span is not None
    return node.span.line - 1, node.span.column - 1


def test_every_name_goes_to_the_declaration_the_checker_bound(
        checked: tuple[Path, pipeline.SourceCheck]) -> None:
    path, found = checked
    assert found.program is not None
    names = [n for n in ast.walk(found.program.main) if isinstance(n, ast.Name)]
    declarations = set()
    for name in names:
        bound = found.tables.binding_of(name)
        assert bound is not None
        where = navigation.kernel_definition(found.program, found.tables, None, path, KERNEL,
                                             *_at(name))
        assert where == navigation.location(lookup.name_span(bound.node, name.name))
        declarations.add(bound)
    # The two `x` and the two `N` (a constant, a loop variable) are told apart, although
    # their uses are equal nodes: eight declarations.
    assert {(b.name, b.kind.value) for b in declarations} == {
        ("n", "parameter"), ("b", "parameter"), ("pairs", "view"), ("i", "foreach index"),
        ("x", "variable"), ("N", "loop variable"), ("N", "constant")}
    assert len(declarations) == 8  # the two `x`


def test_references_are_the_uses_bound_to_the_same_declaration(
        checked: tuple[Path, pipeline.SourceCheck]) -> None:
    path, found = checked
    assert found.program is not None
    lines = KERNEL.split("\n")
    # The constant N: its declaration and its use in `float[N] b`, not the loop's N.
    line = 1
    target = references.target_at(found.program, found.tables, path, "N", line,
                                  lines[line].index("N]"))
    assert target is not None and target[0].kind == "constant"
    spans = references.references(found.tables, target[0])
    assert [(s.line, s.column) for s in spans] == [(1, 11), (2, lines[1].index("N]") + 1)]
    # The loop variable N: its declaration and its three uses in the loop.
    line = 5
    target = references.target_at(found.program, found.tables, path, "N", line,
                                  lines[line].index("N <"))
    assert target is not None and target[0].kind == "variable"
    assert len(references.references(found.tables, target[0])) == 4


def test_rename_of_a_viewed_array_renames_the_view_source(
        checked: tuple[Path, pipeline.SourceCheck]) -> None:
    path, found = checked
    assert found.program is not None
    line = 1
    target = references.target_at(found.program, found.tables, path, "a", line,
                                  KERNEL.split("\n")[line].index("a,"))
    assert target is not None
    spans = references.references(found.tables, target[0])
    # The parameter, and `a` in `a as float[n / 2][2] pairs;` (a ViewDecl names it).
    assert [(s.line, s.column, s.end_column) for s in spans] == [(2, 32, 33), (3, 3, 4)]


def test_hover_and_highlighting_read_the_bindings(
        checked: tuple[Path, pipeline.SourceCheck]) -> None:
    path, found = checked
    assert found.program is not None
    lines = KERNEL.split("\n")
    line = 6
    text = hover.kernel_hover(found.program, found.tables, None, [], path, KERNEL, line,
                              lines[line].index("N]"))
    assert text is not None and text.startswith("**N**: loop variable, `int`")
    line = 9
    text = hover.kernel_hover(found.program, found.tables, None, [], path, KERNEL, line,
                              lines[line].index("b["))
    assert text is not None and text.startswith("**b**: parameter")
    data = tokens.semantic_tokens(
        KERNEL, tokens.classify(found.program.main, found.tables, None), len)
    kinds = _decoded(data)
    # The constant N is read-only where it is used; the loop's N is a variable.
    assert kinds[(1, lines[1].index("N]"))] == ("variable", {"readonly"})
    assert kinds[(5, lines[5].index("N <"))] == ("variable", set())


def _decoded(data: list[int]) -> dict[tuple[int, int], tuple[str, set[str]]]:
    out = {}
    line = column = 0
    for i in range(0, len(data), 5):
        dl, dc, _, kind, mods = data[i:i + 5]
        line += dl
        column = column + dc if dl == 0 else dc
        out[(line, column)] = (tokens.TYPES[kind],
                               {m for j, m in enumerate(tokens.MODIFIERS) if mods >> j & 1})
    return out


def test_an_imported_constant_goes_to_and_hovers_from_its_own_module(tmp_path: Path) -> None:
    (tmp_path / "util").mkdir()
    (tmp_path / "util" / "sizes.mcpl").write_text(
        "package util;\nmodule sizes;\nimport perfect;\nexport WIDTH;\n"
        "const int WIDTH = 16;\n", encoding="utf-8")
    text = ("import util.sizes;\nperfect void k(float[WIDTH] a) {\n"
            "  foreach (int i in WIDTH threads) {\n    a[i] = 0.0;\n  }\n}\n")
    path = tmp_path / "k.mcpl"
    path.write_text(text, encoding="utf-8")
    found = pipeline.check_source(path, [tmp_path], load_library([], use_env=False))
    assert found.program is not None and not found.diagnostics
    line = 2
    column = text.split("\n")[line].index("WIDTH")
    where = navigation.kernel_definition(found.program, found.tables, None, path, text, line,
                                         column)
    assert where is not None and where.uri.endswith("util/sizes.mcpl")
    assert where.range.start.line == 4
    shown = hover.kernel_hover(found.program, found.tables, None, [], path, text, line, column)
    assert shown is not None and shown.startswith("**WIDTH**: constant, `const int`")
