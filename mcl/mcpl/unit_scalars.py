"""Scalars declared between foreach levels, seen from the host.

The original MCL programs declare a scalar inside a block and use it as the count of the
foreach inside it (`const int k = 4;`, then `foreach (int t in k threads)`). The host
launches the units, so it needs that count, and the scalar is not declared there. Such a
scalar is never written after its declaration (the checker refuses a written one between
foreach levels, docs/checker.md), so its initialiser is its value: the host computes the
count with the initialiser in the scalar's place. Translation does so for the dimension
statements it puts on the host (mcl.translate.foreach), code generation for the launch's
sizes (mcl.codegen.passes).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from mcl.identity import Ref
from mcl.mcpl import ast
from mcl.mcpl.varying import names_in

Rewrite = Callable[[ast.Expr, Callable[[object], object | None]], ast.Expr]
Initialisers = Mapping[str, "ast.Expr | None"]


def with_initialisers(expr: ast.Expr, inits: Initialisers,
                      rewrite: Rewrite = ast.transform) -> ast.Expr | None:
    """`expr` with each name of `inits` replaced by its initialiser, until none is left;
    None where one of them has no initialiser. `rewrite`: `ast.transform`, or a side
    table's `rewrite` so that the tables follow."""
    for _ in range(len(inits) + 1):
        used = names_in(expr) & inits.keys()
        if not used:
            return expr
        if any(inits[name] is None for name in used):
            return None
        expr = rewrite(expr, functools.partial(_initialiser, inits, used))
    return None  # initialisers that name each other: not a program the checker passes


def _initialiser(inits: Initialisers, names: set[str], node: object) -> object | None:
    """For `ast.transform`: a name among `names` replaced by its initialiser."""
    if isinstance(node, ast.Name) and node.name in names:
        return inits[node.name]
    return None


def counts_on_host(body: ast.Block, rewrite: Rewrite) -> dict[Ref[Any], ast.Expr]:
    """The count of each foreach in `body` that reads a scalar declared inside an enclosing
    foreach, as the host computes it (`with_initialisers`), by the count's node. A
    declaration counts in the statements after it in its block (and what they nest),
    shadowing an outer one of the same name."""
    found: dict[Ref[Any], ast.Expr] = {}
    _walk(body.stmts, {}, False, rewrite, found)
    return found


def _walk(stmts: tuple[ast.Stmt, ...], inits: dict[str, ast.Expr | None], inside: bool,
          rewrite: Rewrite, found: dict[Ref[Any], ast.Expr]) -> None:
    inits = dict(inits)  # this block's declarations end with it
    for s in stmts:
        match s:
            case ast.Decl():
                if inside:
                    inits[s.name] = s.init
                else:
                    inits.pop(s.name, None)  # a host variable: the host has it
            case ast.Foreach():
                if names_in(s.count) & inits.keys():
                    count = with_initialisers(s.count, inits, rewrite)
                    if count is not None:
                        found[Ref(s.count)] = count
                _walk(_stmts(s.body), inits, True, rewrite, found)
            case ast.Block():
                _walk(s.stmts, inits, inside, rewrite, found)
            case ast.If():
                _walk(_stmts(s.then), inits, inside, rewrite, found)
                if s.orelse is not None:
                    _walk(_stmts(s.orelse), inits, inside, rewrite, found)
            case ast.For():
                _walk(_stmts(s.body), inits, inside, rewrite, found)
            case _:
                pass  # holds no statement


def _stmts(s: ast.Stmt) -> tuple[ast.Stmt, ...]:
    return s.stmts if isinstance(s, ast.Block) else (s,)
