"""Splitting one leaf-level kernel into contiguous ranges of its blocks, one per device.

The units of the outermost foreach of a leaf kernel (the one mapped to work-groups or
CUDA blocks) share nothing but the arrays in device memory and run in any order (paper
section 4.1: a foreach has no order), so a contiguous range of them is a kernel of its
own. A range is expressed to the generated code as a sub-problem:

- the foreach runs `mcl_count` units and its index `bi` becomes `bi + mcl_first`
  everywhere in its body, so every index expression still sees the original block;
- every array parameter `x` is passed as the rows `mcl_x_lo .. mcl_x_lo + mcl_x_rows - 1`
  of its first dimension (its declared first extent becomes `mcl_x_rows` and each access
  `x[i, ...]` becomes `x[i - mcl_x_lo, ...]`), so a device receives, holds and returns
  only the rows its range touches.

Which rows a range touches comes from the kernel's own index expressions
(`mcl.multi.intervals`: interval arithmetic with the loop bounds, never smaller than the
truth). Written rows of different ranges must not overlap, except where every write of
the array is an `atomicAdd` (a histogram): then each range adds into zeros and the host
adds the partial arrays to the original. Anything else is refused with one line naming
the array and the access. The transformed program is generated once; every device runs
the same code with its own range in four integers per array. It is a checked program: the
leaf program's side tables follow the split, the new parameters declared and each use of
them bound and typed as it is built (`mcl.mcpl.typed`), so code generation reads its types
as it reads any checked program's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from mcl.diagnostics import MclError, Span, error
from mcl.mcpl import ast
from mcl.mcpl.printer import print_expr
from mcl.mcpl.sidetables import Binding, SideTables
from mcl.mcpl.typed import Typed
from mcl.mcpl.varying import assigned_names
from mcl.multi.intervals import Env, IndexInterval, interval_of

if TYPE_CHECKING:
    from mcl.hdl.library import HwdLibrary
    from mcl.mcpl.checked import CheckedProgram
    from mcl.mcpl.loader import Program

FIRST = "mcl_first"
COUNT = "mcl_count"


def lo_name(array: str) -> str:
    return f"mcl_{array}_lo"


def rows_name(array: str) -> str:
    return f"mcl_{array}_rows"


@dataclass
class Touched:
    """The rows (first dimension) of one array a range of blocks touches."""

    reads: IndexInterval | None = None
    writes: IndexInterval | None = None
    unbounded_read: bool = False
    unbounded_write: ast.Index | ast.Name | None = None  # the access, to name it
    plain_write: ast.Index | None = None  # a write that is not an atomicAdd
    atomic: ast.Index | None = None  # an atomicAdd of an element
    read_besides_atomic: bool = False


def _hull(a: IndexInterval | None, b: IndexInterval | None) -> IndexInterval | None:
    if a is None:
        return b
    if b is None:
        return a
    return IndexInterval(min(a.lo, b.lo), max(a.hi, b.hi))


class _RowsWalk:
    """The rows each array parameter is read and written at, for the blocks `blocks` of
    the split foreach: a walk over the function with the interval of every variable."""

    def __init__(self, function: ast.Function, split: ast.Foreach, blocks: IndexInterval,
                 env: dict[str, IndexInterval | None]) -> None:
        self.split, self.blocks = split, blocks
        self.arrays = {p.name for p in function.params if isinstance(p.type, ast.ArrayType)}
        self.reassigned = assigned_names(function.body)
        self.touched: dict[str, Touched] = {name: Touched() for name in self.arrays}
        self.stmt(function.body, env)

    def stmt(self, s: ast.Stmt | None, env: dict[str, IndexInterval | None]) -> None:
        match s:
            case None:
                return
            case ast.Block(stmts=stmts):
                env = dict(env)
                for inner in stmts:
                    self.stmt(inner, env)
                    if isinstance(inner, ast.Decl):
                        known = inner.init is not None and inner.name not in self.reassigned
                        env[inner.name] = interval_of(inner.init, env) if known else None
            case ast.Foreach(var=var, count=count, body=body):
                self.expr(count, env)
                if s is self.split:
                    inner_env = {**env, var: self.blocks}
                else:
                    units = interval_of(count, env)
                    inner_env = {**env, var: IndexInterval(0, units.hi - 1)
                                 if units is not None and units.hi >= 1 else None}
                self.stmt(body, inner_env)
            case ast.For():
                self.loop(s, env)
            case ast.If(cond=cond, then=then, orelse=orelse):
                self.expr(cond, env)
                self.stmt(then, _narrowed(cond, env))
                self.stmt(orelse, env)
            case ast.Assign(target=target, op=op, value=value):
                self.write(target, env, atomic=False)
                self.subscripts(target, env)
                if op != "=":
                    self.expr(target, env)
                self.expr(value, env)
            case ast.IncDec(target=target):
                self.write(target, env, atomic=False)
                self.expr(target, env)
            case ast.Swap(left=left, right=right):
                for side in (left, right):
                    self.write(side, env, atomic=False)
                    self.expr(side, env)
            case ast.Decl(init=init):
                self.expr(init, env)
            case _:  # a call, return, barrier or view: no statements inside
                for child in ast.children(s):
                    if not isinstance(child, ast.ArrayType | ast.Prim | ast.NamedType
                                      | ast.View):
                        self.expr(child, env)

    def loop(self, s: ast.For, env: dict[str, IndexInterval | None]) -> None:
        start = s.init.init if isinstance(s.init, ast.Decl) else s.init.value
        self.expr(start, env)
        first = interval_of(start, env)
        bound = interval_of(s.cond.right, env) if isinstance(s.cond, ast.Binary) else None
        rising = _rising(s.step, s.var, env)
        var: IndexInterval | None = None
        if (first is not None and bound is not None and rising is not None
                and isinstance(s.cond, ast.Binary) and isinstance(s.cond.left, ast.Name)
                and s.cond.left.name == s.var and s.var not in assigned_names(s.body)):
            op = s.cond.op
            if rising and op in ("<", "<="):
                var = IndexInterval(first.lo, max(first.lo, bound.hi - (op == "<")))
            elif not rising and op in (">", ">="):
                var = IndexInterval(min(first.hi, bound.lo + (op == ">")), first.hi)
        inner = {**env, s.var: var}
        self.expr(s.cond, inner)
        self.stmt(s.body, inner)

    # -- accesses -------------------------------------------------------------------
    def expr(self, e: object, env: Env) -> None:
        if e is None:
            return
        if isinstance(e, ast.Call):
            self.call(e, env)
            if e.func == "atomicAdd" and e.args:  # its target is written, not read
                self.subscripts(e.args[0], env)
                for arg in e.args[1:]:
                    self.expr(arg, env)
                return
        elif isinstance(e, ast.Index) and isinstance(e.base, ast.Name) \
                and e.base.name in self.arrays:
            self.read(e, env)
        for child in ast.children(e):
            self.expr(child, env)

    def subscripts(self, target: ast.Expr, env: Env) -> None:
        """The expressions inside a written element's subscripts are read."""
        while isinstance(target, ast.Index):
            for index in target.indices:
                self.expr(index, env)
            target = target.base

    def call(self, call: ast.Call, env: Env) -> None:
        from mcl.mcpl.builtins import BUILTINS

        if call.func == "atomicAdd" and call.args:
            self.write(call.args[0], env, atomic=True)
            return
        if call.func in BUILTINS:
            return
        for arg in call.args:  # an array handed to a function: any row, read or written
            if isinstance(arg, ast.Name) and arg.name in self.arrays:
                touched = self.touched[arg.name]
                touched.unbounded_read = True
                touched.unbounded_write = touched.unbounded_write or arg

    def read(self, node: ast.Index, env: Env) -> None:
        touched = self.touched[_base(node)]
        rows = interval_of(node.indices[0], env)
        if rows is None:
            touched.unbounded_read = True
        else:
            touched.reads = _hull(touched.reads, rows)
        touched.read_besides_atomic = True

    def write(self, target: ast.Expr, env: Env, atomic: bool) -> None:
        element = _element(target)
        if element is None or _base(element) not in self.arrays:
            return
        touched = self.touched[_base(element)]
        if atomic:
            touched.atomic = touched.atomic or element
        else:
            touched.plain_write = touched.plain_write or element
        rows = interval_of(element.indices[0], env)
        if rows is None:
            touched.unbounded_write = touched.unbounded_write or element
        else:
            touched.writes = _hull(touched.writes, rows)


