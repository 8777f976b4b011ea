"""stencil-tile: let each thread of a 2-D stencil (every element a weighted sum over a
window, `acc += W[y, x] * A[I + y, J + x]`) compute ROWS x COLS elements from a block's
input tile with its halo in shared memory and the weights in registers (the paper's
section 7, Table III, convolution: "use faster memory", "multiple elements", "data
reuse"; kernels/convolution/hopper_v3.mcpl is the version written by hand).

The kernel it rewrites is the translation of a perfect stencil (paper Appendix A), as
tile-2d reads it (mcl.refine.unit_rows): a foreach over blocks whose variable is the row
(`int I = BI;`), then one over blocks, one over warps and one over the warp's lanes that
number the columns J in order, guarded by `if (J < M)`; in the guard one accumulator set
to 0, the loops `for (int y = 0; y < P; y++) { for (int x = 0; x < Q; x++) { ... } }`
whose body is the one add above, then the tail that uses the accumulator.

In the translation every multiply-add loads two values (the weight and the input) from
the L1 cache: an SM issues one such load per clock for four warp-wide multiply-adds, so
the kernel runs at a quarter of the FMA rate at best. Here:
- a block computes a TILE_H x TILE_W tile and first copies the input it needs, (TILE_H +
  CHUNK_H - 1) x (TILE_W + CHUNK_W - 1) values, into shared memory, a warp a row and its
  lanes consecutive columns (coalesced), zero outside the elements the kernel reads;
- the weights of a CHUNK_H x CHUNK_W chunk of the window live in registers (zero beyond
  P x Q): the loops over a chunk have constant bounds, so the compiler unrolls them and
  every index into the registers is a constant; windows larger than a chunk run in
  chunks;
- thread (ty, tx) computes ROWS consecutive rows of COLS neighbouring columns; it reads
  each input row its outputs meet once into registers (COLS + CHUNK_W - 1 values) and
  multiplies each value into every sum whose window meets it: ROWS * CHUNK_H * COLS *
  CHUNK_W multiply-adds for (ROWS + CHUNK_H - 1) * (COLS + CHUNK_W - 1) shared loads.
Each element adds its terms in the order it did (by y, then x) where the window is one
chunk, plus products with the zeros of the padding, which change no sum; with several
chunks the order is by chunk. Elements past the edges of the output are not stored."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from mcl.identity import Ref
from mcl.mcpl import ast
from mcl.mcpl.printer import print_expr
from mcl.refine.edits import TextEdit, deleting_line, indentation, indented, span_text
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.loads import element_type
from mcl.refine.loops import loop_shape
from mcl.refine.places import (
    constant_env,
    constant_int,
    fresh_names,
    names_in,
    path_to,
    written,
)
from mcl.refine.refinement import (
    Parameter,
    Proposal,
    Refinement,
    Refused,
    block_space,
    for_loop_at,
    integer,
)
from mcl.refine.unit_rows import RowReduction, row_reduction, text_of

# The thread tiles a list tries (ROWS, COLS, warps per block); the model's fastest is
# offered where it is faster than the kernel by MIN_GAIN (mcl.refine.offers).
SHAPES = ((8, 2, 4), (8, 2, 8), (4, 2, 4), (8, 1, 4))
# The largest chunk of the window held in registers along each dimension: 9 x 9 weights
# and 8 x 2 sums are the 134 registers per thread of kernels/convolution/hopper_v3.mcpl,
# whose chunk is the paper's 9 x 9 filter; a larger window runs in chunks.
MOST_CHUNK = 9


@dataclass(frozen=True)
class Stencil:
    """The parts of the stencil: the reduction's shape, the row I and its bound N, the
    column J and its bound M, the window loops' variables and bounds P and Q, the
    accumulator, the weights W and the input A (array names, and whether the weight
    is the left operand), and the tail after the loops."""

    shape: RowReduction
    row: str
    rows_bound: ast.Expr
    col: str
    cols_bound: ast.Expr
    y: str
    x: str
    height: ast.Expr
    width: ast.Expr
    acc: ast.Decl
    weights: str
    weight_type: str
    data: str
    data_type: str
    weight_first: bool
    tail: tuple[ast.Stmt, ...]


class StencilTile(Refinement):
    name = "stencil-tile"
    summary = ("let each thread of a 2-D stencil compute ROWS x COLS elements from the "
               "block's input tile in shared memory, the window's weights in registers")
    parameters = (
        Parameter("line", "the line of the outer loop over the window"),
        Parameter("rows", "the rows of a thread's elements", optional=True),
        Parameter("cols", "the neighbouring columns of a thread's elements", optional=True),
        Parameter("warps", "the warps of a block, stacked along the rows", optional=True),
        Parameter("chunk_h", "the window's rows per chunk in registers (default: its "
                  "rows at the model's sizes, at most 9)", optional=True),
        Parameter("chunk_w", "the window's columns per chunk (default as chunk_h)",
                  optional=True),
    )
    preconditions = (
        "the loop stands where tile-2d's does: the statement after the accumulator in the "
        "`if (J < M)` that ends the body of the innermost of four foreach loops, one over "
        "blocks whose variable is the row (`int I = BI;`, BI's count N its bound), then "
        "blocks, warps and the warp's lanes numbering the columns in order",
        "the accumulator is one number declared with the value 0; the loop is `for (int y "
        "= 0; y < P; y++)` holding only `for (int x = 0; x < Q; x++)`, whose body is the "
        "one statement `acc += W[y, x] * A[I + y, J + x]` (either operand first), P and Q "
        "reading only parameters and named constants",
        "W and A are arrays the function takes and writes nowhere; the tail reads no "
        "foreach variable and no index but I and J",
        "the function's body is int declarations, then the foreach over the rows' blocks, "
        "each foreach holding only the next one",
        "the block's units declare a writable memory space (shared) for the input tile",
    )

    def proposals(self, kernel: KernelAtLevel) -> list[Proposal | Refused]:
        out: list[Proposal | Refused] = []
        for loop in _candidate_loops(kernel):
            assert loop.span is not None
            line = loop.span.line
            try:
                _stencil(kernel, loop)
            except Refused as refused:
                out.append(Refused(refused.reason, line))
                continue
            for rows, cols, warps in SHAPES:
                args = {"line": str(line), "rows": str(rows), "cols": str(cols),
                        "warps": str(warps)}
                try:
                    proposal = self.propose(kernel, args)
                except Refused as refused:
                    out.append(Refused(refused.reason, line))
                    continue
                out.append(replace(proposal, group=f"{self.name}:line={line}"))
        return out

    def propose(self, kernel: KernelAtLevel, args: Mapping[str, str]) -> Proposal:
        line = integer(args, "line")
        stencil = _stencil(kernel, for_loop_at(kernel, line))
        rows, cols = integer(args, "rows", 8), integer(args, "cols", 2)
        warps = integer(args, "warps", 4)
        chunk_h = integer(args, "chunk_h", _chunk(kernel, stencil.height))
        chunk_w = integer(args, "chunk_w", _chunk(kernel, stencil.width))
        if min(rows, cols, warps, chunk_h, chunk_w) < 1:
            raise Refused(f"rows={rows}, cols={cols}, warps={warps}, chunk_h={chunk_h}, "
                          f"chunk_w={chunk_w}: each at least 1")
        lanes = stencil.shape.lanes_n
        if warps * lanes > stencil.shape.warps_n * lanes:
            raise Refused(f"warps={warps}: more than the block's {stencil.shape.warps_n}")
        space = block_space(kernel, stencil.shape.blocks.group, "the input tile")
        values = {"ROWS": rows, "COLS": cols, "NR_WARPS": warps, "CHUNK_H": chunk_h,
                  "CHUNK_W": chunk_w}
        names = _StencilNames.of(kernel, stencil)
        function = kernel.source_function
        outer = stencil.shape.outer[0]
        assert outer.span is not None and function.span is not None
        edits = [TextEdit.inserting(function.span.line, 1,
                                    _constants(names, values, text_of(
                                        kernel, stencil.shape.threads.count)) + "\n"),
                 TextEdit.replacing(outer.span, _body(kernel, stencil, names, space,
                                                      indentation(kernel.text,
                                                                  outer.span.line)))]
        edits += [deleting_line(kernel.text, d) for d in _unused_counts(kernel, stencil)]
        edits += _dead_constants(kernel, stencil)
        summary = (f"each thread computes {rows} x {cols} elements ({stencil.row}, "
                   f"{stencil.col}) of a block's {warps * rows} x {lanes * cols}, the "
                   f"block's input tile with its halo in {space} memory and a {chunk_h} x "
                   f"{chunk_w} chunk of {stencil.weights} in registers")
        return Proposal(self.name, tuple((k, str(v)) for k, v in (
            ("line", line), ("rows", rows), ("cols", cols), ("warps", warps),
            ("chunk_h", chunk_h), ("chunk_w", chunk_w))), line, summary, tuple(edits))


def _candidate_loops(kernel: KernelAtLevel) -> list[ast.For]:
    """The first for-loop of each `if` block inside four foreach loops."""
    body = kernel.source_function.body
    found = []
    for n in ast.walk(body):
        if isinstance(n, ast.If) and isinstance(n.then, ast.Block):
            if sum(isinstance(f, ast.Foreach) for f in path_to(body, n)) >= 4:
                found += [s for s in n.then.stmts if isinstance(s, ast.For)
                          and s.span is not None and kernel.in_file(s.span)][:1]
    return found


def _stencil(kernel: KernelAtLevel, loop: ast.For) -> Stencil:
    """The stencil whose outer window loop is `loop`; `Refused` with the precondition
    that fails."""
    function = kernel.source_function
    path = path_to(function.body, loop)
    foreach = [n for n in path if isinstance(n, ast.Foreach)]
    if len(foreach) != 4:
        raise Refused(f"the loop over {loop.var} is inside {len(foreach)} foreach loops, "
                      "not 4 (the rows' blocks, the columns' blocks, warps and lanes)")
    lanes_body = foreach[-1].body
    decls = lanes_body.stmts if isinstance(lanes_body, ast.Block) else ()
    rows = [d.name for d in decls if isinstance(d, ast.Decl)
            and isinstance(d.init, ast.Name) and d.init.name == foreach[0].var]
    if not rows:
        raise Refused(f"no `int I = {foreach[0].var};` before the `if`: the row is not the "
                      f"variable of foreach {foreach[0].var}")
    shape = row_reduction(kernel, loop, outer=1, kept=frozenset(rows[:1]))
    env = constant_env(kernel.source.program.main)
    _require_nest(function, foreach)
    if len(shape.accumulators) != 1 or len(shape.loops) != 2:
        raise Refused("the reduction is not one accumulator over two loops (y, x)")
    acc = shape.accumulators[0]
    params = {p.name for p in function.params}
    constants = {c.name for c in kernel.constants()}
    bounds = []
    for each in shape.loops:
        form = loop_shape(each, env)
        if form is None or form.start != 0 or form.inclusive or form.step != 1:
            raise Refused(f"the loop over {each.var} is not `for (int {each.var} = 0; "
                          f"{each.var} < E; {each.var}++)`")
        if not names_in(form.bound) <= params | constants:
            raise Refused(f"the bound of the loop over {each.var} reads more than "
                          "parameters and named constants: it is computed before the "
                          "foreach loops")
        bounds.append(form.bound)
    y, x = (each.var for each in shape.loops)
    inner = shape.loops[-1].body
    stmts = inner.stmts if isinstance(inner, ast.Block) else (inner,)
    row, col = rows[0], shape.row
    weights, data, first = _product(stmts, acc.name, y, x, row, col)
    if {weights, data} - params or weights == data:
        raise Refused(f"{weights} and {data} are not two arrays the function takes")
    stored = {weights, data} & written(function)
    if stored:
        raise Refused(f"the function writes {', '.join(sorted(stored))}: the tile and the "
                      "registers would go stale")
    then = shape.guard.then
    assert isinstance(then, ast.Block)
    tail = tuple(then.stmts[list(then.stmts).index(loop) + 1:])
    index = _index_of(stmts[0], data)
    return Stencil(shape, row, foreach[0].count, col, shape.bound, y, x, bounds[0],
                   bounds[1], acc, weights, element_type(function, _index_of(stmts[0],
                                                                              weights)),
                   data, element_type(function, index), first, tail)


def _require_nest(function: ast.Function, foreach: list[ast.Foreach]) -> None:
    """The function's body: int declarations, then the outer foreach, each foreach
    holding only the next."""
    *decls, last = function.body.stmts
    if last is not foreach[0] or any(not isinstance(d, ast.Decl) or not isinstance(
            d.type, ast.Prim) or d.type.name != "int" for d in decls):
        raise Refused(f"the function's body is not int declarations and then foreach "
                      f"{foreach[0].var}")
    for above, below in zip(foreach, foreach[1:], strict=False):
        body = above.body
        if not isinstance(body, ast.Block) or len(body.stmts) != 1 \
                or body.stmts[0] is not below:
            raise Refused(f"foreach {above.var} holds more than foreach {below.var}")


def _product(stmts: tuple[ast.Stmt, ...], acc: str, y: str, x: str, row: str, col: str
             ) -> tuple[str, str, bool]:
    """W and A of the one statement `acc += W[y, x] * A[row + y, col + x]` (either
    operand first), and whether W is the left one."""
    match stmts:
        case (ast.Assign(target=ast.Name(name=name), op="+=",
                         value=ast.Binary(op="*", left=left, right=right)),) if name == acc:
            for w, a, first in ((left, right, True), (right, left, False)):
                if _is_access(w, ((y,), (x,))) and _is_access(a, ((row, y), (col, x))):
                    assert isinstance(w, ast.Index) and isinstance(a, ast.Index)
                    assert isinstance(w.base, ast.Name) and isinstance(a.base, ast.Name)
                    return w.base.name, a.base.name, first
    raise Refused(f"the window loop's body is not the one statement `{acc} += W[{y}, {x}] "
                  f"* A[{row} + {y}, {col} + {x}]`")


def _is_access(e: ast.Expr, indices: tuple[tuple[str, ...], ...]) -> bool:
    """Is `e` an element `N[...]` of a named array whose indices are the sums of the
    names given (in any order)?"""
    if not isinstance(e, ast.Index) or not isinstance(e.base, ast.Name) \
            or len(e.indices) != len(indices):
        return False
    return all(_sum_of(i) == sorted(names) for i, names in zip(e.indices, indices,
                                                                strict=True))


def _sum_of(e: ast.Expr) -> list[str] | None:
    if isinstance(e, ast.Name):
        return [e.name]
    if isinstance(e, ast.Binary) and e.op == "+":
        left, right = _sum_of(e.left), _sum_of(e.right)
        return sorted(left + right) if left is not None and right is not None else None
    return None


def _index_of(stmt: ast.Stmt, array: str) -> ast.Index:
    return next(n for n in ast.walk(stmt) if isinstance(n, ast.Index)
                and isinstance(n.base, ast.Name) and n.base.name == array)


def _chunk(kernel: KernelAtLevel, bound: ast.Expr) -> int:
    """The window's extent at the model's sizes, at most MOST_CHUNK (MOST_CHUNK where
    the sizes do not give it)."""
    env = {**constant_env(kernel.source.program.main),
           **{k: v for k, v in kernel.values.items() if isinstance(v, int)}}
    value = constant_int(bound, env)
    return max(1, min(value, MOST_CHUNK)) if value is not None else MOST_CHUNK


def _unused_counts(kernel: KernelAtLevel, stencil: Stencil) -> list[ast.Decl]:
    """The function's leading declarations that only the replaced foreach loops read."""
    function = kernel.source_function
    decls = [d for d in function.body.stmts if isinstance(d, ast.Decl)]
    kept_reads = _retained_names(stencil)
    keep: set[str] = set()
    changed = True
    while changed:
        changed = False
        for d in decls:
            if d.name in kept_reads and d.name not in keep:
                keep.add(d.name)
                kept_reads |= names_in(d.init)
                changed = True
    return [d for d in decls if d.name not in keep]


