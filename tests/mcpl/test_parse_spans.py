"""Source spans of AST nodes and positions of syntax errors."""

from __future__ import annotations

import pytest

from mcl.diagnostics import MclError, Span
from mcl.mcpl import ast as A
from mcl.mcpl.parse import parse_source

SRC = """\
perfect void matmul(int n, int m, int p,
  main float[n, m] c,
  main float[n, p] a, main float[p, m] b) {
  foreach(int i in n threads) {
    foreach(int j in m threads) {
      float sum = 0.0;
      for(int k = 0; k < p; k++) {
        sum += a[i, k] * b[k, j];
      }
      c[i, j] = sum;
} } }
"""


def span_text(span: Span) -> str:
    """The source text a span covers."""
    lines = SRC.splitlines()
    if span.line == span.end_line:
        return lines[span.line - 1][span.column - 1 : span.end_column - 1]
    first = lines[span.line - 1][span.column - 1 :]
    middle = lines[span.line : span.end_line - 1]
    last = lines[span.end_line - 1][: span.end_column - 1]
    return "\n".join([first, *middle, last])


@pytest.fixture(scope="module")
def module() -> A.Module:
    return parse_source(SRC, "matmul.mcpl")


def test_every_node_has_a_span_in_the_file(module: A.Module) -> None:
    for node in A.walk(module):
        span = getattr(node, "span", None)
        assert span is not None, node
        assert span.file == "matmul.mcpl"
        assert (span.line, span.column) <= (span.end_line, span.end_column)


def test_spans_cover_exactly_their_text(module: A.Module) -> None:
    f = module.functions[0]
    assert span_text(f.params[3].span) == "main float[n, m] c"
    assert span_text(f.params[3].type.span) == "float[n, m]"
    outer = f.body.stmts[0]
    assert span_text(outer.span).startswith("foreach(int i in n threads) {")
    assert (outer.span.line, outer.span.column) == (4, 3)
    assert (outer.span.end_line, outer.span.end_column) == (11, 4)  # `} } }`: 2nd brace
    inner = outer.body.stmts[0].body.stmts
    assert span_text(inner[0].span) == "float sum = 0.0;"
    loop = inner[1]
    assert span_text(loop.init.span) == "int k = 0"
    assert span_text(loop.cond.span) == "k < p"
    assert span_text(loop.step.span) == "k++"
    update = loop.body.stmts[0]
    assert span_text(update.span) == "sum += a[i, k] * b[k, j];"
    product = update.value
    assert span_text(product.span) == "a[i, k] * b[k, j]"
    assert span_text(product.left.span) == "a[i, k]"
    assert span_text(product.left.indices[1].span) == "k"
    assert (product.left.indices[1].span.line, product.left.indices[1].span.column) == (8, 21)
    assert span_text(inner[2].target.span) == "c[i, j]"
    assert module.span.line == 1 and module.span.end_line == 11


def test_span_of_a_chain_over_two_lines() -> None:
    src = "gpu void f() {\n  int t = gpu.hierarchy.blocks.block.\n    threads.max_nr_units;\n}\n"
    decl = parse_source(src).functions[0].body.stmts[0]
    span = decl.init.span
    assert isinstance(decl.init, A.HwdConst)
    assert (span.line, span.column, span.end_line, span.end_column) == (2, 11, 3, 25)


def test_unary_and_negative_literal_spans() -> None:
    src = "perfect void f() { x = - !a + -1; }"
    value = parse_source(src).functions[0].body.stmts[0].value
    assert value.left.span.column == src.index("- !a") + 1
    assert value.left.operand.span.column == src.index("!a") + 1
    assert value.right == A.IntLit(-1)
    assert value.right.span.column == src.index("-1") + 1
    assert value.right.span.end_column == src.index("-1") + 3


def error_of(src: str):
    with pytest.raises(MclError) as exc:
        parse_source(src, "bad.mcpl")
    (d,) = exc.value.diagnostics
    assert d.code == "mcpl-syntax" and d.span.file == "bad.mcpl" and d.hint
    return d


