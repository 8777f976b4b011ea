"""Parse MCPL source into the typed AST (`mcl.mcpl.ast`).

`parse_source` / `parse_file` are the front door of the MCPL front end: textX's parser
recognises the text with `mcpl.tx`, `mcl.mcpl.tree` makes the model of its parse tree,
`mcl.mcpl.build` turns the model into dataclasses, and every
syntax problem leaves as an `MclError` carrying a `Diagnostic` (file:line:col, an
"expected ..." message in words people use, and a hint) — never as a textX traceback.
"""

from __future__ import annotations

import hashlib
import importlib.util
import marshal
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcl.diagnostics import Diagnostic, MclError, Span, error
from mcl.gc_pause import gc_paused
from mcl.mcpl.ast import Module
from mcl.mcpl.types import PRIMITIVE_NAMES
from mcl.parse_cache import ParseCache, read_marshalled, write_atomically
from mcl.resources import hwdescs_dir
from mcl.source_files import SourcePositions, read_source

if TYPE_CHECKING:
    from textx.exceptions import TextXSyntaxError

    from mcl.mcpl.tree import TreeModelBuilder

# textX, the grammar and the model builders are imported where a text is parsed: a file
# found in the parse cache needs none of them, and a text that parses with the kept tree
# builder (`tree_builder`) needs none of textX.

GRAMMAR = Path(__file__).with_name("mcpl.tx")
# Parsed modules on disk (mcl/parse_cache.py), keyed by their text, file name and the
# description names; the sources are those of the parser and the tree it builds.
CACHE = ParseCache(
    "mcpl", Module,
    sources=("mcpl/mcpl.tx", "mcpl/parse.py", "mcpl/peg.py", "mcpl/tree.py", "mcpl/build.py",
             "mcpl/ast.py",
             "mcpl/types.py", "diagnostics.py", "grammar_converter.py", "source_files.py"),
    modules=frozenset({"mcl.mcpl.ast", "mcl.diagnostics"}))

KEYWORDS = frozenset(
    "package module export import type void int float double byte bool as return foreach "
    "barrier in if else const for true false".split()
)


@cache
def metamodel() -> Any:
    """The textX metamodel, built once per process (about 20 ms)."""
    # autokwd: keyword-like literals ('for', 'in') only match whole words, so `format` or
    # `index` are ordinary names.
    from textx import metamodel_from_file

    from mcl.mcpl.build import ModelBuilder
    from mcl.source_files import BLANKS

    mm = metamodel_from_file(str(GRAMMAR), autokwd=True, memoization=False, ws=BLANKS)
    ModelBuilder.check(mm, "mcpl")  # every rule of the grammar has its conversion
    return mm


@cache
def tree_builder() -> TreeModelBuilder:
    """Builds the model straight from textX's parse tree (mcl/mcpl/tree.py: 3x faster
    than textX's own model construction, the same model). Kept in mcl's cache folder as
    plain data (`kept_builder`), so that a process that parses a text without a syntax
    error imports none of textX and builds no metamodel (about 50 ms of a check after an
    edit, docs/editor.md)."""
    from mcl.mcpl.tree import TreeModelBuilder

    path, header = kept_builder()
    if path is not None:
        table = read_marshalled(path, header)
        if table is not None:
            try:
                return TreeModelBuilder.kept(table, metamodel)
            except Exception:  # noqa: BLE001 - a table of any other shape: build anew
                pass
    builder = TreeModelBuilder(metamodel())
    table = builder.table()
    if path is not None and table is not None:
        try:
            data = header + marshal.dumps(table)
        except ValueError:  # a default textX gives that marshal cannot write: keep none
            return builder
        write_atomically(path, data)
    return builder