def _dead_constants(kernel: KernelAtLevel, stencil: Stencil) -> list[TextEdit]:
    """The edits that remove the file's named constants only the replaced foreach nest
    read (a block size name-counts named, which the new version sizes by its own), each
    with the comment lines right above it (its tune and require lines; a `// change:`
    header stays); a constant another live one's comments name stays."""
    main = kernel.source.program.main
    function = kernel.source_function
    dropped = {Ref(d) for d in _unused_counts(kernel, stencil)}
    reads = _retained_names(stencil) | names_in(stencil.shape.threads.count)
    reads |= set().union(*(names_in(p) for p in function.params))
    for stmt in function.body.stmts:
        if Ref(stmt) not in dropped and stmt is not stencil.shape.outer[0]:
            reads |= names_in(stmt)
    for other in main.functions:
        if other is not function:
            reads |= names_in(other) | written(other)
    lines = kernel.text.split("\n")
    comments = {c.name: _comment_rows(lines, c) for c in main.constants}
    live: set[str] = set()
    while True:
        more = {c.name for c in main.constants if c.name in reads} - live
        if not more:
            break
        live |= more
        for c in main.constants:
            if c.name in more:
                reads |= names_in(c.init) | {word for row in comments[c.name]
                                             for word in re.findall(r"\w+", lines[row])}
    edits = []
    for c in main.constants:
        if c.name in live or c.span is None or not kernel.in_file(c.span) \
                or c.span.line != c.span.end_line:
            continue
        first = min(comments[c.name], default=c.span.line - 1) + 1
        edits.append(TextEdit(first, 1, c.span.line + 1, 1, ""))
    return edits


