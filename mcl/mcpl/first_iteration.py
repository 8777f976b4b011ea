"""Divisions by a loop's counter in the loop's first iteration (docs/checker.md, "Values").

`for (int k = 0; k < n; k++) { x = y / k; }` divides by zero at once: the counter is 0
when the body first runs. The constant folder cannot see it (k is no constant), so this
walk looks, in each loop that starts its counter at 0 and certainly runs its first
iteration (`k < 10`, `k < n` for a size n, taken to be positive as everywhere in the
checker), at the statements of the body that run before anything may change k or leave
the iteration: a division or remainder by k there is reported. The walk stops at the
first `if`, inner loop or `return` (what follows may not run, or k may change there) and
after a statement that writes k; a division after a `&&` or `||` may not run either.
"""

from __future__ import annotations

from collections.abc import Iterator

from mcl.diagnostics import Diagnostic, warning
from mcl.mcpl import ast
from mcl.mcpl.printer import print_expr


def first_iteration_divisions(function: ast.Function) -> list[Diagnostic]:
    sizes = {p.name for p in function.params if p.type == ast.Prim("int")}
    found: list[Diagnostic] = []
    for node in ast.walk(function.body):
        if isinstance(node, ast.For) and _runs_from_zero(node, sizes):
            for division in _first_divisions(node.body, node.var):
                found.append(warning(
                    "mcpl-division-by-zero",
                    f"'{print_expr(division)}' divides by zero: '{node.var}' is 0 in the "
                    "first iteration of its loop",
                    division.right.span or division.span,
                    f"start '{node.var}' at 1, or guard the division",
                ))
    return found


def _runs_from_zero(loop: ast.For, sizes: set[str]) -> bool:
    """Does `loop` set its counter to 0 and enter its body with that value?"""
    init = loop.init
    start = init.init if isinstance(init, ast.Decl) else init.value
    if not (isinstance(start, ast.IntLit) and start.value == 0):
        return False
    match loop.cond:
        case ast.Binary(op="<" | "!=", left=ast.Name(name=var), right=ast.IntLit(value=bound)):
            return var == loop.var and bound > 0
        case ast.Binary(op="<=", left=ast.Name(name=var), right=ast.IntLit(value=bound)):
            return var == loop.var and bound >= 0
        case ast.Binary(op="<" | "<=" | "!=", left=ast.Name(name=var), right=ast.Name(name=n)):
            return var == loop.var and n in sizes
    return False


def _first_divisions(body: ast.Stmt, var: str) -> Iterator[ast.Binary]:
    """The divisions by `var` that the first iteration of `body` certainly makes."""
    for stmt in body.stmts if isinstance(body, ast.Block) else (body,):
        if isinstance(stmt, ast.Block):
            yield from _first_divisions(stmt, var)
            if _writes(stmt, var) or _may_leave(stmt):
                return
        elif isinstance(stmt, ast.Decl | ast.Assign | ast.CallStmt):
            yield from _unconditional_divisions(stmt, var)
            if _writes(stmt, var):
                return
        else:
            # an `if`, a loop, a return: the walk ends there (looking inside a nested
            # loop for writes of k would walk every loop's body again: quadratic nests)
            return


def _unconditional_divisions(node: object, var: str) -> Iterator[ast.Binary]:
    if isinstance(node, ast.Binary):
        if node.op in ("&&", "||"):
            yield from _unconditional_divisions(node.left, var)  # the right may not run
            return
        if node.op in ("/", "%") and isinstance(node.right, ast.Name) \
                and node.right.name == var:
            yield node
    for child in ast.children(node):
        yield from _unconditional_divisions(child, var)


def _writes(stmt: object, var: str) -> bool:
    for n in ast.walk(stmt):
        match n:
            case ast.Assign(target=ast.Name(name=name)) | ast.IncDec(target=ast.Name(name=name)):
                if name == var:
                    return True
            case ast.Decl(name=name):  # another variable of that name from here on
                if name == var:
                    return True
            case ast.Call(args=args):  # passed to a function, which may write it
                if any(isinstance(a, ast.Name) and a.name == var for a in args):
                    return True
    return False


def _may_leave(stmt: object) -> bool:
    return any(isinstance(n, ast.Return) for n in ast.walk(stmt))
