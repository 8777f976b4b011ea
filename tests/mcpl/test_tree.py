"""The model built from the parse tree (mcl/mcpl/tree.py) gives the same AST as textX's own
model construction, on every MCPL source in the repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl.mcpl.build import build_module, declared_hwd_names
from mcl.mcpl.parse import library_hwd_names, metamodel, parse_source

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted({*ROOT.glob("kernels/**/*.mcpl"), *ROOT.glob("kernels/**/*.mcl"),
                  *ROOT.glob("mcl/mcpl/stdlib/**/*.mcpl"), *ROOT.glob("tests/**/*.mcpl"),
                  *ROOT.glob("tests/**/*.mcl")})


def _with_textx_model(text: str, file: str):
    model = metamodel().model_from_str(text)
    return build_module(model, text, file, set(library_hwd_names()) | declared_hwd_names(model))


def _outcome(parse, text: str, file: str) -> object:
    try:
        return parse(text, file)
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
