"""cpu-blocks: block a matrix product written one element per vector lane (the
translation of a perfect kernel with a foreach over rows `i` and one over columns `j` to
a CPU level whose threads hold vectors of lanes, paper Appendix A) for the caches and
registers of a CPU core: the blocking of kernels/matmul/x86_avx512_v4 and _v5.

The paper's section 5.1 reaches the GPU's fast versions by giving each thread more
elements and keeping their operands in faster memories; on a CPU the faster memories
are the caches and the vector registers (section 4.2: x86_avx512 is cache-oriented).
Each thread computes STRIPS strips of COLS = NR_VECS * NR_VECTORS columns for ROWS =
ELEMS_I * BLOCKS_I rows of c:
- the reduction runs in blocks of BLOCK_K steps; per block and strip the thread packs
  the strip's block of the column operand (`b[k, j]`) once into a private array, which
  its BLOCKS_I register tiles read from the L1 cache;
- a register tile of ELEMS_I rows x NR_VECS vectors keeps its sums in registers: each
  step loads NR_VECS vectors of the packed block and broadcasts ELEMS_I elements of the
  row operand (`a[i, k]`), ELEMS_I * NR_VECS vector multiply-adds;
- all strips run for one block of the reduction before the next, so the block of the
  row operand that the first strip reads is found in the caches by the others;
- the sums of the thread's elements wait between blocks in a private array; the threads
  over columns are the outer foreach, so consecutive threads share their strips.
Each element adds its terms in the order it did (from 0, k ascending): the results are
the same. Rows and columns outside the matrices are clamped to the last one on loading
(their sums are never stored), the last block of the reduction is shorter, and a thread
at the edge computes only the strips and register tiles that hold elements.

The shape's named constants carry `// tune:` values, so that `set-constant` and `mcl
tune` take it from there. The time model states no time at x86_avx512 (it models a
GPU's multiprocessors), so the refinement is offered where a search measures (`mcl
refine --measure`) or, at a level with a time model, where the model estimates it
faster."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mcl.mcpl import ast
from mcl.refine.edits import TextEdit, deleting_line, indentation, indented
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.loops import loop_shape
from mcl.refine.places import constant_env, every_name, fresh_names, names_in, written
from mcl.refine.refinement import Parameter, Proposal, Refinement, Refused, integer
from mcl.refine.unit_rows import guard_of, is_int, text_of, zero
from mcl.translate.counts import StaticInts, host_constants

# The shapes a list proposes (alternatives, ranked by the model or the measurements):
# v4's blocking (one strip per thread) and v5's (eight strips sharing each block of a).
SHAPES: tuple[dict[str, int], ...] = (
    {"elems_i": 6, "nr_vecs": 4, "blocks_i": 16, "strips": 1, "block_k": 128},
    {"elems_i": 6, "nr_vecs": 4, "blocks_i": 32, "strips": 8, "block_k": 256},
)
# The `// tune:` values of each constant the rewrite declares.
TUNE = {"nr_vecs": "1, 2, 4", "elems_i": "4, 6, 8", "blocks_i": "8, 16, 32",
        "strips": "1, 2, 4, 8", "block_k": "64, 128, 256"}


@dataclass(frozen=True)
class LaneProduct:
    """The parts of the kernel the rewrite reads: the foreach loops over rows, columns
    and lanes (`rows`, `cols`, `lanes`, the lanes' count `nr_lanes`), the row and
    column index names, the column bound, the accumulator and its element type, the
    reduction loop, the row operand `x` (x[i, k]), the column operand `y` (y[k, j]), the
    stored array `out` (out[i, j] = acc), and the host declarations only the foreach
    loops read (removed with them)."""

    rows: ast.Foreach
    cols: ast.Foreach
    lanes: ast.Foreach
    nr_lanes: int
    row: str
    col: str
    bound: ast.Expr
    accumulator: ast.Decl
    loop: ast.For
    x: str
    y: str
    out: str
    left_x: bool  # the product reads x first: x * y
    counts: tuple[ast.Decl, ...]


class CpuBlocks(Refinement):
    name = "cpu-blocks"
    summary = ("block a product computed one element per vector lane for a CPU core: "
               "register tiles of rows x vectors, the column operand packed per block of "
               "the reduction, strips that share each block of the row operand")
    parameters = (
        Parameter("line", "the line of the reduction's loop"),
        Parameter("elems_i", "the rows of a register tile", optional=True),
        Parameter("nr_vecs", "the vectors of columns of a register tile (and a strip)",
                  optional=True),
        Parameter("blocks_i", "the register tiles over a thread's rows", optional=True),
        Parameter("strips", "the strips of columns per thread", optional=True),
        Parameter("block_k", "the steps of the reduction per packed block", optional=True),
    )
    preconditions = (
        "the function's body is host `int` declarations, then a foreach over the rows "
        "(`foreach (int TI in N threads)`) that holds only a foreach over columns (TJ) "
        "that holds only a foreach over lanes (VJ): the level's last two par_groups, "
        "the lanes running in lock-step, their count a constant of the level",
        "the lanes' body is `int I = TI;`, `int J = TJ * LANES + VJ;` and `if (J < M) "
        "{ ACC = 0; for (int K = 0; K < P; K++) { ACC += X[I, K] * Y[K, J]; } "
        "OUT[I, J] = ACC; }` (the product in either order), ACC a float or double",
        "N, M and P read no foreach variable, no index and nothing the kernel writes; "
        "X and Y are not written, OUT is not read, and the three are different arrays",
        "the host declarations the foreach counts read stand alone on their lines and "
        "nothing else reads them (they go with the loops)",
        "the new names (constants and locals) are free in the file",
    )

    def proposals(self, kernel: KernelAtLevel) -> list[Proposal | Refused]:
        if not _candidate(kernel):
            return []  # nothing here to block: no refusal to list
        try:
            shape = lane_product(kernel)
        except Refused as refused:
            return [refused]
        assert shape.loop.span is not None
        line = shape.loop.span.line
        out: list[Proposal | Refused] = []
        for values in SHAPES:
            try:
                proposal = self._propose(kernel, shape, values)
            except Refused as refused:
                out.append(Refused(refused.reason, line))
                continue
            out.append(Proposal(proposal.refinement, proposal.args, proposal.line,
                                proposal.summary, proposal.edits,
                                group=f"{self.name}:line={line}"))
        return out

    def propose(self, kernel: KernelAtLevel, args: Mapping[str, str]) -> Proposal:
        shape = lane_product(kernel)
        assert shape.loop.span is not None
        line = integer(args, "line")
        if line != shape.loop.span.line:
            raise Refused(f"the reduction's loop starts at line {shape.loop.span.line}, "
                          f"not {line}")
        defaults = SHAPES[-1]
        values = {key: integer(args, key, default) for key, default in defaults.items()}
        return self._propose(kernel, shape, values)

    def _propose(self, kernel: KernelAtLevel, shape: LaneProduct,
                 values: Mapping[str, int]) -> Proposal:
        for key, value in values.items():
            if value < 1:
                raise Refused(f"{key}={value}: a positive integer is needed")
        function = kernel.source_function
        assert function.span is not None and shape.rows.span is not None \
            and shape.loop.span is not None
        taken = every_name(function) | {c.name for c in kernel.constants()} \
            | {f.name for f in kernel.source.program.main.functions}
        removed = {d.name for d in shape.counts}
        bases: tuple[str, ...] = ("NR_VECTORS", "NR_VECS", "ELEMS_I", "BLOCKS_I", "ROWS",
                                  "COLS", "STRIPS", "BLOCK_K")
        constants = dict(zip(bases, fresh_names(bases, taken), strict=True))
        # Locals may take the names of the loops and declarations that go.
        kept = taken - _replaced_names(shape) - removed
        bases = ("nrThreadsN", "nrThreadsM", "nrBlocksK", "bPack", "cTemp", "sums", "nrStrips",
                 "nrTiles", "s", "r", "v", "kb", "k0", "kLength", "kk", "ib", "ei", "aik", "j0")
        local_names = dict(zip(bases, fresh_names(
            bases, kept | set(constants.values()) | {shape.row, shape.col}), strict=True))
        names = {**constants, **local_names, "ti": shape.rows.var, "tj": shape.cols.var,
                 "vj": shape.lanes.var, "i": shape.row, "j": shape.col}
        edits = [TextEdit.inserting(function.span.line, 1,
                                    _constants_text(names, values, shape.nr_lanes,
                                                    kernel.level))]
        edits += [deleting_line(kernel.text, decl) for decl in shape.counts]
        indent = indentation(kernel.text, shape.rows.span.line)
        body = _body_text(kernel, shape, names)
        edits.append(TextEdit.replacing(shape.rows.span, indented(body, indent)))
        args = (("line", str(shape.loop.span.line)),
                *((key, str(values[key])) for key in SHAPES[0]))
        rows = values["elems_i"] * values["blocks_i"]
        cols = values["nr_vecs"] * shape.nr_lanes
        summary = (f"each thread computes {values['strips']} strip"
                   f"{'' if values['strips'] == 1 else 's'} of {cols} columns x {rows} rows "
                   f"in register tiles of {values['elems_i']} rows x {values['nr_vecs']} "
                   f"vectors, {shape.y} packed per {values['block_k']} steps of "
                   f"{shape.loop.var}")
        return Proposal(self.name, args, shape.loop.span.line, summary, tuple(edits))


def _candidate(kernel: KernelAtLevel) -> bool:
    """Is there something for a list to try: a level whose threads hold vector lanes (its
    par_groups threads, then lanes in lock-step) and a loop whose body only adds a
    product of two 2-D elements (`acc += x[., .] * y[., .]`)? Where there is not, the
    list names no refusal (every kernel of a GPU level would have one)."""
    hwd = kernel.library.get(kernel.source_function.hwd)
    unit = hwd.executing_unit().name
    chain = hwd.group_chain(unit)
    lockstep = hwd.lockstep(unit)
    if len(chain) != 2 or lockstep is None or lockstep.name != chain[-1].name:
        return False
    for loop in ast.walk(kernel.source_function.body):
        if not isinstance(loop, ast.For):
            continue
        body = loop.body
        stmt = body.stmts[0] if isinstance(body, ast.Block) and len(body.stmts) == 1 \
            else body
        match stmt:
            case ast.Assign(op="+=", value=ast.Binary(
                    op="*", left=ast.Index(indices=(_, _)), right=ast.Index(indices=(_, _)))):
                return True
    return False


def lane_product(kernel: KernelAtLevel) -> LaneProduct:
    """The kernel's lane-per-element product (`Refused` with the precondition that
    fails)."""
    function = kernel.source_function
    if function.span is None or not kernel.in_file(function.span):
        raise Refused(f"{function.name} is not written in {kernel.path.name}")
    stmts = list(function.body.stmts)
    host, rows = stmts[:-1], stmts[-1] if stmts else None
    if not isinstance(rows, ast.Foreach) or rows.span is None:
        raise Refused("the function's body does not end with its one foreach over rows")
    if any(not isinstance(d, ast.Decl) or not is_int(d.type) for d in host):
        raise Refused("before the foreach over rows stand statements other than int "
                      "declarations")
    decls = [d for d in host if isinstance(d, ast.Decl)]
    cols = _only_foreach(rows)
    lanes = _only_foreach(cols)
    hwd = kernel.library.get(function.hwd)
    unit = hwd.executing_unit().name
    chain = [g.name for g in hwd.group_chain(unit)]
    lockstep = hwd.lockstep(unit)
    if len(chain) < 2 or [rows.group, cols.group, lanes.group] != [chain[-2]] * 2 + chain[-1:]:
        raise Refused(f"foreach {rows.var}, {cols.var}, {lanes.var} are over {rows.group}, "
                      f"{cols.group} and {lanes.group}, not twice {chain[-2]} then "
                      f"{chain[-1]} of {hwd.name}")
    if lockstep is None or lockstep.name != lanes.group:
        raise Refused(f"the {lanes.group} of {hwd.name} do not run in lock-step: they are "
                      "no vector's lanes")
    statics = host_constants(function, kernel.source.program.main,
                             StaticInts({n: kernel.library.get(n)
                                         for n in kernel.library.names()}, {}))
    nr_lanes = statics.value(lanes.count)
    if nr_lanes is None or nr_lanes < 1:
        raise Refused(f"the count of foreach {lanes.var} is not a constant of the level")
    body = lanes.body
    if not isinstance(body, ast.Block) or len(body.stmts) != 3:
        raise Refused(f"the body of foreach {lanes.var} is not `int I = ...; int J = ...; "
                      "if (J < M) {...}`")
    row_decl, col_decl, guard = body.stmts
    if not isinstance(row_decl, ast.Decl) or not is_int(row_decl.type) \
            or not _is_name(row_decl.init, rows.var):
        raise Refused(f"the first statement of foreach {lanes.var} is not `int I = "
                      f"{rows.var};`")
    if not isinstance(col_decl, ast.Decl) or not is_int(col_decl.type) \
            or not _numbers_lanes(col_decl.init, cols.var, lanes.var, nr_lanes, statics):
        raise Refused(f"the second statement of foreach {lanes.var} is not `int J = "
                      f"{cols.var} * {nr_lanes} + {lanes.var};`")
    if not isinstance(guard, ast.If) or guard.orelse is not None:
        raise Refused(f"foreach {lanes.var} does not end with an `if` without else")
    column, bound = guard_of(guard)
    if column != col_decl.name:
        raise Refused(f"the `if` bounds {column}, not the column {col_decl.name}")
    accumulator, loop, out = _reduction(guard, row_decl.name, col_decl.name)
    x, y, left_x = _product(loop, row_decl.name, col_decl.name, accumulator.name)
    if len({x, y, out}) < 3:
        raise Refused("the operands and the stored array are not three different arrays")
    params = {p.name for p in function.params}
    shape_loop = loop_shape(loop, constant_env(kernel.source.program.main))
    assert shape_loop is not None  # _reduction checked it
    unit_names = {rows.var, cols.var, lanes.var, row_decl.name, col_decl.name,
                  accumulator.name, loop.var}
    everything_written = written(function.body)
    for what, e in (("the rows' count", rows.count), ("the column bound", bound),
                    ("the reduction's bound", shape_loop.bound)):
        read = names_in(e)
        if read & unit_names or read & everything_written - {d.name for d in decls}:
            raise Refused(f"{what} reads a foreach variable, an index or a name the kernel "
                          "writes")
        if not read <= params | {d.name for d in decls} | {c.name for c in
                                                          kernel.constants()}:
            raise Refused(f"{what} reads names other than sizes and constants")
    if {x, y} & everything_written:
        raise Refused(f"the kernel writes {' and '.join(sorted({x, y} & everything_written))}")
    reads_out = [n for n in ast.walk(function.body)
                 if isinstance(n, ast.Name) and n.name == out]
    if len(reads_out) != 1:
        raise Refused(f"{out} is read or written elsewhere than in its one store")
    counts = _counts_only_loops_read(decls, rows, names_in(rows.count) | names_in(bound)
                                     | names_in(shape_loop.bound))
    return LaneProduct(rows, cols, lanes, nr_lanes, row_decl.name, col_decl.name, bound,
                       accumulator, loop, x, y, out, left_x, counts)


def _only_foreach(outer: ast.Foreach) -> ast.Foreach:
    body = outer.body
    inner = body.stmts[0] if isinstance(body, ast.Block) and len(body.stmts) == 1 else None
    if not isinstance(inner, ast.Foreach):
        raise Refused(f"foreach {outer.var} holds more than one foreach")
    return inner


def _is_name(e: ast.Expr | None, name: str) -> bool:
    return isinstance(e, ast.Name) and e.name == name


def _numbers_lanes(e: ast.Expr | None, cols: str, lanes: str, nr_lanes: int,
                   statics: StaticInts) -> bool:
    """Is `e` `COLS * LANES + VJ` (or `VJ + ...`, `LANES * COLS`), LANES the lanes' count?"""
    if not isinstance(e, ast.Binary) or e.op != "+":
        return False
    for product, lane in ((e.left, e.right), (e.right, e.left)):
        if _is_name(lane, lanes) and isinstance(product, ast.Binary) and product.op == "*":
            for var, count in ((product.left, product.right),
                               (product.right, product.left)):
                if _is_name(var, cols) and statics.value(count) == nr_lanes:
                    return True
    return False