def _comment_rows(lines: list[str], constant: ast.Decl) -> list[int]:
    """The 0-based rows of the comment lines right above the constant's declaration,
    a `// change:` header not among them."""
    assert constant.span is not None
    rows = []
    row = constant.span.line - 2
    while row >= 0 and lines[row].lstrip().startswith("//") \
            and not re.match(r"\s*//\s*change:", lines[row]):
        rows.append(row)
        row -= 1
    return rows


def _retained_names(stencil: Stencil) -> set[str]:
    """The names the code carried into the new version reads or declares."""
    out = names_in(stencil.rows_bound) | names_in(stencil.cols_bound) \
        | names_in(stencil.height) | names_in(stencil.width)
    for stmt in stencil.tail:
        out |= names_in(stmt) | written(stmt)
    return out


@dataclass(frozen=True)
class _StencilNames:
    """The names the new code declares, none taken in the function or the file."""

    consts: dict[str, str]
    locals: dict[str, str]

    @classmethod
    def of(cls, kernel: KernelAtLevel, stencil: Stencil) -> _StencilNames:
        """Fresh names: the replaced foreach nest's own go with it, so only the names of
        the file, the parameters, the declarations kept and the code carried over (the
        tail, the bounds) are taken."""
        function = kernel.source_function
        dropped = {d.name for d in _unused_counts(kernel, stencil)}
        kept = {d.name for d in function.body.stmts if isinstance(d, ast.Decl)} - dropped
        taken = {p.name for p in function.params} | {c.name for c in kernel.constants()} \
            | {f.name for f in kernel.source.program.main.functions} | kept \
            | {stencil.row, stencil.col, stencil.acc.name} | _retained_names(stencil)
        const_bases = ("NR_WARPS", "ROWS", "COLS", "CHUNK_H", "CHUNK_W", "TILE_H", "TILE_W",
                       "IN_H", "IN_W", "COPY_ROWS", "COPY_COLS")
        local_bases = ("nrBlocksH", "nrBlocksW", "nrChunksH", "nrChunksW", "bi", "bj",
                       "ty", "tx", "l_a", "sums", "regF", "regRow", "r", "c", "cy", "cx",
                       "y0", "x0", "ri", "ii", "ia", "k", "jj", "ja", "y", "x", "ir")
        picked = fresh_names((*const_bases, *local_bases), set(taken))
        return cls(dict(zip(const_bases, picked[:len(const_bases)], strict=True)),
                   dict(zip(local_bases, picked[len(const_bases):], strict=True)))