def test_missing_semicolon_is_reported_where_the_statement_ends() -> None:
    d = error_of("perfect void f() {\n  x = 1   // no semicolon\n  y = 2;\n}\n")
    assert (d.span.line, d.span.column) == (2, 8)
    assert d.message == "expected an operator or ';', found end of line"
    assert "';'" in d.hint


def test_missing_semicolon_on_the_same_line() -> None:
    d = error_of("perfect void f() { x = 1 y = 2; }")
    assert (d.span.line, d.span.column) == (1, 26)
    assert d.message == "expected an operator or ';', found 'y'"


def test_unexpected_token_in_parameters() -> None:
    d = error_of("perfect void f(int n,) { }")
    assert (d.span.line, d.span.column) == (1, 22)
    assert d.message == "expected 'const', a name or a type, found ')'"


def test_reserved_word_as_name() -> None:
    d = error_of("perfect void f() {\n  int in = 3;\n}")
    assert (d.span.line, d.span.column) == (2, 7)
    assert "found 'in'" in d.message
    assert "reserved word" in d.hint


def test_foreach_without_int() -> None:
    d = error_of("perfect void f() { foreach (i in n threads) { } }")
    assert d.message == "expected 'const' or 'int', found 'i'"  # const: as the original
    assert "foreach (int i in n threads)" in d.hint


def test_unclosed_brace() -> None:
    d = error_of("perfect void f() {\n  x = 1;\n")
    assert d.message == "expected a statement or '}', found end of file"
    assert "never closed" in d.hint


def test_end_of_file_errors_point_at_the_last_token_and_the_unclosed_brace() -> None:
    # The position used to be the line after the last one, where there is no source line
    # to show under the message.
    src = "perfect void f() {\n  foreach (int i in n threads) {\n    x = 1; /* { */\n  // }\n}\n\n"
    d = error_of(src)
    assert (d.span.line, d.span.column) == (5, 2)
    assert d.hint == "the '{' at line 1, column 18 is never closed"
    d = error_of("perfect void f() {\n  x = 1 +\n\n")
    assert (d.span.line, d.span.column) == (2, 10)
    assert d.message == "expected an expression, found end of file"


def test_stray_character() -> None:
    d = error_of("perfect void f() { x = a @ b; }")
    assert (d.span.line, d.span.column, d.span.end_column) == (1, 26, 27)
    assert "'@' is not part of MCPL" in d.hint


def test_garbage_at_top_level() -> None:
    d = error_of("perfect void f() { }\n}")
    assert (d.span.line, d.span.column) == (2, 1)
    assert d.message == (
        "expected a function, constant, type, import or export or end of file, found '}'"
    )


def test_expression_statement_without_effect() -> None:
    d = error_of("perfect void f() { x + 1; }")
    assert "expected" in d.message  # `x + 1` stops at '+': not a statement start
    d = error_of("perfect void f() { a[i]; }")
    assert d.message == "this expression does nothing on its own"
    assert (d.span.column, d.span.end_column) == (20, 24)


def test_assignment_to_something_that_is_not_storage() -> None:
    d = error_of("perfect void f() { f(x) = 1; }")
    assert d.message == "cannot assign to this expression"
    d = error_of("perfect void f() { 3++; }")
    assert d.message == "cannot assign to this expression"


def test_top_level_variables_are_rejected() -> None:
    # MCPL has no global variables (section 4.3); only constants.
    d = error_of("float x = 1.0;\nperfect void f() { }")
    assert (d.span.line, d.span.column) == (1, 1)
    assert "found 'float'" in d.message
    assert "no global variables" in d.hint


def test_errors_are_never_tracebacks_for_deep_nesting() -> None:
    d = error_of("perfect void f() { x = " + "(" * 3000 + "1" + ")" * 3000 + "; }")
    assert "nested too deeply" in d.message
