"""The model built from the parse tree (mcl/mcpl/tree.py) gives the same AST, spans
included, as textX's own model construction, on every MCPL source in the repository."""

from __future__ import annotations

from pathlib import Path

import pytest
from check_support import ast_tree
from textx.exceptions import TextXSyntaxError

from mcl.diagnostics import MclError
from mcl.mcpl.build import build_module, declared_hwd_names
from mcl.mcpl.parse import library_hwd_names, metamodel, parse_source, syntax_diagnostic

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted({*ROOT.glob("kernels/**/*.mcpl"), *ROOT.glob("kernels/**/*.mcl"),
                  *ROOT.glob("mcl/mcpl/stdlib/**/*.mcpl"), *ROOT.glob("tests/**/*.mcpl"),
                  *ROOT.glob("tests/**/*.mcl")})


def _with_textx_model(text: str, file: str):
    model = metamodel().model_from_str(text)
    return build_module(model, text, file, set(library_hwd_names()) | declared_hwd_names(model))


def _outcome(parse, text: str, file: str) -> object:
    try:
        return ast_tree(parse(text, file))
    except Exception as exc:  # noqa: BLE001 - the same failure counts as the same outcome
        return type(exc).__name__


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_same_ast_as_textx_builds(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    ours = _outcome(parse_source, text, str(path))
    theirs = _outcome(_with_textx_model, text, str(path))
    if isinstance(theirs, str):  # textX's syntax errors surface as MclError in parse_source
        assert isinstance(ours, str)
    else:
        assert ours == theirs


@pytest.mark.parametrize("text", [
    "",
    "// only a comment\n",
    "package a.b; module m; export f, g; import perfect;\n",
    "type T(int n) { float[n] x; };\nconst int N = 4;\n",
    "perfect void f(int n, const main float[n] a) {\n"
    "  foreach (const int i in n threads) { a[i] = -a[i] ^ 2 + (1.5e3 < 2.0 && true) + 0x1F; }\n"
    "}\n",
])
def test_small_modules_and_every_attribute_kind(text: str) -> None:
    assert _outcome(parse_source, text, "m.mcpl") == _outcome(_with_textx_model, text, "m.mcpl")


def test_a_grammar_with_a_cross_reference_is_refused() -> None:
    """textX resolves `b=[A]` to an object; the builder would leave a name, so it says so
    instead of building a different model."""
    from textx import metamodel_from_str

    from mcl.mcpl.tree import TreeModelBuilder

    with pytest.raises(NotImplementedError, match="cross-reference"):
        TreeModelBuilder(metamodel_from_str("M: a=A b=[A]; A: name=ID;"))


# Comments where they touch tokens, hide braces or never close: the same AST, spans and
# syntax errors as textX's own model construction (and any change to how the parse skips
# comments must keep them so).
@pytest.mark.parametrize("text", [
    "/* a { b ; */ perfect void f(int n /* , int m */, main float[n] a) {\n"
    "  // } ;\n  a[0] = 1; /* two\nlines */ a[1] = 2 // at the end\n; }\n",
    "perfect void f(int n) { int x = n / /* ratio */ 2; int y = n/*x*/*2; }\n",
    "/* // inside */ const int N = 1; // /* not a block\nconst int M = 2;\n",
    "// a\r\n/* b\r\n*/ const int N = 1;\r\n",
    "perfect void f(int n) {\n  int x = 1 /* never closed\n}\n",
    "perfect void f(int n) {\n  int x = 1; // no line break at the end",
    "perfect void f(int n) { int x = 1 /* c */ int y = 2; }\n",
    "/* first */ 42",
    "/* two\nlines */ perfect void f(int n) { // and\n  int x = 1 int y = 2; }\n",
])
def test_comments_give_the_same_ast_and_errors(text: str) -> None:
    def diagnostics(parse, text: str, file: str) -> object:
        try:
            return ast_tree(parse(text, file))
        except MclError as exc:
            return [str(d) for d in exc.diagnostics]
        except TextXSyntaxError as exc:
            return [str(syntax_diagnostic(exc, text, file))]

    ours = diagnostics(parse_source, text, "m.mcpl")
    assert ours == diagnostics(_with_textx_model, text, "m.mcpl")