def _constants(names: _StencilNames, values: Mapping[str, int], lanes: str) -> str:
    n = names.consts
    return "\n".join([
        "// stencil-tile: a block of NR_WARPS warps computes a TILE_H x TILE_W tile, each",
        "// thread ROWS rows of COLS neighbouring columns; the input tile with its halo in",
        "// shared memory, a CHUNK_H x CHUNK_W chunk of the weights in registers.",
        "// tune: 2, 4, 8",
        f"const int {n['NR_WARPS']} = {values['NR_WARPS']};",
        "// tune: 2, 4, 8",
        f"const int {n['ROWS']} = {values['ROWS']};",
        # Wider than 2 columns measured slower on an H100 in hopper_v3's form (3 and 4:
        # 15.6 and 12.8 against 17.7 TFLOP/s through CUDA, benchmarks/results/
        # 2026-11-27-h100-convolution-v3-sweep.log), which the model estimates faster
        # (registers, bank conflicts of the row reads): not offered as values.
        "// tune: 1, 2",
        f"const int {n['COLS']} = {values['COLS']};",
        f"const int {n['CHUNK_H']} = {values['CHUNK_H']};",
        f"const int {n['CHUNK_W']} = {values['CHUNK_W']};",
        f"const int {n['TILE_H']} = {n['NR_WARPS']} * {n['ROWS']};",
        f"const int {n['TILE_W']} = {lanes} * {n['COLS']};",
        f"const int {n['IN_H']} = {n['TILE_H']} + {n['CHUNK_H']} - 1;",
        f"const int {n['IN_W']} = {n['TILE_W']} + {n['CHUNK_W']} - 1;",
        "// The copy walks the input tile by rows: warp ty copies rows ty, ty + NR_WARPS,",
        "// ..., its lanes consecutive columns per step.",
        f"const int {n['COPY_ROWS']} = ({n['IN_H']} + {n['NR_WARPS']} - 1) / {n['NR_WARPS']};",
        f"const int {n['COPY_COLS']} = ({n['IN_W']} + {lanes} - 1) / {lanes};",
    ]) + "\n"