_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "=="}


def _narrowed(cond: ast.Expr, env: dict[str, IndexInterval | None]
              ) -> dict[str, IndexInterval | None]:
    """`env` where `cond` holds: each conjunct `name < bound` (<=, >, >=, ==, either
    side) narrows the name's interval (`if (t < ROWS && ...)` around a write)."""
    out = dict(env)
    conjuncts = [cond]
    while conjuncts:
        c = conjuncts.pop()
        if not isinstance(c, ast.Binary):
            continue
        if c.op == "&&":
            conjuncts += [c.left, c.right]
            continue
        if c.op not in _FLIPPED:
            continue
        name, op, other = ((c.left, c.op, c.right) if isinstance(c.left, ast.Name)
                           else (c.right, _FLIPPED[c.op], c.left))
        if not isinstance(name, ast.Name):
            continue
        now, bound = out.get(name.name), interval_of(other, out)
        if now is None or bound is None:
            continue
        lo, hi = now.lo, now.hi
        if op in ("<", "<=", "=="):
            hi = min(hi, bound.hi - (op == "<"))
        if op in (">", ">=", "=="):
            lo = max(lo, bound.lo + (op == ">"))
        out[name.name] = IndexInterval(lo, max(lo, hi))
    return out


def _base(element: ast.Index) -> str:
    """The array an access `x[i, ...]` reads or writes."""
    return element.base.name if isinstance(element.base, ast.Name) else ""


