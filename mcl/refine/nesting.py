"""Two nested loops swapped: the header of a loop, `foreach (...)` or `for (...)`, as a
span of the source text (two loops swap places by swapping their headers, and everything
else, the body, its comments, the layout, stays as written), and which accesses the swap
lets walk their fastest dimension along the inner loop."""

from __future__ import annotations

from mcl.diagnostics import Span
from mcl.identity import Ref
from mcl.mcpl import ast
from mcl.mcpl.printer import print_expr
from mcl.refine.edits import TextEdit, line_of
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.places import names_in
from mcl.refine.refinement import Refused


def header_span(kernel: KernelAtLevel, loop: ast.Foreach | ast.For) -> Span:
    """The span of the loop's keyword up to its closing parenthesis, which must stand on
    the loop's first line in the kernel's own file."""
    keyword = "foreach" if isinstance(loop, ast.Foreach) else "for"
    span = loop.span
    name = f"{keyword} {loop.var}"
    if span is None or not kernel.in_file(span):
        raise Refused(f"{name} is not in the kernel's own file")
    row = line_of(kernel.text, span.line)
    start = span.column - 1
    close = _closing_parenthesis(row, row.find("(", start))
    if not row.startswith(keyword, start) or close is None:
        raise Refused(f"the header of {name} (line {span.line}) does not stand on one line")
    return Span(span.file, span.line, span.column, span.line, close + 2)


def swapped_headers(kernel: KernelAtLevel, outer: ast.Foreach | ast.For,
                    inner: ast.Foreach | ast.For) -> tuple[TextEdit, TextEdit]:
    """The edits that give `outer` the header of `inner` and `inner` that of `outer`."""
    outer_head, inner_head = header_span(kernel, outer), header_span(kernel, inner)
    return (TextEdit.replacing(outer_head, _text(kernel, inner_head)),
            TextEdit.replacing(inner_head, _text(kernel, outer_head)))


def _closing_parenthesis(row: str, opening: int) -> int | None:
    if opening < 0:
        return None
    depth = 0
    for at in range(opening, len(row)):
        depth += {"(": 1, ")": -1}.get(row[at], 0)
        if depth == 0:
            return at
    return None


def _text(kernel: KernelAtLevel, span: Span) -> str:
    return line_of(kernel.text, span.line)[span.column - 1:span.end_column - 1]


def whole_accesses(node: object) -> list[ast.Index]:
    """Element accesses below `node`, each whole: `d[i][j]`, not its part `d[i]`."""
    found = [n for n in ast.walk(node) if isinstance(n, ast.Index)]
    parts = {Ref(n.base) for n in found}
    return [n for n in found if Ref(n) not in parts]


def fastest_walks(body: object, outer: str, inner: str) -> tuple[list[ast.Index],
                                                                  list[ast.Index]]:
    """The accesses of `body` whose last index (the fastest dimension) reads `outer` and
    not `inner`, which the swap lets walk along the inner loop; and those that read
    `inner` and not `outer`, which walk along it now and would stride after the swap."""
    gained, lost = [], []
    for access in whole_accesses(body):
        fastest = names_in(access.indices[-1])
        if outer in fastest and inner not in fastest:
            gained.append(access)
        elif inner in fastest and outer not in fastest:
            lost.append(access)
    return gained, lost


def require_fewer_strides(body: object, outer: str, inner: str, what: str) -> list[ast.Index]:
    """The accesses the swap of the loops over `outer` and `inner` (`what`, in words) lets
    walk their last index along the inner loop; `Refused` where it makes as many stride."""
    gained, lost = fastest_walks(body, outer, inner)
    if not gained and not lost:
        raise Refused(f"no access's last index reads {outer} or {inner} alone: {what} "
                      "changes no access's stride")
    if len(lost) >= len(gained):
        raise Refused(f"{what} lets {len(gained)} access(es) walk their last index along "
                      f"the inner loop ({access_texts(gained) or 'none'}) and makes {len(lost)} "
                      f"stride ({access_texts(lost)}): no fewer accesses stride")
    return gained


def access_texts(accesses: list[ast.Index]) -> str:
    return ", ".join(print_expr(a) for a in accesses)


def only_statement(body: ast.Stmt) -> ast.Stmt | None:
    """The one statement of a loop's `body` (a block holding one statement, or the
    statement itself); None where it holds several or none."""
    if isinstance(body, ast.Block):
        return body.stmts[0] if len(body.stmts) == 1 else None
    return body


def places(accesses: list[ast.Index]) -> set[tuple[int, int]]:
    """(line, column) of each access: what a finding's span is matched against."""
    return {(a.span.line, a.span.column) for a in accesses if a.span is not None}
