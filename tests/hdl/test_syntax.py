"""The whole lexical structure and grammar of hdl.md §1-2, and unit normalisation."""

from __future__ import annotations

import math

import pytest

from mcl.diagnostics import MclError
from mcl.hdl import syntax as S
from mcl.hdl.units import UnitError, format_quantity, parse_unit


def parse_block(body: str, kind: str = "memory") -> S.BlockStmt:
    src = f"hardware_description t;\n{kind} b {{\n{body}\n}}\n"
    (block,) = S.parse_hdl(src, "t.hdl").blocks
    return block


def value_of(body: str) -> S.UnitExpr:
    (stmt,) = parse_block(body).body
    assert isinstance(stmt, S.ValuedStmt)
    return stmt.value


def test_header_and_specializes():
    f = S.parse_hdl("hardware_description gpu;\nspecializes accelerator;\n", "gpu.hdl")
    assert (f.name, f.parent, f.blocks) == ("gpu", "accelerator", ())
    assert (f.name_span.line, f.name_span.column) == (1, 22)
    assert (f.parent_span.line, f.parent_span.column) == (2, 13)


@pytest.mark.parametrize("kind", S.BLOCK_KEYWORDS)
def test_every_block_keyword(kind):
    block = parse_block("", kind)
    assert (block.kind, block.name) == (kind, "b")


@pytest.mark.parametrize("flag", S.FLAG_PROPERTIES)
def test_flag_properties(flag):
    (stmt,) = parse_block(f"{flag};", "memory_space").body
    assert stmt == S.FlagStmt(flag, stmt.span)


@pytest.mark.parametrize("prop", S.VALUED_PROPERTIES)
def test_valued_properties(prop):
    (stmt,) = parse_block(f"{prop} = 3;").body
    assert isinstance(stmt, S.ValuedStmt) and stmt.name == prop


@pytest.mark.parametrize("prop", S.ARGUMENT_PROPERTIES)
def test_argument_properties(prop):
    (stmt,) = parse_block(f"{prop}(a, 1);").body
    assert isinstance(stmt, S.ArgStmt) and stmt.name == prop and len(stmt.args) == 2


@pytest.mark.parametrize(
    ("text", "unit"),
    [("64B", "B"), ("64 B", "B"), ("48 kB", "kB"), ("3696 MHz", "MHz"), ("8 GB/s", "GB/s"),
     ("unlimited bit/s", "bit/s"), ("32768 * 32 bit", "bit"), ("1000 cycles", "cycles"),
     ("1 cycle", "cycle"), ("2 s", "s"), ("7", None)],
)
def test_units_with_or_without_space(text, unit):
    assert value_of(f"capacity = {text};").unit == unit


def test_expressions_are_left_associative_with_precedence():
    expr = value_of("capacity = 1 + 2 * 3 - 4 / 2;").expr
    assert isinstance(expr, S.BinOp) and expr.op == "-"
    assert isinstance(expr.left, S.BinOp) and expr.left.op == "+"
    assert isinstance(expr.left.right, S.BinOp) and expr.left.right.op == "*"


def test_atoms():
    (stmt,) = parse_block(
        'op((+), "load", unlimited, true, false, a.b.c[*], gpu.h.x.nr_units);').body
    ops, string, unl, t, f, star, prop = (a.expr for a in stmt.args)
    assert ops == S.OpLiteral("+", ops.span)
    assert string.value == "load"
    assert (unl.word, t.word, f.word) == ("unlimited", "true", "false")
    assert star.parts == ("a", "b", "c") and star.star and str(star) == "a.b.c[*]"
    assert prop.parts == ("gpu", "h", "x", "nr_units")


@pytest.mark.parametrize("op", ["+", "-", "*", "/"])
def test_operator_literals(op):
    (stmt,) = parse_block(f"op(({op}), 1);", "instructions").body
    assert stmt.args[0].expr.op == op


def test_reference_statements_may_span_lines():
    (ref,) = parse_block("perfect.hierarchy.\n   threads.thread;").body
    assert (isinstance(ref, S.RefStmt)
            and ref.name.parts == ("perfect", "hierarchy", "threads", "thread"))


def test_comments_are_skipped():
    block = parse_block("// line comment\n/* block\n comment */ capacity = 1; // trailing")
    assert len(block.body) == 1


def test_keywords_are_not_identifiers_but_prefixes_are():
    (ref,) = parse_block("devices;").body
    assert ref.name.parts == ("devices",)
    with pytest.raises(MclError):
        parse_block("device;")