def _body(kernel: KernelAtLevel, s: Stencil, names: _StencilNames, space: str, indent: str
          ) -> str:
    """The foreach nest that replaces the original one, its first line unindented."""
    v = names.locals
    shape = s.shape
    w_reg = f"{v['regF']}[{v['ir']} - {v['r']}][{v['x']}]"
    a_reg = f"{v['regRow']}[{v['c']} + {v['x']}]"
    fields = {
        **names.consts, **v,
        "rows_group": shape.outer[0].group, "cols_group": shape.blocks.group,
        "warps_group": shape.warps.group, "lanes_group": shape.threads.group,
        "LANES": text_of(kernel, shape.threads.count),
        "N": text_of(kernel, s.rows_bound), "M": text_of(kernel, s.cols_bound),
        "P": text_of(kernel, s.height), "Q": text_of(kernel, s.width),
        "A": s.data, "A_t": s.data_type, "W": s.weights, "W_t": s.weight_type,
        "I": s.row, "J": s.col, "acc": s.acc.name,
        "acc_t": s.acc.type.name if isinstance(s.acc.type, ast.Prim) else "float",
        "acc_zero": print_expr(s.acc.init) if s.acc.init is not None else "0",
        "zero_A": _zero_of(s.data_type), "zero_W": _zero_of(s.weight_type),
        "product": f"{w_reg} * {a_reg}" if s.weight_first else f"{a_reg} * {w_reg}",
        "space": space,
        "tail": "\n".join(_moved(kernel, st, TAIL_INDENT) for st in s.tail),
    }
    text = _TEMPLATE.format_map(fields)
    return indented(text, indent)


