"""The parse compiled from Arpeggio's parser (mcl/mcpl/peg.py) builds Arpeggio's parse tree,
node for node, and fails exactly where Arpeggio fails: on every MCPL source of the
repository, on truncated and mutated copies of them (which exercise the failing paths,
backtracking and empty results), and on small grammars with Arpeggio's corner cases. So
does the parser kept as plain data in mcl's cache folder (built in a later process
without Arpeggio's graph), whose file is rebuilt when stale and ignored when damaged."""

from __future__ import annotations

import marshal
import os
import random
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from arpeggio import EndOfFile, NoMatch, Terminal
from textx import metamodel_from_str
from textx.exceptions import TextXSyntaxError

from mcl.diagnostics import MclError
from mcl.mcpl import parse as parse_module
from mcl.mcpl.parse import metamodel, parse_source, syntax_diagnostic
from mcl.mcpl.peg import KeptRule, build, compile_parser, describe
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


def _same(compiled: Callable[[str], Any], mm: Any, text: str,
          kept: Callable[[str], Any] | None = None) -> None:
    """`compiled` (and `kept`, whose rules stand for Arpeggio's: `_kept`) parse `text`
    to Arpeggio's tree."""
    theirs = _nodes(_arpeggio(mm, text))
    for parse in (compiled, kept) if kept is not None else (compiled,):
        ours = _nodes(parse(text))
        assert len(ours) == len(theirs), text
        for a, b in zip(ours, theirs, strict=True):
            rule = getattr(parse, "stands_for", {}).get(id(a[0]), a[0])
            assert rule is b[0] or a[0] == b[0] == "EOF", (text, a, b)
            assert a[1:] == b[1:], (text, a, b)


def _kept(mm: Any) -> Callable[[str], Any]:
    """The parse built from the plain data of `mm`'s parser, as a later process reads it
    from the cache folder (through marshal), with `KeptRule`s for rules; its
    `stands_for` maps each of them to the expression of Arpeggio's it stands for."""
    grammar, exprs = describe(mm._parser_blueprint)
    grammar = marshal.loads(marshal.dumps(grammar))
    rules = [KeptRule(name) for _, name, *_ in grammar[2]]
    parse: Any = build(grammar, rules)
    parse.stands_for = {id(rule): expr for rule, expr in zip(rules, exprs, strict=True)}
    return parse


@pytest.fixture(scope="module")
def mcpl() -> Callable[[str], Any]:
    return compile_parser(metamodel()._parser_blueprint)


@pytest.fixture(scope="module")
def mcpl_kept() -> Callable[[str], Any]:
    return _kept(metamodel())


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
        mcpl: Callable[[str], Any], mcpl_kept: Callable[[str], Any], path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    rng = random.Random(path.name)
    for variant in [text, *_mutations(text, rng, 6)]:
        _same(mcpl, metamodel(), variant, mcpl_kept)


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
    kept = _kept(mm)
    rng = random.Random(grammar)
    accepted = 0
    for _ in range(1000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(8)))
        text += rng.choice(["", ending])  # what the grammar wants last, half of the time
        _same(compiled, mm, text, kept)
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


# ------------------------------------------------------------------ the kept tree builder


def _kept_file() -> Path:
    path, _ = parse_module.kept_builder()
    assert path is not None
    return path