def _reduction(guard: ast.If, row: str, col: str) -> tuple[ast.Decl, ast.For, str]:
    """The accumulator, the loop and the stored array of `{ ACC = 0; for ... OUT[I, J] =
    ACC; }`."""
    then = guard.then
    if not isinstance(then, ast.Block) or len(then.stmts) != 3:
        raise Refused("the `if`'s block is not an accumulator, a loop and a store")
    acc, loop, store = then.stmts
    if not isinstance(acc, ast.Decl) or not isinstance(acc.type, ast.Prim) \
            or acc.type.name not in ("float", "double") or not zero(acc.init):
        raise Refused("the `if`'s block does not start with a float accumulator set to 0")
    if not isinstance(loop, ast.For) or loop.span is None:
        raise Refused("the accumulator is not followed by the reduction's loop")
    shape = loop_shape(loop, {})
    if shape is None or shape.start != 0 or shape.step != 1 or shape.inclusive:
        raise Refused(f"the loop over {loop.var} does not count from 0 by 1 to its bound")
    match store:
        case ast.Assign(op="=", target=ast.Index(base=ast.Name(name=out), indices=(
                ast.Name(name=i), ast.Name(name=j))), value=ast.Name(name=value)) \
                if i == row and j == col and value == acc.name:
            return acc, loop, out
    raise Refused(f"the `if`'s block does not end with `OUT[{row}, {col}] = {acc.name};`")