def kept_builder() -> tuple[Path | None, bytes]:
    """Where the tree builder is kept (mcl's cache folder, by the parser's fingerprint;
    None when caching is off) and the header its file starts with. The fingerprint is the
    parse cache's (the grammar, the sources that make the parser and the tree builder,
    the Python and mcl versions) and Arpeggio's and textX's installation, as these
    make the parsing expressions the table describes."""
    # (Arpeggio is imported by the parser anyway; textX is only looked for)
    import arpeggio  # type: ignore[import-untyped]

    folder = CACHE.folder()
    if folder is None:
        return None, b""
    spec = importlib.util.find_spec("textx")
    origin = spec.origin if spec is not None else None
    installed = [arpeggio.__version__]
    for where in (origin, origin and os.path.dirname(origin)):  # reinstalled: new times
        try:
            info = os.stat(where) if where else None
        except OSError:
            info = None
        installed.append(f"{info.st_mtime_ns}:{info.st_size}" if info else "-")
    header = b"mcl-mcpl-tree-builder\0" + CACHE.fingerprint + "\0".join(installed).encode()
    return folder / f"parser-{hashlib.sha256(header).hexdigest()[:32]}.marshal", header


@cache
def library_hwd_names() -> frozenset[str]:
    """Names of the bundled hardware descriptions (the stems of `hwdescs/*.hdl`).

    Only file names are needed to recognise `gpu.hierarchy...` as a description constant,
    so this deliberately does not load (or depend on) the HDL front end."""
    try:
        return frozenset(p.stem for p in hwdescs_dir().glob("*.hdl"))
    except OSError:
        return frozenset()


def parse_source(
    text: str, file: str = "<string>", hwd_names: Iterable[str] | None = None
) -> Module:
    """Parse one MCPL module. `hwd_names` are the hardware-description names whose dotted
    chains become `HwdConst`; by default the bundled descriptions. The module's own function
    prefixes and single-name imports always count as description names too."""
    with gc_paused():  # allocation-heavy and free of cycles (mcl/gc_pause.py)
        if _kept is not None:
            module = _reusing_definitions(text, file, hwd_names, _kept)
            if module is not None:
                return module
            _region_error(text, file, _kept)
        return _parse_source(text, file, hwd_names)


def _syntax_error() -> type[TextXSyntaxError]:
    """textX's syntax error, imported only once a parse has failed: an `except` clause
    that names it by this call evaluates it only when an exception reaches it, so a
    successful parse with the kept tree builder imports none of textX."""
    from textx.exceptions import TextXSyntaxError

    return TextXSyntaxError


def _parse_source(text: str, file: str, hwd_names: Iterable[str] | None) -> Module:
    from mcl.mcpl.build import build_module, declared_hwd_names

    try:
        model = tree_builder().parse(text, file)
    except RecursionError:
        raise MclError(
            error(
                "mcpl-syntax",
                "the code is nested too deeply to parse",
                Span.point(file, 1, 1),
                hint="split deeply nested expressions or blocks into smaller pieces",
            )
        ) from None
    except _syntax_error() as exc:
        raise MclError(syntax_diagnostic(exc, text, file)) from None
    names = set(library_hwd_names() if hwd_names is None else hwd_names)
    names |= declared_hwd_names(model)
    try:
        return build_module(model, text, file, names)
    except RecursionError:
        raise MclError(
            error("mcpl-syntax", "the code is nested too deeply", Span.point(file, 1, 1))
        ) from None


# ------------------------------------------------------------- reusing unchanged definitions

# The editor parses a file again after every keystroke, and a keystroke changes one
# definition. With reuse on (`reuse_definitions`: the language server and its feedback
# worker), each top-level definition is parsed alone and kept: per file, its model by its
# text, and its AST by its text, the line and column where it starts and what its
# conversion depends on (mcl.mcpl.build.ModelBuilder.context). An edit then parses only
# the definition it touched (and, when it added or removed a line, converts those below it
# again for their new positions), and an unchanged definition is the very same AST object
# as before, which the feedback worker relies on to reuse its analyses.
# Anything unusual (a syntax error, text between definitions) parses the whole file as
# before, so the result and the errors are those of the whole-file parse.


@dataclass
class _Kept:
    """What the last parse converted, for the next parse to reuse."""

    models: dict[str, Any] = field(default_factory=dict)  # definition text -> its model
    nodes: dict[tuple[str, int, int], Any] = field(default_factory=dict)
    context: tuple[frozenset[str], ...] = ()  # what `nodes` were converted with
    text: str = ""  # the text they are of (it parsed)


_kept: dict[str, _Kept] | None = None  # by file; None: reuse is off


