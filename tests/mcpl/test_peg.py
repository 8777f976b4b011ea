"""The parse compiled from Arpeggio's parser (mcl/mcpl/peg.py) builds Arpeggio's parse tree,
node for node, and fails exactly where Arpeggio fails: on every MCPL source of the
repository, on truncated and mutated copies of them (which exercise the failing paths,
backtracking and empty results), and on small grammars with Arpeggio's corner cases."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from arpeggio import EndOfFile, NoMatch, Terminal
from textx import metamodel_from_str
from textx.exceptions import TextXSyntaxError

from mcl.diagnostics import MclError
from mcl.mcpl.parse import metamodel, parse_source, syntax_diagnostic
from mcl.mcpl.peg import compile_parser
from mcl.mcpl.tree import TreeModelBuilder

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted({*ROOT.glob("kernels/**/*.mcpl"), *ROOT.glob("kernels/**/*.mcl"),
                  *ROOT.glob("mcl/mcpl/stdlib/**/*.mcpl"), *ROOT.glob("tests/**/*.mcpl"),
                  *ROOT.glob("tests/**/*.mcl")})
_TOKEN = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d*)?|//[^\n]*|/\*[\s\S]*?\*/|\S")
_INSERTED = [";", ")", "(", "{", "}", "x", "1", "+", "=", "++", ",", ".", "[", "as", "if",
             "/*c*/", "//c\n", "const", "float", "<=>", "^", "-"]


def _nodes(tree: Any) -> list[Any]:
    """The parse tree in order, each node as what identifies it: its rule (the very
    parsing expression, but for end of file, which Arpeggio makes anew), kind, position,
    end, value and suppression."""
    out: list[Any] = []

    def walk(node: Any) -> None:
        rule = "EOF" if isinstance(node.rule, EndOfFile) else node.rule
        if isinstance(node, Terminal):
            out.append((rule, "T", node.rule_name, node.position, node.position_end,
                        node.value, node.suppress, node.extra_info is not None))
        else:
            out.append((rule, "N", node.rule_name, node.position, node.position_end, len(node)))
            for child in node:
                walk(child)

    if tree is not None:
        walk(tree)
    return out


def _arpeggio(mm: Any, text: str) -> Any:
    """Arpeggio's parse tree of `text`, or None where it raises."""
    parser = mm._parser_blueprint.clone()
    try:
        return parser.parse(text)
    except (TextXSyntaxError, NoMatch):
        return None


def _same(compiled: Callable[[str], Any], mm: Any, text: str) -> None:
    theirs, ours = _nodes(_arpeggio(mm, text)), _nodes(compiled(text))
    assert len(ours) == len(theirs), text
    for a, b in zip(ours, theirs, strict=True):
        assert a[0] is b[0] or a[0] == b[0] == "EOF", (text, a, b)
        assert a[1:] == b[1:], (text, a, b)


@pytest.fixture(scope="module")
def mcpl() -> Callable[[str], Any]:
    return compile_parser(metamodel()._parser_blueprint)


def _mutations(text: str, rng: random.Random, count: int) -> list[str]:
    """`text` cut at `count` places, and with `count` single-token edits (a token
    deleted, doubled or replaced, or one inserted)."""
    tokens = list(_TOKEN.finditer(text))
    out = [text[:rng.randrange(len(text) + 1)] for _ in range(count)]
    for _ in range(count if tokens else 0):
        t = tokens[rng.randrange(len(tokens))]
        edit = rng.choice([
            "", t.group() + " " + t.group(), rng.choice(_INSERTED),
            rng.choice(_INSERTED) + " " + t.group()])
        out.append(text[:t.start()] + edit + text[t.end():])
    return out


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_same_tree_as_arpeggio_on_every_source_and_its_mutations(
        mcpl: Callable[[str], Any], path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    rng = random.Random(path.name)
    for variant in [text, *_mutations(text, rng, 6)]:
        _same(mcpl, metamodel(), variant)


def test_a_syntax_error_is_arpeggio_s_word_for_word() -> None:
    """Where the compiled parse fails, parse_source's diagnostic is the one made from
    Arpeggio's own error (it parses again to find it)."""
    text = (ROOT / "kernels" / "matmul" / "perfect.mcpl").read_text(encoding="utf-8")
    rng = random.Random(5)
    failures = 0
    for variant in _mutations(text, rng, 12):
        try:
            parse_source(variant, "m.mcpl")
        except MclError as exc:
            try:
                metamodel()._parser_blueprint.clone().parse(variant)
            except TextXSyntaxError as theirs:
                failures += 1
                assert exc.diagnostics == [syntax_diagnostic(theirs, variant, "m.mcpl")]
    assert failures >= 5  # the mutations did reach the error path


# Small grammars with Arpeggio's corner cases: rules that match nothing (an empty
# sequence result inside a choice keeps its position; a repetition stops at an empty
# result and keeps its separator), separators, predicates, a string match inside and
# outside a sequence, keywords, and comments.
GRAMMARS = [
    ("""M: items*=I[','] ';'?; I: A | B | C; A: 'a' x=INT?; B: &'b' 'b' n=ID;
        C: v=/[0-9]*/ '!'; Comment: /#[^\\n]*/;""",
     ["a", "b", "c", "1", "!", ";", ",", " ", "# c\n", "ab"], ""),
    ("""M: 'x'? (q=Q | r=R)+ 'end'; Q: ('-')? 'q' xs*=X; R: 'r' y=INT?; X: '.' | ',';""",
     ["x ", "q ", "r ", "end ", "1 ", ".", ",", "-", " ", "qr"], " end"),
    ("""M: s+=S; S: E ';'; E: T (op=/[+-]/ T)*; T: '(' E ')' | ID | INT | 'if' E;""",
     ["a", "if", "1", "+", "-", "(", ")", ";", " ", "ifa"], ";"),
    ("""M: parts+=P['+'] ; P: n=ID? (v=INT)* | '*';""", ["a", "1", "+", "*", " ", "a1"], ""),
]


@pytest.mark.parametrize(("grammar", "alphabet", "ending"), GRAMMARS)
def test_corner_cases_on_random_texts(grammar: str, alphabet: list[str], ending: str) -> None:
    mm = metamodel_from_str(grammar, autokwd=True)
    compiled = compile_parser(mm._parser_blueprint)
    rng = random.Random(grammar)
    accepted = 0
    for _ in range(1000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(8)))
        text += rng.choice(["", ending])  # what the grammar wants last, half of the time
        _same(compiled, mm, text)
        accepted += _arpeggio(mm, text) is not None
    assert accepted >= 20  # not only failures


def test_what_is_not_reproduced_falls_back_to_arpeggio() -> None:
    """A parser with memoization (or anything else peg.py does not reproduce) is refused,
    and the model builder then parses with Arpeggio alone, to the same model."""
    grammar = "M: xs+=X; X: 'x' n=INT;"
    memoized = metamodel_from_str(grammar, memoization=True)
    with pytest.raises(NotImplementedError):
        compile_parser(memoized._parser_blueprint)
    builder = TreeModelBuilder(memoized)
    assert builder.compiled is None
    model = builder.parse("x 1 x 2", "m")
    assert [x.n for x in model.xs] == [1, 2]
    plain = TreeModelBuilder(metamodel_from_str(grammar))
    assert plain.compiled is not None
    assert [x.n for x in plain.parse("x 1 x 2", "m").xs] == [1, 2]