def _product(loop: ast.For, row: str, col: str, acc: str) -> tuple[str, str, bool]:
    """X, Y of the loop's one statement `ACC += X[I, K] * Y[K, J]` (or Y * X), and
    whether X comes first."""
    body = loop.body
    stmt = body.stmts[0] if isinstance(body, ast.Block) and len(body.stmts) == 1 else body
    k = loop.var
    match stmt:
        case ast.Assign(op="+=", target=ast.Name(name=target),
                        value=ast.Binary(op="*", left=left, right=right)) if target == acc:
            for first, second, left_x in ((left, right, True), (right, left, False)):
                x = _array_at(first, row, k)
                y = _array_at(second, k, col)
                if x is not None and y is not None:
                    return x, y, left_x
    raise Refused(f"the loop's body is not `{acc} += X[{row}, {k}] * Y[{k}, {col}];`")


def _array_at(e: ast.Expr, first: str, second: str) -> str | None:
    match e:
        case ast.Index(base=ast.Name(name=array), indices=(ast.Name(name=a),
                                                           ast.Name(name=b))) \
                if a == first and b == second:
            return array
    return None


def _counts_only_loops_read(host: list[ast.Decl], rows: ast.Foreach,
                            kept_reads: set[str]) -> tuple[ast.Decl, ...]:
    """The host declarations that only the replaced loops read (directly or through each
    other): they go with the loops. Those the rewritten loops read (`kept_reads`: the
    counts of rows, the column bound, the reduction's bound) stay, with what they read."""
    decls = {d.name: d for d in host}
    stays = _closure(kept_reads, decls)
    goes = _closure(names_in(rows), decls) - stays
    return tuple(d for name, d in decls.items() if name in goes)


