"""Print any MCPL AST as idiomatic MCPL source.

The contract is `parse_source(print_module(m)) == m` (equality ignores spans). Parentheses
are minimal: they come only from `ast.BINARY_PRECEDENCE`, `UNARY_PRECEDENCE`,
`RIGHT_ASSOCIATIVE` and `NON_ASSOCIATIVE`, the same tables the parser's precedence
climbing uses, so printer and parser cannot disagree about what a tree means.
"""

from __future__ import annotations

from mcl.mcpl import ast as A
from mcl.mcpl.build import is_negative_literal
from mcl.mcpl.visitor import StrictVisitor

INDENT = "    "

_POSTFIX_PREC = 100  # names, literals, calls, indexing, field access: never need parentheses


# ---------------------------------------------------------------------------- expressions


def _prec(e: A.Expr) -> int:
    if isinstance(e, A.Binary):
        return A.BINARY_PRECEDENCE[e.op]
    if isinstance(e, A.Unary):
        return A.UNARY_PRECEDENCE
    if is_negative_literal(e):
        return A.UNARY_PRECEDENCE  # `-1` re-parses as a unary minus folded into the literal
    return _POSTFIX_PREC


def _float_text(lit: A.FloatLit) -> str:
    if lit.text:
        try:
            if float(lit.text) == lit.value:
                return lit.text
        except ValueError:
            pass
    text = repr(float(lit.value))
    return text if any(c in text for c in ".eE") else text + ".0"


def _wrap(e: A.Expr, needs_parens: bool) -> str:
    text = print_expr(e)
    return f"({text})" if needs_parens else text


def print_expr(e: A.Expr) -> str:
    """MCPL text of one expression with the fewest parentheses that keep its meaning."""
    return _PRINTER.visit(e)


class _Printer(StrictVisitor):
    """One rule per node kind: expressions and types give their text, statements their
    lines at an indentation level. A node kind without a rule raises."""

    def visit_IntLit(self, e: A.IntLit) -> str:
        return str(e.value)

    def visit_FloatLit(self, e: A.FloatLit) -> str:
        return _float_text(e)

    def visit_BoolLit(self, e: A.BoolLit) -> str:
        return "true" if e.value else "false"

    def visit_Name(self, e: A.Name) -> str:
        return e.name

    def visit_HwdConst(self, e: A.HwdConst) -> str:
        return ".".join(e.path)

    def visit_Call(self, e: A.Call) -> str:
        return f"{e.func}({', '.join(print_expr(a) for a in e.args)})"

    def visit_Index(self, e: A.Index) -> str:
        # `(gpu.a)[i]`: a description constant continued without parentheses would read
        # as a field access chain on a variable named like the description.
        base = _wrap(e.base, _prec(e.base) < _POSTFIX_PREC or isinstance(e.base, A.HwdConst))
        return f"{base}[{', '.join(print_expr(i) for i in e.indices)}]"

    def visit_Field(self, e: A.Field) -> str:
        # `(0).r`: without parentheses `0.` would read as the float literal 0.0; and
        # `(gpu.a).r` keeps a description constant apart from a longer one.
        literal = isinstance(e.base, (A.IntLit, A.FloatLit, A.HwdConst))
        base = _wrap(e.base, _prec(e.base) < _POSTFIX_PREC or literal)
        return f"{base}.{e.name}"

    def visit_Unary(self, e: A.Unary) -> str:
        inner = e.operand
        # `- -a` would read as a decrement to C eyes; parenthesise a directly nested sign.
        nested_sign = isinstance(inner, A.Unary) or is_negative_literal(inner)
        return e.op + _wrap(inner, _prec(inner) < A.UNARY_PRECEDENCE or nested_sign)

    def visit_Binary(self, e: A.Binary) -> str:
        return _print_binary(e)

    # -- types
    def visit_Prim(self, t: A.Prim) -> str:
        return t.name

    def visit_NamedType(self, t: A.NamedType) -> str:
        if t.args:
            return f"{t.name}({', '.join(print_expr(a) for a in t.args)})"
        return t.name

    def visit_ArrayType(self, t: A.ArrayType) -> str:
        groups = "".join(f"[{', '.join(print_expr(s) for s in g)}]" for g in t.dims)
        return print_type(t.element) + groups

    # -- statements
    def visit_Block(self, s: A.Block, indent: int) -> list[str]:
        pad = INDENT * indent
        return [f"{pad}{{", *_stmts(s.stmts, indent + 1), f"{pad}}}"]

    def _simple_line(self, s: A.Decl | A.Assign | A.IncDec, indent: int) -> list[str]:
        return [f"{INDENT * indent}{_simple(s)};"]

    visit_Decl = visit_Assign = visit_IncDec = _simple_line

    def visit_ViewDecl(self, s: A.ViewDecl, indent: int) -> list[str]:
        return [f"{INDENT * indent}{print_expr(s.viewed)} {_view(s.view)};"]

    def visit_CallStmt(self, s: A.CallStmt, indent: int) -> list[str]:
        return [f"{INDENT * indent}{print_expr(s.call)};"]

    def visit_Swap(self, s: A.Swap, indent: int) -> list[str]:
        return [f"{INDENT * indent}{print_expr(s.left)} <=> {print_expr(s.right)};"]

    def visit_Barrier(self, s: A.Barrier, indent: int) -> list[str]:
        return [f"{INDENT * indent}barrier({s.space});"]

    def visit_Return(self, s: A.Return, indent: int) -> list[str]:
        pad = INDENT * indent
        return [f"{pad}return;" if s.value is None else f"{pad}return {print_expr(s.value)};"]

    def visit_Foreach(self, s: A.Foreach, indent: int) -> list[str]:
        header = f"foreach (int {s.var} in {print_expr(s.count)} {s.group})"
        return _body(header, s.body, indent)

    def visit_For(self, s: A.For, indent: int) -> list[str]:
        header = f"for ({_simple(s.init)}; {print_expr(s.cond)}; {_simple(s.step)})"
        return _body(header, s.body, indent)

    def visit_If(self, s: A.If, indent: int) -> list[str]:
        return _if_lines(s, indent)


