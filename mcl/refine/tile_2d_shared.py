"""tile-2d-shared: tile-2d's 2-D tile of elements per thread, with the block's tiles of
the row's and the column's operands staged in the block's memory (shared at hopper)
phase by phase along the reduction: per phase of TILE_K iterations the block's threads
load a TILE_I x TILE_K tile of `a` and a TILE_K x TILE_J tile of `b` together (a thread
per element, consecutive threads along the arrays' last index, so a warp's loads are
coalesced), a barrier, every thread computes the phase's iterations from the staged
tiles into its registers, and a second barrier keeps the next phase's loads from
overwriting what a slower thread still reads. This is the paper's gpu (v1) (section 5.1:
"local memory can be leveraged") together with gpu (v2)/(v3)'s several elements per
thread, the shape of kernels/matmul/hopper_v1: each element of `a` and `b` comes from
device memory (or the L2) once per block instead of once per thread that reads it, and
the threads read it from the on-chip tile.

tile-2d alone leaves those loads to the L1 cache: a warp reads ELEMS_I rows of `a` whose
lines lie a row's length apart, and each is read again by every block of the row; staged,
the block's threads load each line once per phase, in full. Phases past the end of the
reduction store zeros into the tiles, so that every phase runs TILE_K iterations (a
constant count the compiler unrolls): the sums add products of staged values only, and
a product with a zero adds nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from mcl.mcpl import ast
from mcl.refine.edits import TextEdit, indentation, span_text
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.loops import loop_shape
from mcl.refine.nesting import whole_accesses
from mcl.refine.places import constant_env, every_name, fresh_names, names_in
from mcl.refine.refinement import (
    Parameter,
    Proposal,
    Refused,
    block_space,
    for_loop_at,
    integer,
)
from mcl.refine.tile_2d import (
    Hoisted,
    Layout,
    Tile2D,
    TilePlan,
    block_sizes,
    element_offset,
    hoisted_loads,
    reduction_shape,
    thread_body,
    zero_of,
)
from mcl.refine.unit_rows import text_of

# The phase's steps a list gives (mcl tune and set-constant try the others).
TILE_K = 8
TILE_K_TUNE = "4, 8, 16, 32"


@dataclass(frozen=True)
class Staged:
    """A load of the reduction's body staged in the block's memory: `hoisted` (its
    register and kind), the load, and its tile `array` with one dimension per index of
    the load, in order (`dims`: the tile's extents)."""

    hoisted: Hoisted
    access: ast.Index
    array: str
    dims: tuple[str, ...]


class Tile2DShared(Tile2D):
    name = "tile-2d-shared"
    summary = ("tile-2d with the block's tiles of the row's and column's operands staged "
               "in the block's memory, phase by phase along the reduction")
    parameters = (*Tile2D.parameters,
                  Parameter("tile_k", "the iterations of the reduction per phase",
                            optional=True))
    preconditions = (
        *Tile2D.preconditions,
        "the reduction is one loop `for (int K = C; K < E; K++)` (or `<=`), C a constant, "
        "E reading only the kernel's parameters and named constants (every thread of "
        "the block runs the same phases and reaches both barriers)",
        "the loop's body only adds to the accumulators products of loads that read the "
        "row or the column and K (`sum += a[i, k] * b[k, j]`): each index of such a load "
        "is the row, the column or K alone, and K appears nowhere else in the body (so "
        "the phases may run past E: their operands are zeros, and so are the products)",
        "a unit of the blocks' par_group declares a writable memory space",
    )

    def default_args(self) -> dict[str, str]:
        return {"tile_k": str(TILE_K)}

    def fitting(self, kernel: KernelAtLevel, line: int, elems_i: int, elems_j: int
                ) -> list[Proposal]:
        """tile-2d's tile at the largest block whose registers it fits, and at half that
        block where the block's constant allows it: two blocks of half the threads share
        an SM as one does, with twice the tiles' loads in flight between the barriers
        (hopper_v1 runs 256 threads a block), and the model weighs which is faster."""
        first = self._fitting(kernel, line, elems_i, elems_j)
        args = dict(first.args)
        shape = reduction_shape(kernel, for_loop_at(kernel, line))
        threads = int(args.get("threads", shape.warps_n * shape.lanes_n))
        if threads // 2 not in block_sizes(kernel, shape) or int(args["threads_i"]) > threads // 2:
            return [first]
        try:
            return [first, self.propose(kernel, {**args, "threads": str(threads // 2)})]
        except Refused:
            return [first]

    def propose(self, kernel: KernelAtLevel, args: Mapping[str, str]) -> Proposal:
        plan = self.plan(kernel, args)
        tile_k = integer(args, "tile_k", TILE_K)
        if tile_k < 1:
            raise Refused(f"tile_k={tile_k}: a positive number of iterations is needed")
        shape = plan.shape
        (loop,) = shape.loops if len(shape.loops) == 1 else (None,)
        if loop is None:
            raise Refused(f"the reduction is a nest of {len(shape.loops)} loops: one "
                          "loop is staged phase by phase")
        env = constant_env(kernel.source.program.main)
        form = loop_shape(loop, env)
        if form is None or form.step != 1:
            raise Refused(f"the loop over {loop.var} is not `for (int {loop.var} = C; "
                          f"{loop.var} < E; {loop.var}++)` with C a constant")
        params = {p.name for p in kernel.source_function.params}
        constants = {c.name for c in kernel.constants()}
        if names_in(form.bound) - params - constants:
            raise Refused(f"the bound of the loop over {loop.var} reads "
                          f"{', '.join(sorted(names_in(form.bound) - params - constants))}:"
                          " every thread of the block must run the same phases")
        space = block_space(kernel, shape.blocks.group, "the operands' tiles")
        taken = every_name(kernel.source_function) | set(vars(plan.names).values()) \
            | constants
        k0, kk, r, e, tk = fresh_names((f"{loop.var}0", f"{loop.var}{loop.var}", "r", "e",
                                        "TILE_K"), taken)
        taken |= {k0, kk, r, e, tk}
        staged = _staged(kernel, plan, loop, tk, taken)
        layout = self.layout_of(kernel, plan, args, loop, staged, (tk, tile_k), taken)
        operands = self.phase_operands(kernel, plan, loop, staged, space,
                                       (k0, kk, r, e, tk), taken, layout)
        body = thread_body(kernel, shape, plan.row, plan.names, operands, layout)
        threads = threads_text(kernel, plan)
        sizes = {tk: tile_k, plan.names.tile_i: plan.threads_i * plan.elems_i,
                 plan.names.tile_j: plan.threads // plan.threads_i * plan.elems_j}
        rule = " && ".join(f"{' * '.join(s.dims)} % ({threads}) == 0" for s in staged)
        return self.proposal(
            kernel, plan, body, (("tile_k", str(tile_k)), *(layout.args if layout else ())),
            [*self.header(tk, loop.var, staged),
             f"// tune: {TILE_K_TUNE}",
             f"// require: {rule}",
             f"const int {tk} = {tile_k};",
             *(layout.constants() if layout else ())],
            [_tiles(kernel, plan, staged, space, self.buffers, layout)],
            f"; per phase of {tile_k} iterations of {loop.var} the block's tiles of "
            + " and ".join(f"{_array_of(s.access)} ({' x '.join(str(sizes[d]) for d in s.dims)})"
                           for s in staged)
            + f" are staged in {space} memory, " + self.loaded_how
            + (layout.summary if layout else ""))

    # The tiles' buffers per operand: one, loaded and read within a phase (a subclass
    # double-buffers them, mcl.refine.tile_2d_prefetch).
    buffers = 1
    loaded_how = "loaded by its threads together"

    def header(self, tile_k: str, var: str, staged: list[Staged]) -> list[str]:
        """The comment lines above the phase's constant."""
        return [f"// tile-2d-shared: {tile_k} iterations of the loop over {var} per phase, "
                "the tiles of the operands",
                f"// loaded by the block's threads together, "
                f"{' and '.join(s.array for s in staged)} (one element per thread at a time)"]

    def layout_of(self, kernel: KernelAtLevel, plan: TilePlan, args: Mapping[str, str],
                  loop: ast.For, staged: list[Staged], tile_k: tuple[str, int],
                  taken: set[str]) -> StagedLayout | None:
        """How the block's threads cover its tile and its tiles are laid out, where
        `args` ask otherwise than tile-2d's rows and columns (None: as tile-2d); a
        subclass gives the options (mcl.refine.tile_2d_prefetch). `tile_k`: the phase's
        constant and its value."""
        return None

    def phase_operands(self, kernel: KernelAtLevel, plan: TilePlan, loop: ast.For,
                       staged: list[Staged], space: str,
                       names: tuple[str, str, str, str, str], taken: set[str],
                       layout: StagedLayout | None) -> PhaseOperands:
        """The loop of phases around the iterations (`thread_body`'s operands); `taken`:
        the names in use, for any more it declares."""
        return PhaseOperands(kernel, plan, loop, staged, space, names)


class StagedLayout(Layout, Protocol):
    """A layout of the threads over the tile (tile_2d.Layout) that also lays out the
    staged tiles: its parameters (`args`), the named constants it declares, the words
    the proposal adds (`summary`) and each tile's declared extents."""

    @property
    def args(self) -> tuple[tuple[str, str], ...]: ...

    @property
    def summary(self) -> str: ...

    def constants(self) -> list[str]: ...

    def declared(self, s: Staged) -> Sequence[str]: ...


def threads_text(kernel: KernelAtLevel, plan: TilePlan) -> str:
    shape = plan.shape
    return f"{text_of(kernel, shape.warps.count)} * {text_of(kernel, shape.threads.count)}"


def _array_of(access: ast.Index) -> str:
    base: ast.Expr = access
    while isinstance(base, ast.Index):
        base = base.base
    return base.name if isinstance(base, ast.Name) else "load"


def _indices(access: ast.Index) -> list[ast.Expr]:
    """The load's indices, outermost dimension first (`a[i, k]` and `a[i][k]` alike)."""
    out: list[ast.Expr] = []
    at: ast.Expr = access
    while isinstance(at, ast.Index):
        out = [*at.indices, *out]
        at = at.base
    return out


def _staged(kernel: KernelAtLevel, plan: TilePlan, loop: ast.For, tile_k: str,
            taken: set[str]) -> list[Staged]:
    """The loads of the body to stage, each with its tile (Refused where the body is not
    sums of products of them)."""
    n, row, column = plan.names, plan.row.name, plan.shape.row
    body = loop.body
    hoisted = hoisted_loads(kernel, plan.shape, row, n)
    by_span = {span: h for h in hoisted for span in h.spans}
    accesses = [a for a in whole_accesses(body)
                if not any(o is not a and _inside(o, a) for o in whole_accesses(body))]
    staged: dict[str, Staged] = {}
    spans_staged: set[object] = set()
    for access in accesses:
        h = by_span.get(access.span) if access.span is not None else None
        if h is None or h.kind not in ("i", "j"):
            raise Refused(f"the load {span_text(kernel.text, access.span) if access.span else ''}"
                          f" reads neither only the row nor only the column: only such "
                          "loads are staged")
        own = row if h.kind == "i" else column
        indices = _indices(access)
        names = [x.name if isinstance(x, ast.Name) else None for x in indices]
        if sorted(x or "" for x in names) != sorted((own, loop.var)):
            raise Refused(f"the indices of {h.text} are not {own} and {loop.var} alone")
        if h.text not in staged:
            extent = n.tile_i if h.kind == "i" else n.tile_j
            tile = fresh_names((f"tile_{_array_of(access)}",), taken)[0]
            taken.add(tile)
            staged[h.text] = Staged(h, access, tile,
                                    tuple(tile_k if x == loop.var else extent for x in names))
        assert access.span is not None
        spans_staged.add(access.span)
    for stmt in body.stmts if isinstance(body, ast.Block) else (body,):
        if not (isinstance(stmt, ast.Assign) and stmt.op == "+="
                and isinstance(stmt.target, ast.Name) and _product_of(stmt.value, spans_staged)):
            raise Refused(f"the body of the loop over {loop.var} does more than add "
                          "products of the staged loads to the accumulators")
    if not staged:
        raise Refused(f"the loop over {loop.var} loads nothing to stage")
    return list(staged.values())


def _inside(outer: ast.Node, inner: ast.Node) -> bool:
    return any(n is inner for n in ast.walk(outer))


def _product_of(e: ast.Expr, staged: set[object]) -> bool:
    """Is `e` a product of the staged loads (a zero operand makes it zero)?"""
    if isinstance(e, ast.Binary) and e.op == "*":
        return _product_of(e.left, staged) and _product_of(e.right, staged)
    return isinstance(e, ast.Index) and e.span in staged


def _tiles(kernel: KernelAtLevel, plan: TilePlan, staged: list[Staged], space: str,
           buffers: int, layout: StagedLayout | None = None) -> TextEdit:
    """The tiles, declared in the block's memory before the warps' foreach (`buffers`
    of each, a leading dimension where there are several; extents as `layout` lays
    them out, or the tile's own)."""
    warps = plan.shape.warps
    assert warps.span is not None
    indent = indentation(kernel.text, warps.span.line)
    if warps.span.column != len(indent) + 1:
        raise Refused(f"foreach {warps.var} does not start its line")
    lines = [f"{indent}// the phase's tiles of the operands, loaded by the block's threads "
             "together"]
    lead = f"[{buffers}]" if buffers > 1 else ""
    lines += [f"{indent}{space} {s.hoisted.element}{lead}"
              + "".join(f"[{d}]" for d in (layout.declared(s) if layout else s.dims))
              + f" {s.array};" for s in staged]
    return TextEdit.inserting(warps.span.line, 1, "\n".join(lines) + "\n")


class PhaseOperands:
    """The reduction's loop in phases: each phase's tiles loaded, a barrier, the phase's
    iterations loading the operands from the tiles into registers, a barrier."""

    def __init__(self, kernel: KernelAtLevel, plan: TilePlan, loop: ast.For,
                 staged: list[Staged], space: str, names: tuple[str, str, str, str, str]):
        self.kernel, self.plan, self.loop, self.staged, self.space = (kernel, plan, loop,
                                                                       staged, space)
        self.k0, self.kk, self.r, self.e, self.tile_k = names

    def bounds(self) -> tuple[str, str, str]:
        """The loop's start, the comparison and its bound, as written."""
        loop = self.loop
        assert isinstance(loop.init, ast.Decl) and loop.init.init is not None
        assert isinstance(loop.cond, ast.Binary)
        return (text_of(self.kernel, loop.init.init), loop.cond.op,
                text_of(self.kernel, loop.cond.right))

    def around(self, depth: str, step: str, hoisted: list[Hoisted]
               ) -> tuple[list[str], list[str], str]:
        k = self.loop.var
        start, op, bound = self.bounds()
        inner = depth + step
        out = [f"{depth}for (int {self.k0} = {start}; {self.k0} {op} {bound}; "
               f"{self.k0} += {self.tile_k}) {{"]
        for s in self.staged:
            out += self._fill(s, inner, step, f"{k} {op} {bound}")
        out += [f"{inner}barrier({self.space});", *self.reads(inner, step, "")]
        closed = [f"{inner}}}", f"{inner}// every thread is done with the tiles before "
                  "the next phase overwrites them",
                  f"{inner}barrier({self.space});", f"{depth}}}"]
        return out, closed, inner + step

    def reads(self, at: str, step: str, buffer: str) -> list[str]:
        """The loop over the phase's iterations, opened, and its loads of the thread's
        operands from the tiles (at `buffer`, an index of the tiles' leading dimension,
        or "") into registers."""
        n, k = self.plan.names, self.loop.var
        deeper = at + step
        out = [f"{at}for (int {self.kk} = 0; {self.kk} < {self.tile_k}; {self.kk}++) {{"]
        for s in self.staged:
            h = s.hoisted
            index, size = (n.ei, n.elems_i) if h.kind == "i" else (n.ej, n.elems_j)
            offset = element_offset(n, h.kind)
            at_tile = "".join(f"[{self.kk if x == k else offset}]"
                              for x in index_names(s.access))
            out += [f"{deeper}for (int {index} = 0; {index} < {size}; {index}++) {{",
                    f"{deeper}{step}{h.register}[{index}] = {s.array}{buffer}{at_tile};",
                    f"{deeper}}}"]
        return out

    def _fill(self, s: Staged, at: str, step: str, in_loop: str) -> list[str]:
        """The loop that loads the phase's tile of `s`, one element per thread at a
        time, consecutive threads along the last index (0 outside the arrays)."""
        plan, kernel, k = self.plan, self.kernel, self.loop.var
        n, r, e = plan.names, self.r, self.e
        threads = threads_text(kernel, plan)
        names = index_names(s.access)
        last = s.dims[-1]
        parts = [f"{e} / {last}", f"{e} % {last}"] if len(s.dims) == 2 else [e]
        row_var = plan.row.name if s.hoisted.kind == "i" else plan.shape.row
        base = (f"{plan.row.foreach.var} * {n.tile_i}" if s.hoisted.kind == "i"
                else f"{plan.shape.blocks.var} * {n.tile_j}")
        bound = text_of(kernel, plan.row.bound if s.hoisted.kind == "i"
                        else plan.shape.bound)
        decls = [f"int {x} = {self.k0 if x == k else base} + {part};"
                 for x, part in zip(names, parts, strict=True)]
        guard = f"{row_var} < {bound} && {in_loop}"
        at_tile = "".join(f"[{part}]" for part in parts)
        inner, deeper = at + step, at + step * 2
        return [f"{at}for (int {r} = 0; {r} < {' * '.join(s.dims)} / ({threads}); "
                f"{r}++) {{",
                f"{inner}int {e} = {r} * ({threads}) + {n.unit};",
                *(inner + d for d in decls),
                f"{inner}if ({guard}) {{",
                f"{deeper}{s.array}{at_tile} = {s.hoisted.text};",
                f"{inner}}} else {{",
                f"{deeper}{s.array}{at_tile} = {zero_of(s.hoisted.element)};",
                f"{inner}}}",
                f"{at}}}"]


def index_names(access: ast.Index) -> list[str]:
    return [x.name if isinstance(x, ast.Name) else "" for x in _indices(access)]