# The indentation of the tail in the new code: the block of `if (I < N && J < M)` inside
# the loops over a thread's rows and columns, five levels below the outer foreach.
TAIL_INDENT = " " * 28


def _moved(kernel: KernelAtLevel, stmt: ast.Stmt, to: str) -> str:
    """The statement as written, its lines indented by `to` instead of its own."""
    assert stmt.span is not None
    old = indentation(kernel.text, stmt.span.line)
    first, *rest = span_text(kernel.text, stmt.span).split("\n")
    return "\n".join([to + first, *(to + row[len(old):] if row.startswith(old) else row
                                     for row in rest)])


def _zero_of(type_name: str) -> str:
    return "0" if type_name in ("int", "byte") else "0.0"


# The new foreach nest (mcl.refine.stencil_tile._body fills it in), hopper_v3's form.
_TEMPLATE = """int {nrBlocksH} = ({N} + {TILE_H} - 1) / {TILE_H};
int {nrBlocksW} = ({M} + {TILE_W} - 1) / {TILE_W};
int {nrChunksH} = ({P} + {CHUNK_H} - 1) / {CHUNK_H};
int {nrChunksW} = ({Q} + {CHUNK_W} - 1) / {CHUNK_W};
foreach (int {bi} in {nrBlocksH} {rows_group}) {{
    foreach (int {bj} in {nrBlocksW} {cols_group}) {{
        {space} {A_t}[{IN_H}][{IN_W}] {l_a};
        foreach (int {ty} in {NR_WARPS} {warps_group}) {{
            foreach (int {tx} in {LANES} {lanes_group}) {{
                reg {acc_t}[{ROWS}][{COLS}] {sums};
                reg {W_t}[{CHUNK_H}][{CHUNK_W}] {regF};
                reg {A_t}[{COLS} + {CHUNK_W} - 1] {regRow};
                for (int {r} = 0; {r} < {ROWS}; {r}++) {{
                    for (int {c} = 0; {c} < {COLS}; {c}++) {{
                        {sums}[{r}][{c}] = {acc_zero};
                    }}
                }}

                for (int {cy} = 0; {cy} < {nrChunksH}; {cy}++) {{
                    for (int {cx} = 0; {cx} < {nrChunksW}; {cx}++) {{
                        int {y0} = {cy} * {CHUNK_H};
                        int {x0} = {cx} * {CHUNK_W};
                        // the input tile of this chunk, row by row; zero outside the
                        // elements of {A} the kernel reads
                        for (int {ri} = 0; {ri} < {COPY_ROWS}; {ri}++) {{
                            int {ii} = {ri} * {NR_WARPS} + {ty};
                            int {ia} = {bi} * {TILE_H} + {y0} + {ii};
                            for (int {k} = 0; {k} < {COPY_COLS}; {k}++) {{
                                int {jj} = {k} * {LANES} + {tx};
                                int {ja} = {bj} * {TILE_W} + {x0} + {jj};
                                if ({ii} < {IN_H} && {jj} < {IN_W}) {{
                                    if ({ia} < {N} + {P} - 1 && {ja} < {M} + {Q} - 1) {{
                                        {l_a}[{ii}][{jj}] = {A}[{ia}, {ja}];
                                    }} else {{
                                        {l_a}[{ii}][{jj}] = {zero_A};
                                    }}
                                }}
                            }}
                        }}
                        // the chunk of {W}, zero beyond it
                        for (int {y} = 0; {y} < {CHUNK_H}; {y}++) {{
                            for (int {x} = 0; {x} < {CHUNK_W}; {x}++) {{
                                if ({y0} + {y} < {P} && {x0} + {x} < {Q}) {{
                                    {regF}[{y}][{x}] = {W}[{y0} + {y}, {x0} + {x}];
                                }} else {{
                                    {regF}[{y}][{x}] = {zero_W};
                                }}
                            }}
                        }}
                        barrier({space});

                        // each input row read once into registers, for all the sums
                        // whose window meets it
                        for (int {ir} = 0; {ir} < {ROWS} + {CHUNK_H} - 1; {ir}++) {{
                            for (int {k} = 0; {k} < {COLS} + {CHUNK_W} - 1; {k}++) {{
                                {regRow}[{k}] = {l_a}[{ty} * {ROWS} + {ir}][{COLS} * {tx} + {k}];
                            }}
                            for (int {r} = 0; {r} < {ROWS}; {r}++) {{
                                if ({ir} - {r} >= 0 && {ir} - {r} < {CHUNK_H}) {{
                                    for (int {x} = 0; {x} < {CHUNK_W}; {x}++) {{
                                        for (int {c} = 0; {c} < {COLS}; {c}++) {{
                                            {sums}[{r}][{c}] += {product};
                                        }}
                                    }}
                                }}
                            }}
                        }}
                        barrier({space});
                    }}
                }}

                for (int {r} = 0; {r} < {ROWS}; {r}++) {{
                    int {I} = {bi} * {TILE_H} + {ty} * {ROWS} + {r};
                    for (int {c} = 0; {c} < {COLS}; {c}++) {{
                        int {J} = {bj} * {TILE_W} + {COLS} * {tx} + {c};
                        if ({I} < {N} && {J} < {M}) {{
                            {acc_t} {acc} = {sums}[{r}][{c}];
{tail}
                        }}
                    }}
                }}
            }}
        }}
    }}
}}"""
