"""Appendix A.4: translate the foreach statements of a function one step down.

A foreach over a par_group that maps to ONE par_group of the child is re-targeted
(TRANSLATEFOREACHSIMPLE). One that maps to several (perfect `threads` -> gpu `blocks` x
`threads`) is split (TRANSLATEFOREACHADVANCED / CREATEFOREACH): a perfect nest of foreach
statements over that par_group is one multi-dimensional foreach; its innermost dimension
is spread over the new par_groups and the outer dimensions go to the outermost of them.
Three kinds of statements come out, as in the paper's Fig. 9:

- dimension statements `int nrThreadsM = gpu.hierarchy.blocks.block.threads.max_nr_units;`
  `int nrBlocksM = (m + nrThreadsM - 1) / nrThreadsM;` — placed in host code, just before
  the outermost foreach, so they are computed once and are valid at every level;
- the new foreach statements `foreach (int bj in nrBlocksM blocks)`;
- indexing statements `int j = bj * nrThreadsM + tj;` at the top of the executing units'
  body, so the original body is unchanged below them.

Where we differ from the paper (it assumes counts divide evenly): the outermost count is
rounded up and the body is guarded (`if (j < m)`, see `guard.py`) unless the division is
known to be exact; every split dimension gets fresh readable index names (`i` -> `bi`
with `int i = bi;`, as Fig. 9 shows) even when it is only re-targeted.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace

from mcl.diagnostics import MclError, error
from mcl.hdl.model import ParGroup
from mcl.mcpl import ast
from mcl.mcpl.unit_scalars import with_initialisers
from mcl.mcpl.varying import names_in
from mcl.mcpl.visitor import StrictVisitor
from mcl.translate.counts import StaticInts
from mcl.translate.guard import guard_body
from mcl.translate.naming import NameSupply, dimension_name, index_name
from mcl.translate.step import Step

_INT = ast.Prim("int")


def translate_foreach_stmts(
    function: ast.Function,
    step: Step,
    names: NameSupply,
    statics: StaticInts,
    globals_: set[str],
) -> ast.Function:
    """TRANSLATEFOREACHSTATS over the whole function body."""
    translator = _ForeachTranslator(step, names, statics, globals_)
    body = translator.stmts(function.body.stmts, dims=None)
    return replace(function, body=replace(function.body, stmts=tuple(body)))


class _StatementWalker(StrictVisitor):
    """Finds the foreach statements to translate: every statement kind has a rule, so a
    new kind that could hold a foreach raises UnknownNodeError instead of being left
    untranslated."""

    def __init__(self, translator: _ForeachTranslator) -> None:
        self.t = translator

    def visit_Foreach(self, s: ast.Foreach, dims: list[ast.Stmt] | None) -> list[ast.Stmt]:
        with self.t.scope():
            return self.foreach(s, dims)

    def foreach(self, s: ast.Foreach, dims: list[ast.Stmt] | None) -> list[ast.Stmt]:
        if dims is None or self.t.unit_count(s):
            # In host code; or a count that reads a scalar declared between foreach levels
            # whose value host code cannot compute (`host_count`): this nest's dimension
            # statements then stand right before it, where every unit above computes
            # the same value.
            here: list[ast.Stmt] = []
            nest = self.t.foreach(s, here)
            return here + nest
        return self.t.foreach(s, dims)

    def visit_Decl(self, s: ast.Decl, dims: list[ast.Stmt] | None) -> list[ast.Stmt]:
        if dims is not None:
            self.t.unit_inits[s.name] = s.init
        else:
            self.t.unit_inits.pop(s.name, None)  # a host variable: the host has it
        return [s]

    def visit_Block(self, s: ast.Block, dims: list[ast.Stmt] | None) -> list[ast.Stmt]:
        with self.t.scope():
            return [replace(s, stmts=tuple(self.t.stmts(s.stmts, dims)))]

    def visit_If(self, s: ast.If, dims: list[ast.Stmt] | None) -> list[ast.Stmt]:
        orelse = None if s.orelse is None else self.t.sub(s.orelse, dims)
        return [replace(s, then=self.t.sub(s.then, dims), orelse=orelse)]

    def visit_For(self, s: ast.For, dims: list[ast.Stmt] | None) -> list[ast.Stmt]:
        return [replace(s, body=self.t.sub(s.body, dims))]

    def keep(self, s: ast.Stmt, dims: list[ast.Stmt] | None) -> list[ast.Stmt]:
        """A statement that holds no other statement, hence no foreach."""
        return [s]

    visit_ViewDecl = visit_Assign = visit_IncDec = keep
    visit_CallStmt = visit_Swap = visit_Barrier = visit_Return = keep


class _ForeachTranslator:
    def __init__(self, step: Step, names: NameSupply, statics: StaticInts, globals_: set[str]):
        self.step = step
        self.names = names
        self.statics = statics
        self.globals = globals_
        self.walker = _StatementWalker(self)
        self.per_unit: set[str] = set()  # every foreach index seen so far, old and new
        # Scalars declared inside a foreach so far, with their initialisers: never
        # written again (the checker's rule for a scalar between foreach levels).
        self.unit_inits: dict[str, ast.Expr | None] = {}

    @contextmanager
    def scope(self) -> Iterator[None]:
        """The declarations of a block or a foreach's body end with it."""
        saved = dict(self.unit_inits)
        try:
            yield
        finally:
            self.unit_inits = saved

    def host_count(self, count: ast.Expr) -> ast.Expr | None:
        """`count` as host code computes it (mcl.mcpl.unit_scalars): a scalar declared
        between foreach levels is replaced by its initialiser, so the dimension statements
        and the launch read no name of a unit. None where one has no initialiser or the
        value reads a foreach index."""
        value = with_initialisers(count, self.unit_inits)
        return None if value is None or names_in(value) & self.per_unit else value

    def unit_count(self, s: ast.Foreach) -> bool:
        """Whether a count of the nest at `s` has no value host code can compute."""
        return any(self.host_count(fe.count) is None for fe in _dimensions(s))

    # -- walking -----------------------------------------------------------------------

    def stmts(self, stmts: Sequence[ast.Stmt], dims: list[ast.Stmt] | None) -> list[ast.Stmt]:
        """`dims` collects dimension statements for host code; None means we ARE in host
        code (outside every foreach), where they are emitted right before the foreach."""
        out: list[ast.Stmt] = []
        for s in stmts:
            out += self.stmt(s, dims)
        return out

    def stmt(self, s: ast.Stmt, dims: list[ast.Stmt] | None) -> list[ast.Stmt]:
        result: list[ast.Stmt] = self.walker.visit(s, dims)
        return result

    def sub(self, s: ast.Stmt, dims: list[ast.Stmt] | None) -> ast.Stmt:
        """A nested statement (a body): stays one statement."""
        new = self.stmt(s, dims)
        return new[0] if len(new) == 1 else ast.Block(tuple(new), span=s.span)

    # -- A.4 ---------------------------------------------------------------------------

    def foreach(self, s: ast.Foreach, dims: list[ast.Stmt]) -> list[ast.Stmt]:
        """TRANSLATEFOREACHSTAT: simple re-targeting or a split."""
        groups = self.step.groups_for(s.group)
        if not groups:
            raise MclError(
                error(
                    "translate-no-equivalent-group",
                    f"par_group '{s.group}' of {self.step.source.name} has no equivalent in "
                    f"{self.step.target.name}",
                    s.span,
                )
            )
        self.per_unit.add(s.var)
        if len(groups) == 1:
            # TRANSLATEFOREACHSIMPLE
            return [replace(s, group=groups[0].name, body=self.sub(s.body, dims))]
        return self.split(s, groups, dims)

    def split(self, s: ast.Foreach, groups: list[ParGroup], dims: list[ast.Stmt]) -> list[ast.Stmt]:
        """TRANSLATEFOREACHADVANCED."""
        nest = _dimensions(s)
        self.per_unit.update(fe.var for fe in nest)

        new_foreaches: list[ast.Foreach] = []  # innermost first, as the paper builds them
        indexing: list[ast.Stmt] = []  # innermost dimension first
        guards: list[ast.Expr] = []
        remaining = groups
        for fe in reversed(nest):
            if len(remaining) == 1:
                # CREATEFOREACH's simple case, with Fig. 9's readable renaming (i -> bi).
                var = self.names.fresh(index_name(remaining[0].name, fe.var))
                new_foreaches.append(
                    ast.Foreach(var, fe.count, remaining[0].name, ast.Block(()), span=fe.span)
                )
                indexing.append(_int_decl(fe.var, ast.Name(var), fe))
                self.per_unit.add(var)
                continue
            foreaches, index, guard = self.create_foreach(fe, remaining, dims)
            new_foreaches += foreaches
            indexing.append(index)
            if guard is not None:
                guards.append(guard)
            remaining = [remaining[0]]

        # Line 16: inner foreach statements over other par_groups, after this nest's own
        # dimension statements so those read in the order they nest.
        inner = self.stmts(_body_stmts(nest[-1].body), dims)
        prologue = list(reversed(indexing))  # outermost dimension first, as in Fig. 9
        cond = _conjunction(list(reversed(guards)))
        body = self.place(inner, prologue, cond, new_foreaches[0].group, s)
        for fe in new_foreaches:
            body = [replace(fe, body=ast.Block(tuple(body), span=fe.span))]
        return body

    def create_foreach(
        self, fe: ast.Foreach, groups: list[ParGroup], dims: list[ast.Stmt]
    ) -> tuple[list[ast.Foreach], ast.Stmt, ast.Expr | None]:
        """CREATEFOREACH for one dimension spread over `groups` (outermost first). Returns
        the new foreach statements innermost first, the indexing statement, and the guard
        (None when the new units exactly cover the count)."""
        dim_vars: list[ast.Name] = []  # outermost first
        index_vars: list[ast.Name] = []
        foreaches: list[ast.Foreach] = []
        for k, pg in enumerate(reversed(groups)):
            outermost = k == len(groups) - 1
            dim_expr = self.dimension_expr(self.host_count(fe.count) or fe.count, pg,
                                           dim_vars, outermost)
            dim_var = self.names.fresh(dimension_name(pg.name, fe.count, fe.var, self.globals))
            index_var = self.names.fresh(index_name(pg.name, fe.var))
            dims.append(_int_decl(dim_var, dim_expr, fe))
            self.statics.bind(dim_var, dim_expr)
            foreaches.append(
                ast.Foreach(index_var, ast.Name(dim_var), pg.name, ast.Block(()), span=fe.span)
            )
            dim_vars.insert(0, ast.Name(dim_var))
            index_vars.insert(0, ast.Name(index_var))
            self.per_unit.add(index_var)
        index = _int_decl(fe.var, _indexing_expr(index_vars, dim_vars[1:]), fe)
        total = self.statics.value(_product(dim_vars))
        covered = total is not None and self.statics.value(fe.count) == total
        # The guard stems from the count, so problems with it are reported there.
        guard = None if covered else ast.Binary("<", ast.Name(fe.var), fe.count, span=fe.count.span)
        return foreaches, index, guard

    def dimension_expr(
        self, count: ast.Expr, pg: ParGroup, inner_dims: list[ast.Name], outermost: bool
    ) -> ast.Expr:
        """CREATEDIMENSIONEXP. Inner par_groups take the description's count; the
        outermost takes what is left, rounded up (the paper divides, assuming it is exact).
        An outermost par_group with an exact count keeps it: the source par_group's bound
        equals the product (Appendix A.2), so the units still cover the count."""
        if not outermost or pg.exact:
            return self.step.count_constant(pg)
        inner = _product(inner_dims)
        count_value, inner_value = self.statics.value(count), self.statics.value(inner)
        if count_value is not None and inner_value and count_value % inner_value == 0:
            return ast.Binary("/", count, inner)
        rounded_up = ast.Binary("-", ast.Binary("+", count, inner), ast.IntLit(1))
        return ast.Binary("/", rounded_up, inner)

    def place(
        self,
        inner: list[ast.Stmt],
        prologue: list[ast.Stmt],
        cond: ast.Expr | None,
        group: str,
        origin: ast.Foreach,
    ) -> list[ast.Stmt]:
        """Put the indexing statements and the guard in front of the statements the
        executing units run. When the split par_group is not the executing one, they go
        down into each nested foreach (only executing units may run statements, mcpl.md
        rule 4)."""
        if group == self.step.executing_group:
            guarded = inner if cond is None else guard_body(inner, cond, self.per_unit)
            return prologue + guarded
        out: list[ast.Stmt] = []
        for s in inner:
            match s:
                case ast.Foreach():
                    body = self.place(_body_stmts(s.body), prologue, cond, s.group, origin)
                    out.append(replace(s, body=ast.Block(tuple(body), span=s.body.span)))
                case ast.Block():
                    out.append(replace(s, stmts=tuple(
                        self.place(list(s.stmts), prologue, cond, group, origin))))
                case ast.Decl() | ast.ViewDecl():
                    out.append(s)
                case _:
                    raise MclError(
                        error(
                            "translate-statement-above-units",
                            f"cannot split the foreach over '{origin.group}': this statement runs "
                            f"at the level of par_group '{group}', above the executing units",
                            s.span,
                        )
                    )
        return out