def reuse_definitions(on: bool = True) -> None:
    """Keep the definitions of each file parsed from now on, and reuse those whose text
    did not change (`on`: the language server's processes; off: forget them all)."""
    global _kept
    _kept = {} if on else None


# The tokens that delimit top-level definitions: comments (which may hold braces and
# semicolons), braces and semicolons. MCPL has no string literals.
_COMMENT = r"//[^\n]*|/\*[\s\S]*?\*/"  # mcpl.tx's Comment rule
_DELIMITERS = re.compile(_COMMENT + r"|[{};]")
_COMMENTS = re.compile(_COMMENT)


def definition_ends(text: str) -> list[int]:
    """The offsets just past each top-level definition of `text` (its ';', or the '}'
    that closes it, with a type's optional ';' after it)."""
    ends: list[int] = []
    depth = 0
    closed = False  # the last end was a '}'
    for m in _DELIMITERS.finditer(text):
        token = m.group()
        if token == "{":
            depth += 1
        elif token == "}":
            depth -= 1
            if depth == 0:
                ends.append(m.end())
                closed = True
        elif token == ";" and depth == 0:
            if closed and not _COMMENTS.sub("", text[ends[-1]:m.start()]).strip():
                ends[-1] = m.end()
            else:
                ends.append(m.end())
            closed = False
    return ends


class _Whole(Exception):
    """The definitions cannot be parsed one by one: parse the whole file."""


@dataclass
class _Joined:
    """The model of a module joined from its definitions' models (`ModelBuilder.module`
    reads these attributes): positions in the whole text."""

    items: list[Any]
    package: Any
    name: str | None
    _tx_position: int
    _tx_position_end: int


def _reusing_definitions(text: str, file: str, hwd_names: Iterable[str] | None,
                         kept_by_file: dict[str, _Kept]) -> Module | None:
    """The module of `text`, parsed definition by definition with the kept ones reused;
    None where only the whole-file parse can tell (then nothing is kept)."""
    from mcl.mcpl.build import ModelBuilder, declared_hwd_names

    ends = definition_ends(text)
    if not ends or _COMMENTS.sub("", text[ends[-1]:]).strip():
        return None  # no definition, or text after the last that does not end one
    old = kept_by_file.get(file, _Kept())
    kept = _Kept()
    models = []
    try:
        while len(ends) > 1 and not _definition_model(text[:ends[0]], file, old, kept, text).items:
            del ends[0]  # the `package` and `module` lines go with the first definition
        starts = [0, *ends[:-1]]
        for start, end in zip(starts, ends, strict=True):
            model = _definition_model(text[start:end], file, old, kept, text)
            if len(model.items) != 1 or start > 0 and (model.package or model.name):
                raise _Whole()
            models.append(model)
    except _Whole:
        return None
    joined = _Joined([m.items[0] for m in models], models[0].package, models[0].name,
                     models[0]._tx_position, starts[-1] + models[-1]._tx_position_end)
    names = set(library_hwd_names() if hwd_names is None else hwd_names)
    names |= declared_hwd_names(joined)
    builder = ModelBuilder(text, file, names)
    kept.context = builder.context(joined)
    reusable = old.nodes if old.context == kept.context else {}
    keys = [(text[start:end], *builder.pos.linecol(start))
            for start, end in zip(starts, ends, strict=True)]
    parts = [(start, reusable.get(key)) for start, key in zip(starts, keys, strict=True)]
    try:
        module = builder.module(joined, parts)
    except RecursionError:
        return None
    kept.nodes = {key: node for key, (_, node) in zip(keys, parts, strict=True)}
    kept.text = text
    kept_by_file[file] = kept
    return module


def _region_error(text: str, file: str, kept_by_file: dict[str, _Kept]) -> None:
    """Raise the syntax error of `text` when parsing the definitions that the edit from
    the file's last text that parsed touched tells it (mcl.mcpl.syntax_region): the
    whole-file parse of a broken 2,000-line module costs about a second."""
    from mcl.mcpl.syntax_region import region_error

    kept = kept_by_file.get(file)
    if kept is None or not kept.text:
        return

    def parse_error(part: str) -> tuple[int, int, Diagnostic] | None:
        try:
            tree_builder().parse(part, file)
        except RecursionError:
            return None  # (so the whole-file parse says it)
        except _syntax_error() as exc:
            return exc.line or 1, exc.col or 1, syntax_diagnostic(exc, part, file)
        return None

    found = region_error(kept.text, text, definition_ends(kept.text), parse_error)
    if found is not None:
        raise MclError(found)


