"""The `kernel-views` lowering pass: views declared outside all foreach statements are
declared again in each kernel after them.

A view outside all foreach (a parameter's `as`, or the original MCL's views at function
level: kernels/gesummv/hopper_v5.mcpl's `a as float[n, n / VEC][VEC] a4;`) only renames
storage, and the host, which runs the statements outside foreach, has nothing to do for
it. Each top-level foreach nest after it becomes a kernel of its own (mcl.codegen.opencl
`split_host`), so each declares the view again, first in its innermost foreach, where
the kernel's statements stand whichever par_groups enclose them; where the view stood,
an empty block remains (the host's statement list keeps its shape).
"""

from __future__ import annotations

from dataclasses import replace

from mcl.mcpl.ast import Block, Decl, For, Foreach, Function, If, Stmt, ViewDecl
from mcl.mcpl.visitor import StrictVisitor


def views_into_kernels(f: Function) -> Function:
    """`f` with its views outside all foreach declared in the kernels after them."""
    mover = _ViewMover()
    stmts = tuple(mover.visit(s) for s in f.body.stmts)
    if not mover.views:
        return f
    return replace(f, body=replace(f.body, stmts=stmts))


def with_views(nest: Foreach, views: tuple[ViewDecl, ...]) -> Foreach:
    """`nest` with `views` declared first in its innermost foreach (where the kernel's
    statements stand, whichever par_groups enclose them)."""
    body = nest.body
    inner = body.stmts[0] if isinstance(body, Block) and len(body.stmts) == 1 else body
    between = _between_levels(body)
    if isinstance(inner, Foreach):
        body = with_views(inner, views)
    elif between is not None:  # declarations between the levels, then the next level
        *decls, level = between
        assert isinstance(level, Foreach)
        body = Block((*decls, with_views(level, views)), span=body.span)
    else:
        body = Block((*views, body), span=body.span)
    return Foreach(nest.var, nest.count, nest.group, body, span=nest.span)


def _between_levels(body: Stmt) -> tuple[Stmt, ...] | None:
    """The statements of a foreach body that are declarations followed by one foreach
    (`a[b] as float[4][8] row;` between the blocks and the threads); None otherwise."""
    stmts = body.stmts if isinstance(body, Block) else (body,)
    if stmts and isinstance(stmts[-1], Foreach) and all(
            isinstance(s, Decl | ViewDecl) for s in stmts[:-1]):
        return stmts
    return None


class _ViewMover(StrictVisitor):
    """The statements outside all foreach, in the order the host runs them (the order
    `split_host` reads them in): every statement kind has a rule; a new kind raises
    UnknownNodeError."""

    def __init__(self) -> None:
        self.views: list[ViewDecl] = []

    def visit_ViewDecl(self, s: ViewDecl) -> Stmt:
        self.views.append(s)
        return Block((), span=s.span)

    def visit_Foreach(self, s: Foreach) -> Stmt:
        # The views declared before it, declared again in its kernel.
        return with_views(s, tuple(self.views)) if self.views else s

    def visit_Block(self, s: Block) -> Stmt:
        return Block(tuple(self.visit(x) for x in s.stmts), span=s.span)

    def visit_If(self, s: If) -> Stmt:
        orelse = self.visit(s.orelse) if s.orelse is not None else None
        return If(s.cond, self.visit(s.then), orelse, span=s.span)

    def visit_For(self, s: For) -> Stmt:
        return For(s.init, s.cond, s.step, self.visit(s.body), span=s.span)

    def unchanged(self, s: Stmt) -> Stmt:
        return s

    visit_Decl = visit_Assign = visit_IncDec = visit_Return = unchanged
    visit_CallStmt = visit_Swap = visit_Barrier = unchanged