# ------------------------------------------------------------------------------ helpers


def _dimensions(s: ast.Foreach) -> list[ast.Foreach]:
    """GETNRDIMENSIONS: the perfect nest of foreach statements over `s.group`, outermost
    first (`foreach (i in n threads) foreach (j in m threads)` is one 2-D foreach)."""
    nest = [s]
    while True:
        inner = _single(nest[-1].body)
        if isinstance(inner, ast.Foreach) and inner.group == s.group:
            nest.append(inner)
        else:
            break
    for n in ast.walk(nest[-1].body):
        if isinstance(n, ast.Foreach) and n.group == s.group:
            raise MclError(
                error(
                    "translate-imperfect-nest",
                    f"cannot split foreach statements over '{s.group}' that are not perfectly "
                    "nested: the inner one must be the only statement of the outer one's body",
                    n.span,
                )
            )
    return nest


def _single(s: ast.Stmt) -> ast.Stmt:
    while isinstance(s, ast.Block) and len(s.stmts) == 1:
        s = s.stmts[0]
    return s


def _body_stmts(s: ast.Stmt) -> list[ast.Stmt]:
    return list(s.stmts) if isinstance(s, ast.Block) else [s]


def _int_decl(name: str, init: ast.Expr, origin: ast.Foreach) -> ast.Decl:
    return ast.Decl(_INT, name, init=init, span=origin.span)


def _product(factors: Sequence[ast.Expr]) -> ast.Expr:
    """MULVARS: 1 for no factors."""
    if not factors:
        return ast.IntLit(1)
    result = factors[0]
    for f in factors[1:]:
        result = ast.Binary("*", result, f)
    return result


def _indexing_expr(index_vars: list[ast.Name], inner_dims: list[ast.Name]) -> ast.Expr:
    """CREATEINDEXINGEXP: `bj * nrThreadsM + tj`; with three par_groups
    `a * (nrB * nrC) + b * nrC + c`. `inner_dims[k]` is the size of `index_vars[k + 1]`."""
    terms: list[ast.Expr] = []
    for k, var in enumerate(index_vars):
        below = inner_dims[k:]
        terms.append(ast.Binary("*", var, _product(below)) if below else var)
    result = terms[0]
    for t in terms[1:]:
        result = ast.Binary("+", result, t)
    return result


def _conjunction(conds: list[ast.Expr]) -> ast.Expr | None:
    if not conds:
        return None
    result = conds[0]
    for c in conds[1:]:
        result = ast.Binary("&&", result, c, span=conds[0].span)
    return result
