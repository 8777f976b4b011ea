"""Guards for foreach counts that a split does not divide — our addition to Appendix A.4.

The paper assumes every count divides the units of the new par_groups (Fig. 9: "assuming
that m can be divided by nrThreadsM"). We round the outer count up, so some units get an
index past the original count; their work must be skipped: `if (j < m) { ... }`.

A barrier inside the guarded work must still be reached by every unit that shares its
memory space, or the units that pass the guard wait forever. So the guard goes around the
work *between* barriers, never around a barrier:

    work1; barrier(local); for (...) { work2; barrier(local); } work3;
becomes
    if (g) { work1 } barrier(local); for (...) { if (g) { work2 } barrier(local); } if (g) { work3 }

A loop or `if` that holds a barrier runs unguarded, which is only correct when its header
has the same value for every unit (it reads no per-unit value such as the index); other
forms are reported as errors. Declarations that later segments read are hoisted in front
of the guard: whole when their initialiser is safe to evaluate for every unit, otherwise
as a declaration plus an assignment inside the guard.
"""

from __future__ import annotations

from collections.abc import Sequence

from mcl.diagnostics import MclError, error
from mcl.mcpl import ast
from mcl.mcpl.printer import print_expr
from mcl.mcpl.varying import assigned_names, header_names, names_in, varying_names
from mcl.mcpl.visitor import StrictVisitor


def guard_body(stmts: Sequence[ast.Stmt], cond: ast.Expr, per_unit: set[str]) -> list[ast.Stmt]:
    """Wrap `stmts` so that only units for which `cond` holds do their work, while every
    unit still reaches each barrier. `per_unit` names the variables whose value differs
    between units (the new and old foreach indices)."""
    varying = varying_names(stmts, per_unit)
    return _guard(list(stmts), cond, varying)


def has_barrier(node: object) -> bool:
    return any(isinstance(n, ast.Barrier) for n in ast.walk(node))


def _guard(stmts: list[ast.Stmt], cond: ast.Expr, varying: set[str]) -> list[ast.Stmt]:
    if not any(has_barrier(s) for s in stmts):
        return [ast.If(cond, ast.Block(tuple(stmts)), span=cond.span)] if stmts else []
    out: list[ast.Stmt] = []
    segment: list[ast.Stmt] = []
    for i, s in enumerate(stmts):
        if has_barrier(s):
            out += _close(segment, stmts[i:], cond, varying)
            segment = []
            out.append(_keep_barrier_reachable(s, cond, varying))
        else:
            segment.append(s)
    out += _close(segment, [], cond, varying)
    return out


def _close(
    segment: list[ast.Stmt], later: Sequence[ast.Stmt], cond: ast.Expr, varying: set[str]
) -> list[ast.Stmt]:
    """Guard one barrier-free segment, hoisting the declarations that `later` reads."""
    if not segment:
        return []
    read_later: set[str] = set()
    for s in later:
        read_later |= names_in(s)
    hoisted: list[ast.Stmt] = []
    kept: list[ast.Stmt] = []
    bound_inside: set[str] = set()  # declared inside the guard, or assigned there so far
    for s in segment:
        match s:
            case ast.Decl() if s.name in read_later:
                if any(s.name in names_in(k) for k in kept):
                    raise MclError(
                        error(
                            "translate-unsafe-guard",
                            f"cannot guard this body: '{s.name}' is used before its declaration "
                            "and also after a barrier",
                            s.span,
                        )
                    )
                # `int j;` has nothing to evaluate: hoisting the bare declaration is safe.
                if s.init is None or (
                    _safe_for_every_unit(s.init, varying) and not names_in(s.init) & bound_inside
                ):
                    hoisted.append(s)
                    continue
                hoisted.append(ast.Decl(s.type, s.name, s.spaces, False, None, s.view, span=s.span))
                kept.append(ast.Assign(ast.Name(s.name, span=s.span), "=", s.init, span=s.span))
                continue
            case ast.ViewDecl() if s.view.name in read_later:
                _hoistable_view(s, bound_inside, varying)
                hoisted.append(s)  # names storage: nothing to evaluate but a part's subscripts
                continue
        kept.append(s)
        if isinstance(s, ast.Decl):
            bound_inside.add(s.name)
        bound_inside |= assigned_names(s)
    return hoisted + ([ast.If(cond, ast.Block(tuple(kept)), span=cond.span)] if kept else [])