def test_spans_are_one_based_and_exact():
    block = parse_block("  capacity = 48 kB;")
    (stmt,) = block.body
    assert (stmt.span.line, stmt.span.column) == (3, 3)
    assert stmt.value.unit_span.column == 17 and stmt.value.unit_span.end_column == 19
    assert (block.name_span.line, block.name_span.column) == (2, 8)


def test_syntax_error_position_and_expectation():
    with pytest.raises(MclError) as info:
        S.parse_hdl("hardware_description t;\nmemory m {\n  capacity = ;\n}\n", "t.hdl")
    (d,) = info.value.diagnostics
    assert d.code == "hdl-syntax" and (d.span.line, d.span.column) == (3, 14)
    assert "';'" in d.message


def test_end_of_file_points_after_the_last_token_and_empty_files_say_so():
    # Both used to point at the line after the last one, where no source line can be shown,
    # and an empty file got the hint "expected a value".
    src = "hardware_description t;\nmemory m {\n  capacity = 1 B; /* c */\n\n\n"
    with pytest.raises(MclError) as info:
        S.parse_hdl(src, "t.hdl")
    (d,) = info.value.diagnostics
    assert d.message == "syntax error: unexpected end of file"
    assert (d.span.line, d.span.column) == (3, 18)
    for empty in ("", "\n\n", "// only a comment\n/* and\n another */\n"):
        with pytest.raises(MclError) as info:
            S.parse_hdl(empty, "e.hdl")
        (d,) = info.value.diagnostics
        assert d.message == "the file is empty" and (d.span.line, d.span.column) == (1, 1)
        assert "hardware_description NAME;" in d.hint


def test_non_utf8_files_are_reported_at_the_byte(tmp_path):
    bad = tmp_path / "t.hdl"
    bad.write_bytes(b"hardware_description t;\n// caf\xe9\n")
    with pytest.raises(MclError) as info:
        S.parse_hdl_file(bad)
    (d,) = info.value.diagnostics
    assert d.code == "hdl-io" and "byte 0xe9 is not UTF-8 text" in d.message
    assert (d.span.line, d.span.column) == (2, 7)
    with pytest.raises(MclError, match="Is a directory"):
        S.parse_hdl_file(tmp_path)


@pytest.mark.parametrize(
    ("unit", "prop", "factor", "normal"),
    [("B", None, 1, "B"), ("kB", None, 1024, "B"), ("MB", None, 1024**2, "B"),
     ("GB", None, 1024**3, "B"), ("bit", None, 0.125, "B"), ("kbit", "width", 1024, "bit"),
     ("GB/s", None, 8 * 10**9, "bit/s"), ("bit/s", None, 1, "bit/s"),
     ("Mbit/s", None, 10**6, "bit/s"),
     ("MHz", None, 10**6, "Hz"), ("cycles", None, 1, "cycles"), ("cycle", None, 1, "cycles"),
     ("s", None, 1, "s"), ("ks", None, 1000, "s")],
)
def test_unit_normalisation(unit, prop, factor, normal):
    info = parse_unit(unit, prop)
    assert (info.factor, info.unit) == (factor, normal)


@pytest.mark.parametrize("bad", ["KB", "kb", "TB", "Hz/s", "B/B", "bytes"])
def test_unknown_units(bad):
    with pytest.raises(UnitError):
        parse_unit(bad)


def test_format_quantity_inverts_normalisation():
    assert format_quantity(48 * 1024, "B") == "48 kB"
    assert format_quantity(177_408_000_000 * 8, "bit/s") == "177.4 GB/s"
    assert format_quantity(3_696_000_000, "Hz") == "3.696 GHz"
    assert format_quantity(math.inf, "B") == "unlimited B"


@pytest.mark.parametrize("digits", ["١٢", "１６", "4٨"])
def test_unicode_digits_are_not_numbers(digits: str) -> None:
    """Python's `\\d` matches every Unicode digit; a description's numbers are 0-9 only, as
    MCPL's are (the grammar's IntLiteral)."""
    with pytest.raises(MclError) as info:
        S.parse_hdl(f"hardware_description t;\nmemory m {{\n  capacity = {digits} B;\n}}\n",
                    "t.hdl")
    (d,) = info.value.diagnostics
    assert d.code == "hdl-syntax" and d.span.line == 3