_PRINTER = _Printer()


def _print_binary(e: A.Binary) -> str:
    level = A.BINARY_PRECEDENCE[e.op]
    right_assoc = e.op in A.RIGHT_ASSOCIATIVE
    non_assoc = e.op in A.NON_ASSOCIATIVE
    lp, rp = _prec(e.left), _prec(e.right)
    left_parens = lp < level or (lp == level and (right_assoc or non_assoc))
    right_parens = rp < level or (rp == level and not right_assoc)
    if e.op == "^":
        # `-a ^ 2` reads as `(-a) ^ 2`, but a reader who learnt the mathematical order
        # (and the checker's mcpl-unary-power) wants the parentheses written out.
        left_parens = lp < _POSTFIX_PREC
        right_parens = rp < level
    return f"{_wrap(e.left, left_parens)} {e.op} {_wrap(e.right, right_parens)}"


# ---------------------------------------------------------------------------------- types


def print_type(t: A.Type) -> str:
    return _PRINTER.visit(t)


def _modifiers(const: bool, spaces: tuple[str, ...]) -> str:
    words = (["const"] if const else []) + list(spaces)
    return "".join(w + " " for w in words)


def print_param(p: A.Param) -> str:
    return f"{_modifiers(p.const, p.spaces)}{print_type(p.type)} {p.name}"


def _view(v: A.View) -> str:
    return f"as {print_type(v.type)} {v.name}"


def _decl_core(d: A.Decl) -> str:
    text = f"{_modifiers(d.const, d.spaces)}{print_type(d.type)} {d.name}"
    if d.init is not None:
        text += f" = {print_expr(d.init)}"
    if d.view is not None:
        text += " " + _view(d.view)
    return text


def _simple(s: A.Decl | A.Assign | A.IncDec) -> str:
    """A statement without its ';' — also the init and step of a for loop."""
    if isinstance(s, A.Decl):
        return _decl_core(s)
    if isinstance(s, A.Assign):
        return f"{print_expr(s.target)} {s.op} {print_expr(s.value)}"
    return f"{print_expr(s.target)}{s.op}"


# ----------------------------------------------------------------------------- statements