def _closure(names: set[str], decls: Mapping[str, ast.Decl]) -> set[str]:
    """The declarations `names` read, and those they read, and so on."""
    found: set[str] = set()
    wanted = names & decls.keys()
    while wanted - found:
        found |= wanted
        wanted = decls.keys() & set().union(*(names_in(decls[n].init) for n in found))
    return found


def _replaced_names(shape: LaneProduct) -> set[str]:
    return {shape.rows.var, shape.cols.var, shape.lanes.var, shape.accumulator.name,
            shape.loop.var}


def _constants_text(names: Mapping[str, str], values: Mapping[str, int], nr_lanes: int,
                    level: str) -> str:
    n = names
    return "\n".join([
        f"// cpu-blocks: each thread computes {n['STRIPS']} strips of {n['COLS']} columns "
        f"for {n['ROWS']} rows,",
        f"// in register tiles of {n['ELEMS_I']} rows x {n['NR_VECS']} vectors of "
        f"{n['NR_VECTORS']} lanes, the",
        f"// column operand packed per {n['BLOCK_K']} steps of the reduction.",
        f"// The lanes of a vector at {level}, fixed by the level.",
        f"const int {n['NR_VECTORS']} = {nr_lanes};",
        f"// tune: {TUNE['nr_vecs']}",
        f"const int {n['NR_VECS']} = {values['nr_vecs']};",
        f"// tune: {TUNE['elems_i']}",
        f"const int {n['ELEMS_I']} = {values['elems_i']};",
        f"// tune: {TUNE['blocks_i']}",
        f"const int {n['BLOCKS_I']} = {values['blocks_i']};",
        f"const int {n['ROWS']} = {n['ELEMS_I']} * {n['BLOCKS_I']};",
        f"const int {n['COLS']} = {n['NR_VECS']} * {n['NR_VECTORS']};",
        f"// tune: {TUNE['strips']}",
        f"const int {n['STRIPS']} = {values['strips']};",
        f"// tune: {TUNE['block_k']}",
        f"const int {n['BLOCK_K']} = {values['block_k']};",
        "", ""])