def _definition_model(chunk: str, file: str, old: _Kept, kept: _Kept, text: str) -> Any:
    """The model of the text of one definition parsed alone (kept in `old`, else made
    from its version before the edit, else parsed), now kept in `kept`; _Whole when it
    does not parse. `text`: the whole file's."""
    model = old.models.get(chunk)
    if model is None:
        model = _edited(chunk, file, old, text)
    if model is None:
        try:
            model = tree_builder().parse(chunk, file)
        except RecursionError:
            raise _Whole() from None
        except _syntax_error():
            raise _Whole() from None
        if not hasattr(model, "items"):  # only comments
            raise _Whole()
    kept.models[chunk] = model
    return model


def _edited(chunk: str, file: str, old: _Kept, text: str) -> Any:
    """The model of `chunk` made from the kept model of the definition's text before the
    edit (mcl.mcpl.statement_reuse), or None. That model is changed in place, so only one
    whose text the file no longer holds is taken (and dropped from `old`): the definition
    `chunk` replaced, the one that shares the most text with it at both ends."""
    from mcl.mcpl.statement_reuse import common_ends, edited_model

    candidates = [c for c in old.models if c not in text]
    if not candidates:
        return None
    before = max(candidates, key=lambda c: sum(common_ends(c, chunk)))
    model = edited_model(before, old.models[before], chunk,
                         lambda wrapped: _model_or_none(wrapped, file))
    if model is not None:
        del old.models[before]  # (now the model of `chunk`)
    return model


def _model_or_none(text: str, file: str) -> Any:
    try:
        return tree_builder().parse_or_none(text, file)
    except (RecursionError, _syntax_error()):
        return None


def parse_file(path: str | Path, hwd_names: Iterable[str] | None = None) -> Module:
    """Parse the MCPL file at `path` (`.mcpl`, or `.mcl` as in the original toolchain).
    The same text under the same name, parsed with the same description names in an
    earlier process, is read from the parse cache (mcl/parse_cache.py); not while
    definitions are reused (the language server keeps its own, by object)."""
    path = Path(path)
    text, file = read_source(path, "mcpl-io"), str(path)
    if _kept is not None:
        return parse_source(text, file, hwd_names)
    names = "\0".join(sorted(library_hwd_names() if hwd_names is None else set(hwd_names)))
    # a syntax error raises in parse_source, so it is never stored
    return CACHE.through(text, file, lambda: parse_source(text, file, hwd_names), names)


# --------------------------------------------------------------------------- syntax errors

# Token rules of mcpl.tx, in the words of a person reading the error.
_TOKEN_WORDS = {
    "ID": "a name",
    "PRIM": "a type",
    "NUMBER": "a number",
    "TRUTH": "true or false",
    "BINOP": "an operator",
    "ASSIGNOP": "'=' (or +=, -=, *=, /=, >>=)",
    "INCDEC": "'++' or '--'",
    "EOF": "end of file",
}
# Characters that start a primary expression; when the parser wanted any of them together
# with a unary operator, it simply wanted "an expression".
_OPERAND_STARTS = {"a name", "a number", "true or false", "'('", "'-' or '!'"}
# After an operand the parser also tries postfix continuations; when an operator would have
# done, listing `[`, `.`, `^` and `(` as well only adds noise.
_POSTFIX_NOISE = {"'['", "'.'", "'^'", "'('"}

_PRIMS = PRIMITIVE_NAMES
_TOKEN_AT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?|\S")