def ends_in_open_if(s: A.Stmt) -> bool:
    """True when an `else` printed after `s` would attach to an if inside it."""
    while True:
        if isinstance(s, A.If):
            if s.orelse is None:
                return True
            s = s.orelse
        elif isinstance(s, (A.For, A.Foreach)):
            s = s.body
        else:
            return False


def _body(header: str, body: A.Stmt, indent: int) -> list[str]:
    """`header {` ... `}` for blocks, or the header and an indented statement."""
    pad = INDENT * indent
    if isinstance(body, A.Block):
        return [f"{pad}{header} {{", *_stmts(body.stmts, indent + 1), f"{pad}}}"]
    return [f"{pad}{header}", *_lines(body, indent + 1)]


def _stmts(stmts: tuple[A.Stmt, ...], indent: int) -> list[str]:
    out: list[str] = []
    for s in stmts:
        out.extend(_lines(s, indent))
    return out


def _if_lines(s: A.If, indent: int) -> list[str]:
    pad = INDENT * indent
    header = f"if ({print_expr(s.cond)})"
    then = s.then
    if s.orelse is not None and not isinstance(then, A.Block) and ends_in_open_if(then):
        # Dangling else: braces keep the else with this if (a tree made by a pass may
        # need them; parsed code never arrives here).
        then = A.Block((then,))
    lines = _body(header, then, indent)
    if s.orelse is None:
        return lines
    if isinstance(then, A.Block):
        lines[-1] = f"{pad}}} else"
    else:
        lines.append(f"{pad}else")
    rest = s.orelse
    if isinstance(rest, A.If):
        chained = _if_lines(rest, indent)
        lines[-1] = lines[-1] + " " + chained[0].lstrip()
        return lines + chained[1:]
    if isinstance(rest, A.Block):
        lines[-1] += " {"
        return lines + _stmts(rest.stmts, indent + 1) + [f"{pad}}}"]
    return lines + _lines(rest, indent + 1)


def _lines(s: A.Stmt, indent: int) -> list[str]:
    return _PRINTER.visit(s, indent)


def print_stmt(s: A.Stmt, indent: int = 0) -> str:
    """MCPL text of one statement (several lines for compound statements)."""
    return "\n".join(_lines(s, indent))


# ------------------------------------------------------------------------------ top level


MAX_LINE = 100


def print_function(f: A.Function) -> str:
    head = f"{f.hwd} {print_type(f.ret)} {f.name}("
    params = [print_param(p) for p in f.params]
    header = head + ", ".join(params) + ")"
    if len(header) + 2 > MAX_LINE:
        # One parameter group per line, aligned after the parenthesis (as in Fig. 2).
        align = " " * len(head)
        lines, current = [], head
        for i, p in enumerate(params):
            last = i == len(params) - 1
            piece = p + (")" if last else ",")
            if current != head and len(current) + len(piece) + (2 if last else 0) > MAX_LINE:
                lines.append(current.rstrip())
                current = align
            current += piece + " "
        header = "\n".join([*lines, current.rstrip()])
    return "\n".join(_body(header, f.body, 0))


def print_typedef(t: A.TypeDef) -> str:
    params = f"({', '.join(print_param(p) for p in t.params)})" if t.params else ""
    fields = [f"{INDENT}{_decl_core(d)};" for d in t.fields]
    return "\n".join([f"type {t.name}{params} {{", *fields, "}"])


def print_module(m: A.Module) -> str:
    """MCPL text of a whole module: header lines, constants, types, then functions."""
    sections: list[str] = []
    header = []
    if m.package is not None:
        header.append(f"package {'.'.join(m.package)};")
    if m.name is not None:
        header.append(f"module {m.name};")
    if header:
        sections.append("\n".join(header))
    if m.exports is not None:
        sections.append(f"export {', '.join(m.exports)};")
    if m.imports:
        sections.append("\n".join(f"import {i.dotted};" for i in m.imports))
    if m.constants:
        sections.append("\n".join(f"{_decl_core(c)};" for c in m.constants))
    sections.extend(print_typedef(t) for t in m.types)
    sections.extend(print_function(f) for f in m.functions)
    return "\n\n".join(sections) + "\n"
