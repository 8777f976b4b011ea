"""Parse an `.hdl` file into small frozen dataclasses with source spans.

textX parses (grammar `hdl.tx`); this module converts its parse tree once into the types
below, so nothing after it touches textX objects (docs/architecture.md: "textX only parses;
the AST is ours"). The tree is still unresolved: reference statements are `RefStmt`s and
expressions are unevaluated; `mcl.hdl.resolve` gives them meaning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Union

from mcl.diagnostics import MclError, Span, error
from mcl.grammar_converter import GrammarConverter
from mcl.parse_cache import ParseCache
from mcl.source_files import SourcePositions, read_source

GRAMMAR = Path(__file__).with_name("hdl.tx")

# hdl.md §1: the keyword classes.
BLOCK_KEYWORDS = (
    "parallelism", "memory_space", "par_group", "par_unit", "device", "device_group",
    "device_unit", "memory", "cache", "interconnect", "execution_group", "execution_unit",
    "simd_group", "simd_unit", "load_store_group", "load_store_unit", "instructions",
)  # fmt: skip
FLAG_PROPERTIES = ("default", "read_only")
VALUED_PROPERTIES = (
    "nr_units", "max_nr_units", "capacity", "latency", "bandwidth", "nr_banks",
    "clock_frequency", "addressable", "cache_line_size", "atomic_interval", "width",
    "partial_write_bandwidth", "latency_knee",
)  # fmt: skip
ARGUMENT_PROPERTIES = ("slots", "connects", "space", "op", "performance_feedback")


# --------------------------------------------------------------------------- expressions


HUGE_DIGITS = 40  # an integer literal of more digits stands for 10^40


@dataclass(frozen=True)
class Number:
    value: int
    span: Span


@dataclass(frozen=True)
class String:
    value: str
    span: Span


@dataclass(frozen=True)
class Word:
    """`unlimited`, `true` or `false`."""

    word: str
    span: Span


@dataclass(frozen=True)
class OpLiteral:
    """`(+)`, `(-)`, `(*)`, `(/)`: an operator named in `op(...)`."""

    op: str
    span: Span


@dataclass(frozen=True)
class QualName:
    """`a.b.c`, optionally ending in a property keyword and/or `[*]` (every unit of a group)."""

    parts: tuple[str, ...]
    star: bool
    span: Span

    def __str__(self) -> str:
        return ".".join(self.parts) + ("[*]" if self.star else "")


@dataclass(frozen=True)
class BinOp:
    op: str  # + - * /
    left: Expr
    right: Expr
    span: Span


Expr = Union[Number, String, Word, OpLiteral, QualName, BinOp]


@dataclass(frozen=True)
class UnitExpr:
    """An expression with an optional unit as written (`48 kB` -> unit 'kB')."""

    expr: Expr
    unit: str | None
    unit_span: Span | None
    span: Span


# --------------------------------------------------------------------------- statements


@dataclass(frozen=True)
class FlagStmt:
    name: str
    span: Span


@dataclass(frozen=True)
class ValuedStmt:
    name: str
    value: UnitExpr
    span: Span


@dataclass(frozen=True)
class ArgStmt:
    name: str
    args: tuple[UnitExpr, ...]
    span: Span


@dataclass(frozen=True)
class RefStmt:
    """A reference statement (`mem;`, `perfect.hierarchy.threads;`)."""

    name: QualName
    span: Span


@dataclass(frozen=True)
class BlockStmt:
    kind: str
    name: str
    body: tuple[Statement, ...]
    span: Span  # the whole block
    name_span: Span  # just the identifier


Statement = Union[BlockStmt, FlagStmt, ValuedStmt, ArgStmt, RefStmt]


@dataclass(frozen=True)
class HdlFile:
    name: str
    parent: str | None
    blocks: tuple[BlockStmt, ...]
    file: str
    name_span: Span
    parent_span: Span | None


# --------------------------------------------------------------------------- parsing


@lru_cache(maxsize=1)
def _metamodel():
    """The textX metamodel, built once per process (it is the slow part of textX)."""
    from textx import metamodel_from_file

    from mcl.source_files import BLANKS

    # autokwd: keyword-like matches need a word boundary (`device` never eats `device_group`).
    mm = metamodel_from_file(str(GRAMMAR), autokwd=True, memoization=False, ws=BLANKS)
    _Converter.check(mm, "hdl")  # every rule of the grammar has its conversion
    return mm


class _Positions(SourcePositions):
    """Positions of an HDL text, plus the span of a plain string after a keyword."""

    def word_after(self, pos: int, keyword: str, word: str) -> Span:
        """Span of `word` written after `keyword` (plain strings carry no position in textX)."""
        match = re.compile(rf"{keyword}\s+({re.escape(word)})\b").search(self.text, pos)
        start = match.start(1) if match else pos
        return self.span(start, start + len(word))


def parse_hdl(text: str, file: str = "<string>") -> HdlFile:
    """Parse HDL source text. A syntax error raises MclError with one `hdl-syntax` diagnostic.
    Results are cached by (text, file): the tree is immutable, and a warm library load then
    skips textX entirely."""
    return _parse_cached(text, file)


@lru_cache(maxsize=256)
def _parse_cached(text: str, file: str) -> HdlFile:
    from textx.exceptions import TextXError, TextXSyntaxError

    try:
        model = _metamodel().model_from_str(text)
    except TextXSyntaxError as exc:
        raise MclError(_syntax_diagnostic(exc, text, file)) from None
    except TextXError as exc:  # pragma: no cover - the grammar has no cross references
        raise MclError(
            error("hdl-syntax", f"cannot parse: {exc}", Span.point(file, 1, 1))) from None
    return _Converter(_Positions(text, file)).file(model)


def parse_hdl_file(path: str | Path) -> HdlFile:
    """Parse a file. A text parsed before, in this process or (the same text under the same
    name) in an earlier one, is not parsed again: see `mcl.hdl.parse_cache`."""
    path = Path(path)
    return _parse_file_text(read_source(path, "hdl-io"), str(path))


# Parsed files on disk (mcl/parse_cache.py), in `<cache dir>/hdl`, as the MCPL front end
# keeps its parsed modules beside its parser (mcl.mcpl.parse); mcl.hdl.parse_cache is the
# cache's interface for the commands and tests that look at it.
CACHE = ParseCache(
    "hdl", HdlFile,
    sources=("hdl/hdl.tx", "hdl/syntax.py", "diagnostics.py", "grammar_converter.py",
             "source_files.py"),
    modules=frozenset({"mcl.hdl.syntax", "mcl.diagnostics"}))


@lru_cache(maxsize=256)
def _parse_file_text(text: str, file: str) -> HdlFile:
    # a syntax error raises in parse_hdl, so it is never stored
    return CACHE.through(text, file, lambda: parse_hdl(text, file))


def _syntax_diagnostic(exc, text: str, file: str):
    line, col = exc.line or 1, exc.col or 1
    pos = _Positions(text, file)
    offset = pos.offset(min(line, len(pos.starts)), col)
    rest = text[offset:].split()
    found = rest[0] if rest else ""
    expected = sorted({n for n in map(_rule_name, exc.expected_rules or []) if n})
    hint = ("expected " + ", ".join(expected)) if expected else None
    if found:
        message = f"syntax error: unexpected '{found}'"
    elif not _COMMENT.sub("", text).strip():
        message = "the file is empty"
        line, col = 1, 1
        hint = "a description starts with `hardware_description NAME;` (hdl.md §2)"
    else:
        message = "syntax error: unexpected end of file"
        # Past the last line there is nothing to show: point just after the last token.
        code = _COMMENT.sub(lambda m: " " * len(m.group(0)), text).rstrip()
        line, col = pos.linecol(len(code))
    return error("hdl-syntax", message, Span.point(file, line, col, len(found)), hint)


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


_RULE_NAMES = {
    "Ident": "an identifier",
    "BlockKeyword": "a block keyword",
    "FlagKeyword": "a flag property",
    "ValuedKeyword": "a valued property",
    "ArgKeyword": "an argument property",
    "PropertyKeyword": "a property name",
    "UnitWord": "a unit",
    "AddOp": "an operator",
    "MulOp": "an operator",
    "IntLiteral": "a number",
    "STRING": "a string",
}


# Unnamed regular expressions of hdl.tx, by their pattern's start.
_PATTERN_NAMES = (
    ("\\(\\s*", "an operator literal such as (+)"),
    ("(unlimited", "unlimited, true or false"),
    ("\\d+", "a number"),
    ("\\/\\/", ""),  # comments: always possible, never worth listing
    ("\\/\\*", ""),
)


def _rule_name(rule) -> str:
    name = getattr(rule, "rule_name", "") or ""
    if name in _RULE_NAMES:
        return _RULE_NAMES[name]
    to_match = getattr(rule, "to_match", None)
    if isinstance(to_match, str) and not name:
        if type(rule).__name__ == "RegExMatch":
            return next((text for start, text in _PATTERN_NAMES if to_match.startswith(start)),
                        "a value")
        return f"'{to_match}'"
    return name or str(rule)


class _Converter(GrammarConverter):
    """textX objects -> our dataclasses: one `rule_<Rule>` method per rule of hdl.tx that
    a choice can match (GrammarConverter checks the grammar offers no other)."""

    CHOICES = ("Statement", "Atom")

    def __init__(self, pos: _Positions):
        self.pos = pos

    def file(self, m) -> HdlFile:
        start = m._tx_position
        return HdlFile(
            name=m.name,
            parent=m.parent or None,
            blocks=tuple(self.block(b) for b in m.blocks),
            file=self.pos.file,
            name_span=self.pos.word_after(start, "hardware_description", m.name),
            parent_span=self.pos.word_after(start, "specializes", m.parent) if m.parent else None,
        )

    def block(self, b) -> BlockStmt:
        return BlockStmt(
            kind=b.kind,
            name=b.name,
            body=tuple(self.stmt(s) for s in b.stmts),
            span=self.pos.span_of(b),
            name_span=self.pos.word_after(b._tx_position, b.kind, b.name),
        )

    def stmt(self, s) -> Statement:
        return self.convert(s)

    def rule_Block(self, b) -> BlockStmt:
        return self.block(b)

    def rule_FlagStmt(self, s) -> FlagStmt:
        return FlagStmt(s.name, self.pos.span_of(s))

    def rule_ValuedStmt(self, s) -> ValuedStmt:
        return ValuedStmt(s.name, self.unit_expr(s.value), self.pos.span_of(s))

    def rule_ArgStmt(self, s) -> ArgStmt:
        return ArgStmt(s.name, tuple(self.unit_expr(a) for a in s.args), self.pos.span_of(s))

    def rule_RefStmt(self, s) -> RefStmt:
        return RefStmt(self.qual(s.ref), self.pos.span_of(s))

    def unit_expr(self, u) -> UnitExpr:
        span = self.pos.span_of(u)
        unit = "".join(u.unit.split()) if u.unit else None
        unit_span = None
        if unit:
            unit_span = Span(span.file, span.end_line, max(1, span.end_column - len(u.unit)),
                             span.end_line, span.end_column)
        return UnitExpr(self.expr(u.expr), unit, unit_span, span)

    def expr(self, e) -> Expr:
        result = self.term(e.first)
        for tail in e.rest:
            right = self.term(tail.operand)
            result = BinOp(tail.op, result, right, _join(result.span, right.span))
        return result

    def term(self, t) -> Expr:
        result = self.atom(t.first)
        for tail in t.rest:
            right = self.atom(tail.operand)
            result = BinOp(tail.op, result, right, _join(result.span, right.span))
        return result

    def atom(self, a) -> Expr:
        return self.convert(a)

    def rule_OpLiteral(self, a) -> OpLiteral:
        return OpLiteral("".join(a.op.split())[1:-1], self.pos.span_of(a))

    def rule_KeywordValue(self, a) -> Word:
        return Word(a.word, self.pos.span_of(a))

    def rule_StringLiteral(self, a) -> String:
        return String(a.value, self.pos.span_of(a))

    def rule_IntLiteral(self, a) -> Number:
        text = str(a.value)
        base = 16 if text[:2] in ("0x", "0X") else 10
        digits = (text[2:] if base == 16 else text).lstrip("0")
        # Thousands of digits cost quadratic time to convert (Python refuses past 4,300);
        # any value past 40 digits is refused as too large where it is read, so one
        # stand-in above that bound keeps the diagnostic.
        value = 10**HUGE_DIGITS if len(digits) > HUGE_DIGITS else int(text, base)
        return Number(value, self.pos.span_of(a))

    def rule_QualRef(self, q) -> QualName:
        return self.qual(q)

    def qual(self, q) -> QualName:
        parts = tuple(q.parts) + ((q.prop,) if q.prop else ())
        return QualName(parts, bool(q.star), self.pos.span_of(q))


def _join(a: Span, b: Span) -> Span:
    return Span(a.file, a.line, a.column, b.end_line, b.end_column)