# The rewritten loops (kernels/matmul/x86_avx512_v5.mcpl), the names filled in.
_BODY = """\
int {nrThreadsN} = ({N} + {ROWS} - 1) / {ROWS};
int {nrThreadsM} = ({M} + {STRIPS} * {COLS} - 1) / ({STRIPS} * {COLS});
int {nrBlocksK} = ({P} + {BLOCK_K} - 1) / {BLOCK_K};
foreach (int {tj} in {nrThreadsM} {threads}) {{
    foreach (int {ti} in {nrThreadsN} {threads}) {{
        foreach (int {vj} in {NR_VECTORS} {vectors}) {{
            reg {T}[{BLOCK_K}][{NR_VECS}] {bPack};
            reg {T}[{STRIPS}][{ROWS}][{NR_VECS}] {cTemp};
            reg {T}[{ELEMS_I}][{NR_VECS}] {sums};
            // the strips and register tiles that hold elements of {C}
            int {nrStrips} = min({STRIPS}, ({M} + {COLS} - 1) / {COLS} - {tj} * {STRIPS});
            int {nrTiles} = min({BLOCKS_I}, ({N} - {ti} * {ROWS} + {ELEMS_I} - 1) / {ELEMS_I});
            for (int {s} = 0; {s} < {STRIPS}; {s}++) {{
                for (int {r} = 0; {r} < {ROWS}; {r}++) {{
                    for (int {v} = 0; {v} < {NR_VECS}; {v}++) {{
                        {cTemp}[{s}][{r}][{v}] = 0.0;
                    }}
                }}
            }}
            for (int {kb} = 0; {kb} < {nrBlocksK}; {kb}++) {{
                int {k0} = {kb} * {BLOCK_K};
                int {kLength} = min({BLOCK_K}, {P} - {k0});
                for (int {s} = 0; {s} < {nrStrips}; {s}++) {{
                    // pack the strip's block of {Y}
                    for (int {kk} = 0; {kk} < {kLength}; {kk}++) {{
                        for (int {v} = 0; {v} < {NR_VECS}; {v}++) {{
                            int {j} = min((({tj} * {STRIPS} + {s}) * {NR_VECS} + {v})
                                * {NR_VECTORS} + {vj}, {M} - 1);
                            {bPack}[{kk}][{v}] = {Y}[{k0} + {kk}, {j}];
                        }}
                    }}
                    for (int {ib} = 0; {ib} < {nrTiles}; {ib}++) {{
                        for (int {ei} = 0; {ei} < {ELEMS_I}; {ei}++) {{
                            for (int {v} = 0; {v} < {NR_VECS}; {v}++) {{
                                {sums}[{ei}][{v}] = {cTemp}[{s}][{ib} * {ELEMS_I} + {ei}][{v}];
                            }}
                        }}
                        // one rank-1 update of the register tile per step
                        for (int {kk} = 0; {kk} < {kLength}; {kk}++) {{
                            for (int {ei} = 0; {ei} < {ELEMS_I}; {ei}++) {{
                                {T} {aik} = {X}[min({ti} * {ROWS} + {ib} * {ELEMS_I} + {ei},
                                    {N} - 1), {k0} + {kk}];
                                for (int {v} = 0; {v} < {NR_VECS}; {v}++) {{
                                    {sums}[{ei}][{v}] += {product};
                                }}
                            }}
                        }}
                        for (int {ei} = 0; {ei} < {ELEMS_I}; {ei}++) {{
                            for (int {v} = 0; {v} < {NR_VECS}; {v}++) {{
                                {cTemp}[{s}][{ib} * {ELEMS_I} + {ei}][{v}] = {sums}[{ei}][{v}];
                            }}
                        }}
                    }}
                }}
            }}
            // whole vectors inside {C} are one vector store, the others one per lane
            for (int {s} = 0; {s} < {STRIPS}; {s}++) {{
                for (int {r} = 0; {r} < {ROWS}; {r}++) {{
                    int {i} = {ti} * {ROWS} + {r};
                    for (int {v} = 0; {v} < {NR_VECS}; {v}++) {{
                        int {j0} = (({tj} * {STRIPS} + {s}) * {NR_VECS} + {v}) * {NR_VECTORS};
                        int {j} = {j0} + {vj};
                        if ({i} < {N} && {j0} + {NR_VECTORS} <= {M}) {{
                            {C}[{i}, {j}] = {cTemp}[{s}][{r}][{v}];
                        }} else {{
                            if ({i} < {N} && {j} < {M}) {{
                                {C}[{i}, {j}] = {cTemp}[{s}][{r}][{v}];
                            }}
                        }}
                    }}
                }}
            }}
        }}
    }}
}}"""


def _body_text(kernel: KernelAtLevel, shape: LaneProduct, names: Mapping[str, str]) -> str:
    """The loops that replace the foreach over rows, at column 0."""
    loop_bound = loop_shape(shape.loop, {})
    assert loop_bound is not None and isinstance(shape.accumulator.type, ast.Prim)
    element = shape.accumulator.type.name
    packed = f"{names['bPack']}[{names['kk']}][{names['v']}]"
    product = f"{names['aik']} * {packed}" if shape.left_x else f"{packed} * {names['aik']}"
    return _BODY.format(**names, N=text_of(kernel, shape.rows.count),
                        M=text_of(kernel, shape.bound), P=text_of(kernel, loop_bound.bound),
                        T=element, X=shape.x, Y=shape.y, C=shape.out, product=product,
                        threads=shape.rows.group, vectors=shape.lanes.group)