def _hoistable_view(s: ast.ViewDecl, bound_inside: set[str], varying: set[str]) -> None:
    """A view read after a barrier is declared before the guard, where every unit, also
    one that fails the guard, evaluates the subscripts of a part it views: they must not
    differ between units (`_safe_for_every_unit`) nor read what the guarded part sets."""
    if names_in(s.viewed) & bound_inside or not _safe_for_every_unit(s.part, varying):
        raise MclError(
            error(
                "translate-unsafe-guard",
                f"cannot guard this body: view '{s.view.name}' is used after a barrier, and "
                f"what it views, '{print_expr(s.viewed)}', differs between units",
                s.span,
                hint="declare the view before the foreach whose units are guarded (between "
                "the levels, where its subscripts are the same for all those units), or "
                "view the part again, under another name, after the barrier",
            )
        )


def _safe_for_every_unit(init: ast.Expr | None, varying: set[str]) -> bool:
    """Can a unit that fails the guard evaluate this initialiser? Only when it reads nothing
    that differs between units: then the original units computed the same value. A unit
    past the count has an index the original program never had, so even pure arithmetic on
    it may divide by zero or overflow (`100 / (n - t)` at t == n), and a read may fall
    outside its array."""
    return init is None or not (names_in(init) & varying)


def _keep_barrier_reachable(s: ast.Stmt, cond: ast.Expr, varying: set[str]) -> ast.Stmt:
    result: ast.Stmt = _BARRIER_KEEPER.visit(s, cond, varying)
    return result


class _BarrierKeeper(StrictVisitor):
    """A statement that holds a barrier, rebuilt so every unit still reaches the barrier
    while only the units that pass the guard do the work around it. Each statement kind
    that can hold a barrier has a rule; a new kind raises UnknownNodeError."""

    def visit_Barrier(self, s: ast.Barrier, cond: ast.Expr, varying: set[str]) -> ast.Stmt:
        return s

    def visit_Block(self, s: ast.Block, cond: ast.Expr, varying: set[str]) -> ast.Stmt:
        return ast.Block(tuple(_guard(list(s.stmts), cond, varying)), span=s.span)

    def visit_For(self, s: ast.For, cond: ast.Expr, varying: set[str]) -> ast.Stmt:
        _require_uniform(header_names(s) - {s.var} | ({s.var} & varying), varying, s, "loop")
        body = ast.Block(tuple(_guard(_stmts(s.body), cond, varying)), span=s.body.span)
        return ast.For(s.init, s.cond, s.step, body, span=s.span)

    def visit_If(self, s: ast.If, cond: ast.Expr, varying: set[str]) -> ast.Stmt:
        _require_uniform(names_in(s.cond), varying, s, "condition")
        then = ast.Block(tuple(_guard(_stmts(s.then), cond, varying)), span=s.then.span)
        orelse = None
        if s.orelse is not None:
            orelse = ast.Block(tuple(_guard(_stmts(s.orelse), cond, varying)), span=s.orelse.span)
        return ast.If(s.cond, then, orelse, span=s.span)

    def visit_Foreach(self, s: ast.Foreach, cond: ast.Expr, varying: set[str]) -> ast.Stmt:
        raise MclError(
            error(
                "translate-unsafe-guard",
                "cannot translate a barrier inside this statement for counts that do not "
                "divide the new par_groups",
                s.span,
                hint="move the barrier into a plain block, a for loop or an if statement",
            )
        )


_BARRIER_KEEPER = _BarrierKeeper()


def _require_uniform(reads: set[str], varying: set[str], s: ast.Stmt, what: str) -> None:
    bad = sorted(reads & varying)
    if bad:
        raise MclError(
            error(
                "translate-unsafe-guard",
                f"cannot keep the barrier in this {what} reachable by every unit: its header "
                f"reads {', '.join(repr(b) for b in bad)}, which differs between units",
                s.span,
                hint="a barrier must be reached by all units of its group; make the "
                f"{what} the same for every unit",
            )
        )


def _stmts(s: ast.Stmt) -> list[ast.Stmt]:
    return list(s.stmts) if isinstance(s, ast.Block) else [s]