@pytest.fixture
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty cache folder, and `tree_builder` made again on its next call."""
    monkeypatch.setenv("MCL_CACHE_DIR", str(tmp_path))
    parse_module.tree_builder.cache_clear()
    yield tmp_path
    parse_module.tree_builder.cache_clear()


@pytest.mark.slow  # every source and its mutations through two builders: about 10 s
def test_the_kept_builder_gives_the_same_models(fresh_cache: Path) -> None:
    """The builder read back from the cache folder (no metamodel) makes the same ASTs,
    and the same syntax errors, as the one made from the metamodel, on every source."""
    made = parse_module.tree_builder()
    assert made.metamodel is not None and _kept_file().exists()
    parse_module.tree_builder.cache_clear()
    kept = parse_module.tree_builder()
    assert kept is not made and kept._metamodel is None  # read back, no metamodel yet
    rng = random.Random(7)
    for path in SOURCES:
        text = path.read_text(encoding="utf-8")
        for variant in [text, *_mutations(text, rng, 1)]:
            outcomes = []
            for builder in (made, kept):
                with pytest.MonkeyPatch.context() as m:
                    m.setattr(parse_module, "tree_builder", lambda b=builder: b)
                    try:
                        outcomes.append(repr(parse_source(variant, "m.mcpl")))
                    except MclError as exc:
                        outcomes.append(str(exc.diagnostics))
            assert outcomes[0] == outcomes[1], (path, variant)


def test_a_stale_or_damaged_kept_builder_is_made_again(fresh_cache: Path) -> None:
    """A file of another fingerprint is not read (the name and the header carry it), and
    a damaged one (cut short, garbage, a table of another shape) is replaced by a builder
    made from the metamodel, which is kept anew."""
    parse_module.tree_builder()
    path = _kept_file()
    good = path.read_bytes()
    _, header = parse_module.kept_builder()
    text = (ROOT / "kernels" / "matmul" / "perfect.mcpl").read_text(encoding="utf-8")
    expected = repr(parse_source(text, "m.mcpl"))
    for damaged in (good[:len(good) // 2], good[:len(header) + 3] + b"\xff" * 40,
                    header + marshal.dumps(("a", 1, [("sequence",)])), b"", b"\0" * 99):
        path.write_bytes(damaged)
        parse_module.tree_builder.cache_clear()
        builder = parse_module.tree_builder()
        assert builder._metamodel is not None  # made from the metamodel
        assert path.read_bytes() == good  # and kept again
        assert repr(parse_source(text, "m.mcpl")) == expected
    # another fingerprint (an edited grammar, another textX): another file
    stale = path.with_name("parser-" + "0" * 32 + ".marshal")
    path.rename(stale)
    parse_module.tree_builder.cache_clear()
    parse_module.CACHE.__dict__["fingerprint"] = b"edited" + parse_module.CACHE.fingerprint
    try:
        assert parse_module.tree_builder()._metamodel is not None
        assert _kept_file() != path and _kept_file().exists()
    finally:
        del parse_module.CACHE.__dict__["fingerprint"]
    # a file anyone may write is not read (it decides how every kernel parses:
    # mcl.parse_cache.read_marshalled)
    path.write_bytes(good)
    path.chmod(0o666)
    parse_module.tree_builder.cache_clear()
    assert parse_module.tree_builder()._metamodel is not None


_SUBPROCESS = """
import sys
from mcl.diagnostics import MclError
from mcl.mcpl.parse import parse_source
parse_source(open(sys.argv[1]).read(), "m.mcpl")
print("textx" in sys.modules)
try:
    parse_source("perfect void f(int n) { n = ; }", "m.mcpl")
except MclError as exc:
    print(exc.diagnostics[0].message)
"""


def test_a_process_with_the_kept_builder_imports_textx_only_for_a_syntax_error(
        fresh_cache: Path) -> None:
    kernel = str(ROOT / "kernels" / "matmul" / "perfect.mcpl")
    env = {**os.environ, "MCL_CACHE_DIR": str(fresh_cache),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    runs = [subprocess.run([sys.executable, "-c", _SUBPROCESS, kernel], env=env, check=True,
                           capture_output=True, text=True).stdout.split("\n")
            for _ in range(2)]
    assert runs[0][0] == "True"  # the first made the builder from textX's metamodel
    assert runs[1][0] == "False"  # the second read it back and needed none of textX
    assert runs[0][1] == runs[1][1] == "expected an expression, found ';'"