def _expected_words(rules: list[Any]) -> list[str]:
    words: list[str] = []
    for r in rules:
        name = getattr(r, "rule_name", "")
        if name == "Comment":  # comments may appear anywhere; not worth mentioning
            continue
        if name in _TOKEN_WORDS:
            word = _TOKEN_WORDS[name]
        elif name == "UNOP":
            word = "'-' or '!'"
        elif hasattr(r, "to_match") and name in ("", "sep"):
            word = f"'{r.to_match}'"
        else:
            word = name.lower() or "something else"
        if word not in words:
            words.append(word)
    if "'-' or '!'" in words:
        words = [w for w in words if w not in _OPERAND_STARTS] + ["an expression"]
    if "an operator" in words:
        words = [w for w in words if w not in _POSTFIX_NOISE]
    if "'foreach'" in words:  # everything that may start a statement
        words = ["a statement"] + [w for w in words if w == "'}'"]
    elif "'import'" in words and "'type'" in words:  # everything that may start a top item
        words = ["a function, constant, type, import or export"] + [
            w for w in words if w == "end of file"
        ]
    return words


def _one_of(words: list[str]) -> str:
    if len(words) <= 1:
        return words[0] if words else "something else"
    return ", ".join(words[:-1]) + " or " + words[-1]


def _found(text: str, pos: int) -> str:
    m = _TOKEN_AT.match(text, pos)
    return "end of file" if m is None else f"'{m.group(0)}'"


def _end_of_previous_token(text: str, pos: int) -> int:
    """Offset just past the last non-blank, non-comment character before `pos`."""
    i = pos
    while i > 0:
        while i > 0 and text[i - 1].isspace():
            i -= 1
        line_start = text.rfind("\n", 0, i) + 1
        comment = text.find("//", line_start, i)
        if comment >= 0:
            i = comment
            continue
        break
    return i


def _unclosed_brace(text: str) -> int | None:
    """Offset of the innermost '{' that is never closed (comments skipped), if any."""
    open_braces: list[int] = []
    i = 0
    while i < len(text):
        if text.startswith("//", i):
            i = text.find("\n", i)
            if i < 0:
                break
        elif text.startswith("/*", i):
            i = text.find("*/", i + 2)
            if i < 0:
                break
            i += 1
        elif text[i] == "{":
            open_braces.append(i)
        elif text[i] == "}" and open_braces:
            open_braces.pop()
        i += 1
    return open_braces[-1] if open_braces else None


def syntax_diagnostic(exc: TextXSyntaxError, text: str, file: str) -> Diagnostic:
    """Turn a textX/Arpeggio syntax error into a readable Diagnostic."""
    line, col = exc.line or 1, exc.col or 1
    positions = SourcePositions(text, file)
    pos = positions.offset(line, col)
    words = _expected_words(list(exc.expected_rules or []))
    found = _found(text, pos)
    hint = "see docs/mcpl.md for the syntax of MCPL"

    if "';'" in words:
        # A missing ';' is noticed at the next token, usually on the next line; point at
        # the end of the statement that lacks it, as C compilers do.
        prev = _end_of_previous_token(text, pos)
        if prev < pos and "\n" in text[prev:pos]:
            line, col = positions.linecol(prev)
            found = "end of line"
        hint = "every statement and declaration ends with ';'"
    elif found == "end of file":
        # Past the last line there is nothing to show: point just after the last token.
        line, col = positions.linecol(_end_of_previous_token(text, pos))
    if found.strip("'") in KEYWORDS and "a name" in words:
        hint = f"{found} is a reserved word of MCPL and cannot be used as a name"
    elif words and words[0].startswith("a function, constant") and found.strip("'") in _PRIMS:
        hint = "MCPL has no global variables: a top-level declaration is a constant, "
        hint += f"`const {found.strip(chr(39))} NAME = value;`, or a function `HWD TYPE NAME(...)`"
    elif words in (["'int'"], ["'const'", "'int'"]):
        hint = "a foreach declares an int index: `foreach (int i in n threads) ...`"
    elif found == "end of file" and "'}'" in words:
        hint = "a '{' is never closed"
        unclosed = _unclosed_brace(text)
        if unclosed is not None:
            brace_line, brace_col = positions.linecol(unclosed)
            hint = f"the '{{' at line {brace_line}, column {brace_col} is never closed"
    elif len(found) == 3 and not found[1].isalnum() and found[1] not in "{}()[];,.=+-*/%<>!&|^":
        hint = f"the character {found} is not part of MCPL"

    message = f"expected {_one_of(words)}, found {found}"
    length = len(found) - 2 if found.startswith("'") else 1
    return error("mcpl-syntax", message, Span.point(file, line, col, length), hint=hint)
