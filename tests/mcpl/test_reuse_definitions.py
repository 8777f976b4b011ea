"""The editor's parse (mcl.mcpl.parse.reuse_definitions): each top-level definition
parsed alone and reused while its text and position stay, giving the very AST -- spans
included -- and the very errors of the whole-file parse."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from check_support import ast_tree
from check_support import parse_outcome as _outcome
from check_support import whole_parse as _whole

from mcl.mcpl import parse
from mcl.mcpl.parse import definition_ends, parse_source

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted({*ROOT.glob("kernels/**/*.mcpl"), *ROOT.glob("mcl/mcpl/stdlib/**/*.mcpl"),
                  *ROOT.glob("tests/**/*.mcpl"), *ROOT.glob("tests/**/*.mcl")})


@pytest.fixture
def reuse() -> Iterator[None]:
    parse.reuse_definitions()
    yield
    parse.reuse_definitions(False)


def _edits(text: str) -> list[str]:
    """A comment appended, a change inside the last definition on one line, a line
    inserted at the start of the last definition's body, the first definition removed."""
    last = text.rfind(";", 0, text.rfind("}"))
    body = text.rfind("{", 0, text.rfind("}"))
    ends = definition_ends(text)
    return [text + "// edit\n",
            text[:last] + "  " + text[last:] if last > 0 else text + " ",
            text[:body + 1] + "\n  int edited = 1;" + text[body + 1:] if body > 0 else text,
            text[ends[0]:] if ends else text]


@pytest.mark.slow
@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_same_ast_and_errors_as_the_whole_file_parse(path: Path, reuse: None) -> None:
    text = path.read_text(encoding="utf-8")
    file = str(path)
    assert _outcome(text, file) == _whole(text, file)
    for edited in _edits(text):
        assert _outcome(edited, file) == _whole(edited, file)
        assert _outcome(text, file) == _whole(text, file)  # and back


KERNEL = """package demo;
module m; // a module line goes with the first definition
import perfect;
const int N = 4; /* a brace in a comment: { */
type Pair { int a; int b; };
// a semicolon in a comment;
perfect void f(int n, float[n] a) {
  foreach (int i in n threads) { a[i] = a[i] * 2.0; }
}
perfect void g(int n, float[n] a) {
  foreach (int i in n threads) { a[i] = 0.0; }
}
"""


def test_definitions_end_at_their_semicolon_or_brace() -> None:
    ends = definition_ends(KERNEL)
    assert [KERNEL[:e].rstrip()[-1] for e in ends] == [";", ";", ";", ";", ";", "}", "}"]
    assert KERNEL[:ends[4]].endswith("int b; };")  # a type's ';' after its '}'


def test_an_edit_reuses_the_definitions_it_did_not_touch(reuse: None) -> None:
    before = parse_source(KERNEL, "m.mcpl")
    edited = KERNEL.replace("a[i] = 0.0", "a[i] = 1.0")
    after = parse_source(edited, "m.mcpl")
    assert after.functions[0] is before.functions[0]
    assert after.constants[0] is before.constants[0]
    assert after.functions[1] is not before.functions[1]
    assert ast_tree(after) == _whole(edited, "m.mcpl")


def test_a_new_line_converts_the_definitions_below_again(reuse: None) -> None:
    before = parse_source(KERNEL, "m.mcpl")
    edited = KERNEL.replace("const int N = 4;", "const int N = 4;\n")
    after = parse_source(edited, "m.mcpl")
    assert after.constants[0] is before.constants[0]
    assert after.functions[0] is not before.functions[0]  # one line further down
    assert after.functions[0].span.line == before.functions[0].span.line + 1
    assert ast_tree(after) == _whole(edited, "m.mcpl")


@pytest.mark.parametrize("broken", [
    KERNEL.replace("a[i] = 0.0;", "a[i] = 0.0"),  # a syntax error in one definition
    KERNEL.replace("int b; };", "int b; } }"),  # an unbalanced brace
    KERNEL + "perfect void h(",  # text after the last definition
    KERNEL.replace("/* a brace", "/* a brace */ */"),  # a stray end of comment
    KERNEL + "/* a comment that does not close",
], ids=["syntax-error", "unbalanced-brace", "text-after", "stray-comment-end",
        "comment-not-closed"])
def test_a_syntax_error_is_the_whole_file_parses(broken: str, reuse: None) -> None:
    parse_source(KERNEL, "m.mcpl")
    whole = _whole(broken, "m.mcpl")
    assert isinstance(whole, list)
    assert _outcome(broken, "m.mcpl") == whole