def _element(target: ast.Expr) -> ast.Index | None:
    """The access `x[i, ...]` of an array parameter under a written target."""
    while isinstance(target, ast.Index | ast.Field):
        if isinstance(target, ast.Index) and isinstance(target.base, ast.Name):
            return target
        target = target.base
    return None


def _rising(step: ast.IncDec | ast.Assign, var: str, env: Env) -> bool | None:
    """Whether a loop's variable rises (True) or falls (False); None when unknown."""
    if not (isinstance(step.target, ast.Name) and step.target.name == var):
        return None
    if isinstance(step, ast.IncDec):
        return step.op == "++"
    by = interval_of(step.value, env)
    if step.op not in ("+=", "-=") or by is None or by.lo <= 0 <= by.hi:
        return None
    return (by.lo > 0) == (step.op == "+=")


# -- the plan --------------------------------------------------------------------------
@dataclass(frozen=True)
class Piece:
    """One range of blocks and the rows of each array it is given."""

    first: int
    count: int
    rows: Mapping[str, IndexInterval]  # by array: the rows the device holds
    writes: Mapping[str, IndexInterval | None]  # by written array: the rows it writes


@dataclass
class Split:
    """A kernel function split along its outermost foreach (`blocks` units)."""

    function: ast.Function  # at the leaf level, before the split
    ranged: ast.Function  # the kernel of one range
    blocks: int
    extents: dict[str, int]  # first extent of every array parameter
    added: set[str]  # arrays every range adds into (atomicAdd)
    foreach: ast.Foreach
    env: dict[str, IndexInterval | None] = field(default_factory=dict)
    # The checked program whose main module has `ranged` in the place of `function`
    # (split_program).
    program: CheckedProgram | None = None

    def piece(self, first: int, count: int) -> Piece:
        """The rows of every array that blocks first .. first + count - 1 touch; refused
        (MclError) where a write cannot be bounded."""
        walk = _RowsWalk(self.function, self.foreach, IndexInterval(first, first + count - 1),
                     self.env)
        rows: dict[str, IndexInterval] = {}
        writes: dict[str, IndexInterval | None] = {}
        for name, touched in walk.touched.items():
            extent = self.extents[name]
            if touched.unbounded_write is not None and name not in self.added:
                raise _refuse(self.function, name, touched.unbounded_write,
                              "is written at rows the compiler cannot bound per range of "
                              f"'{self.foreach.var}' (they depend on data or on a value it "
                              "cannot follow)")
            whole = IndexInterval(0, extent - 1)
            if touched.unbounded_read or (name in self.added):
                held = whole
            else:
                held = _hull(touched.reads, touched.writes) or IndexInterval(0, 0)
            rows[name] = held.clip(0, extent - 1) or IndexInterval(0, 0)
            if touched.writes is not None or touched.unbounded_write is not None:
                writes[name] = (touched.writes.clip(0, extent - 1)
                                if touched.writes is not None else whole)
        return Piece(first, count, rows, writes)

    def args(self, args: Mapping[str, Any], piece: Piece) -> dict[str, Any]:
        """The arguments of the ranged kernel for `piece`: the rows of every array it
        holds (zeros for an array it adds into), and its range."""
        out = dict(args)
        out[FIRST], out[COUNT] = piece.first, piece.count
        for name, rows in piece.rows.items():
            part = np.asarray(args[name])[rows.lo:rows.hi + 1]
            out[name] = np.zeros_like(part) if name in self.added else np.array(part)
            out[lo_name(name)], out[rows_name(name)] = rows.lo, rows.hi - rows.lo + 1
        return out

    def check_disjoint(self, pieces: Sequence[Piece]) -> None:
        """Refuse ranges that write the same rows of an array they do not add into."""
        for name in self.extents:
            if name in self.added:
                continue
            spans = sorted((w.lo, w.hi) for p in pieces
                           if (w := p.writes.get(name)) is not None)
            for (_, hi), (lo, _) in zip(spans, spans[1:], strict=False):
                if lo <= hi:
                    access = _first_write(self.function, name)
                    raise _refuse(self.function, name, access,
                                  f"writes rows that several ranges of '{self.foreach.var}' "
                                  "write (the ranges' rows overlap) and not with atomicAdd, "
                                  "so no order of their results is right")

    def assemble(self, args: Mapping[str, Any], pieces: Sequence[Piece],
                 outputs: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
        """The written arrays of the whole kernel from the pieces' outputs: the rows each
        range wrote, and for added arrays the original plus every range's sum."""
        written = {name for p in pieces for name in p.writes} | self.added
        result: dict[str, np.ndarray] = {}
        for name in sorted(written):
            whole = np.array(np.asarray(args[name]))
            for piece, out in zip(pieces, outputs, strict=True):
                if name not in out:
                    continue
                held = piece.rows[name]
                if name in self.added:
                    whole[held.lo:held.hi + 1] += out[name]
                    continue
                rows = piece.writes.get(name)
                if rows is None:
                    continue
                whole[rows.lo:rows.hi + 1] = out[name][rows.lo - held.lo:rows.hi - held.lo + 1]
            result[name] = whole
        return result


def _refuse(function: ast.Function, array: str, access: object, why: str) -> MclError:
    text = print_expr(access) if isinstance(access, ast.Index | ast.Name) else array
    span: Span | None = getattr(access, "span", None) or function.span
    return MclError(error(
        "multi-no-split",
        f"cannot split '{function.name}' across devices: '{text}' of array '{array}' {why}",
        span,
        hint="run it on one device (without --devices); a kernel whose ranges of blocks "
        "write disjoint rows of each array, or add into them with atomicAdd, can be split",
    ))


def _first_write(function: ast.Function, array: str) -> ast.Index | None:
    for node in ast.walk(function.body):
        target = node.target if isinstance(node, ast.Assign | ast.IncDec) else None
        element = _element(target) if target is not None else None
        if element is not None and _base(element) == array:
            return element
    return None


def _outermost(function: ast.Function) -> ast.Foreach:
    """The one foreach directly in the function's body (the grid of blocks)."""
    loops = [s for s in function.body.stmts if isinstance(s, ast.Foreach)]
    nested = [n for s in function.body.stmts if not isinstance(s, ast.Foreach)
              for n in ast.walk(s) if isinstance(n, ast.Foreach)]
    if len(loops) == 1 and not nested:
        return loops[0]
    where = (loops + nested)[1] if len(loops + nested) > 1 else None
    reason = ("has no foreach" if not loops and not nested else
              "launches its foreach from a host loop or condition" if not loops else
              f"launches {len(loops) + len(nested)} kernels (foreach statements), and one "
              "needs the complete results of the one before")
    raise MclError(error(
        "multi-no-split", f"cannot split '{function.name}' across devices: it {reason}",
        getattr(where, "span", None) or function.span,
        hint="run it on one device (without --devices); a kernel with one outermost "
        "foreach can be split"))


def plan_split(function: ast.Function, constants: Sequence[ast.Decl],
               values: Mapping[str, Any], tables: SideTables) -> Split:
    """Check that `function` (at a leaf level) can be split along its outermost foreach
    with the parameters at `values`, and the ranged kernel that runs one range (typed
    in `tables`, the checker's side tables of `function`)."""
    foreach = _outermost(function)
    env: dict[str, IndexInterval | None] = {}
    for c in constants:
        env[c.name] = interval_of(c.init, env)
    for p in function.params:
        value = values.get(p.name)
        if isinstance(value, int | np.integer) and not isinstance(value, bool):
            env[p.name] = IndexInterval.point(int(value))
    for s in function.body.stmts:  # the host code before the grid
        if s is foreach:
            break
        if isinstance(s, ast.Decl):
            env[s.name] = interval_of(s.init, env)
    count = interval_of(foreach.count, env)
    if count is None or not count.is_point:
        raise MclError(error(
            "multi-no-split",
            f"cannot split '{function.name}' across devices: the number of blocks "
            f"'{print_expr(foreach.count)}' is not known from the sizes",
            foreach.count.span or foreach.span))
    extents: dict[str, int] = {}
    for p in function.params:
        if isinstance(p.type, ast.ArrayType):
            extent = interval_of(p.type.dims[0][0], env)
            if extent is None or not extent.is_point:
                raise MclError(error(
                    "multi-no-split",
                    f"cannot split '{function.name}' across devices: the first extent of "
                    f"'{p.name}' is not known from the sizes", p.span))
            extents[p.name] = extent.hi
    for node in ast.walk(function.body):
        if isinstance(node, ast.ViewDecl) and node.source in extents:
            raise MclError(error(
                "multi-no-split",
                f"cannot split '{function.name}' across devices: the view of array "
                f"'{node.source}' reinterprets its rows", node.span))
    whole = _RowsWalk(function, foreach, IndexInterval(0, max(count.hi - 1, 0)), env)
    added = set()
    for name, touched in whole.touched.items():
        if touched.atomic is None:
            continue
        other = touched.plain_write or (touched.unbounded_write
                                        if touched.unbounded_write is not touched.atomic
                                        else None)
        if other is not None or touched.read_besides_atomic:
            access = other if other is not None else touched.atomic
            raise _refuse(function, name, access,
                          "is added into with atomicAdd and also read or written otherwise, "
                          "so the ranges' partial sums cannot be added up")
        added.add(name)
    return Split(function, _ranged(function, foreach, set(extents), tables), count.hi, extents,
                 added, foreach, env)


def split_program(program: CheckedProgram | Program, name: str, target: str,
                  library: HwdLibrary, values: Mapping[str, Any],
                  overrides: Mapping[str, Any] | None = None) -> Split:
    """`plan_split` for function `name` of `program` at leaf `target` (translated there
    first if needed); the split's `program` is the checked program that holds the ranged
    kernel in its place, its side tables following the split."""
    from mcl import pipeline
    from mcl.codegen.opencl import codegen_input

    at_leaf = pipeline.lower(program, target, library, name)
    leaf = codegen_input(at_leaf, target, library, overrides)
    function = leaf.module.function(name)
    if function is None:
        raise MclError(error("run-unknown-function", f"no function '{name}' to split"))
    split = plan_split(function, leaf.constants, values, leaf.tables)
    main = replace(leaf.module, functions=tuple(
        split.ranged if f is function else f for f in leaf.module.functions))
    source = at_leaf.program
    modules = {key: main if m is source.main else m for key, m in source.modules.items()}
    split.program = replace(at_leaf, program=replace(source, main=main, modules=modules),
                            tables=leaf.tables)
    return split


def _ranged(function: ast.Function, foreach: ast.Foreach, arrays: set[str],
            tables: SideTables) -> ast.Function:
    """The kernel of one range: foreach over COUNT blocks from FIRST, arrays rebased; the
    nodes it builds are typed and bound in `tables` (the checker's of `function`) as they
    are built, and the tables follow the rewrite."""
    typed = Typed(tables)
    integer = ast.Prim("int")
    first_param, first = typed.param(integer, FIRST)
    count_param, count = typed.param(integer, COUNT)
    extra = [first_param, count_param]
    lo: dict[str, Binding] = {}
    rows: dict[str, Binding] = {}
    for name in sorted(arrays):
        lo_param, lo[name] = typed.param(integer, lo_name(name))
        rows_param, rows[name] = typed.param(integer, rows_name(name))
        extra += [lo_param, rows_param]

    def shift(node: object) -> object | None:
        if isinstance(node, ast.Name) and node.name == foreach.var:
            return typed.binary("+", node, typed.use(first))
        return None

    def rebase(node: object) -> object | None:
        if isinstance(node, ast.Index) and isinstance(node.base, ast.Name) \
                and node.base.name in arrays:
            index, *rest = node.indices
            moved = typed.binary("-", index, typed.use(lo[node.base.name]))
            return replace(node, indices=(moved, *rest))
        return None

    body = tables.rewrite(foreach.body, shift)
    grid = replace(foreach, count=typed.use(count), body=body)
    stmts = tuple(grid if s is foreach else s for s in function.body.stmts)
    new_body = tables.rewrite(replace(function.body, stmts=stmts), rebase)
    params = []
    for p in function.params:
        if isinstance(p.type, ast.ArrayType):
            first_dims = (typed.use(rows[p.name]), *p.type.dims[0][1:])
            p = replace(p, type=replace(p.type, dims=(first_dims, *p.type.dims[1:])))
        params.append(p)
    return replace(function, params=(*params, *extra), body=new_body)


def ranges(blocks: int, speeds: Sequence[float]) -> list[tuple[int, int]]:
    """Contiguous (first, count) ranges of `blocks` units in proportion to `speeds`
    (units per second of each device); a device may get none."""
    total = sum(speeds)
    shares = [blocks * s / total for s in speeds]
    out, first, carried = [], 0, 0.0
    for i, share in enumerate(shares):
        carried += share
        end = blocks if i == len(shares) - 1 else min(blocks, round(carried))
        out.append((first, end - first))
        first = end
    return out
