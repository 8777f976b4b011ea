"""stage-transpose: copy a TILE x TILE tile of an array through the block's shared memory
when a statement reads it along one dimension and writes it along the other (`b[j, i] =
a[i, j]`), so that the lanes of a warp walk the last dimension of both the load and the
store (the lock-step analysis's `uncoalesced` suggestion, a `CoalesceAccess`; paper 5.1,
gpu (v1): "local memory can be leveraged", and 6.5 for the padding).

Swapping the mapping (swap-mapping) cannot help such a statement: whichever index the
lanes walk, one of the two accesses strides. Staged, block (bi, bj) owns the tile of
rows bi * TILE, columns bj * TILE of the element space; its ROWS warps of TILE lanes
first read the tile from the array, a warp one row of it per step (the lanes along the
load's last dimension), then, after a barrier, write the statement's elements a warp one
row of the target per step (the lanes along the store's last dimension), reading the
tile down a column. A column of a tile of TILE words per row falls in one bank where
TILE is a multiple of the banks; the rows are padded by the fewest words that spread a
column over all of them (pad-shared's choice: TILE + 1 for 32 banks).

The kernel it rewrites is the translation of a perfect kernel with a foreach over rows
`i` and one over columns `j` (paper Appendix A), as tile-2d reads it: a foreach over
blocks whose variable is the row (`int I = BI;`), then one over blocks, one over warps
and one over the warp's lanes that number the columns in order, guarded by `if (J < M)`;
in the guard one assignment whose target and staged load index [I, J] and [J, I] (one
each way). Elements outside the element space are neither read nor written: both copies
are guarded by `I < N && J < M`."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mcl.codegen.host_eval import Number
from mcl.feedback.findings import Finding, UncoalescedAccess, every
from mcl.feedback.lockstep import BANK_WORD_BYTES
from mcl.mcpl import ast
from mcl.mcpl.printer import print_expr
from mcl.refine.answers import ANSWERS
from mcl.refine.edits import TextEdit, deleting_line, edited_span_text, indentation
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.name_counts import static_counts
from mcl.refine.nesting import whole_accesses
from mcl.refine.pad_shared import ELEMENT_BYTES, padding
from mcl.refine.places import (
    constant_env,
    constant_int,
    every_name,
    fresh_names,
    names_in,
    path_to,
)
from mcl.refine.refinement import Parameter, Proposal, Refinement, Refused, integer
from mcl.refine.unit_rows import (
    guard_of,
    is_int,
    require_block_count,
    require_groups,
    require_row_numbering,
    text_of,
)

# Warps per block the tile is copied by, each lane TILE / ROWS elements each way (the
# shipped hopper (v1) of kernels/transpose: 8 warps of 32 lanes, 4 elements each).
ROWS = 8


@dataclass(frozen=True)
class Transposed:
    """The parts of the statement to stage: the foreach loops over the row's blocks, the
    columns' blocks, the warps and the lanes; the row I (= BI) and its bound N, the column
    J and its bound M; the guard and its one assignment; the staged load (its subscripts
    [A, B] names of I and J, the target's [B, A]) and every span of it in the assignment;
    the lanes per warp."""

    rows: ast.Foreach
    blocks: ast.Foreach
    warps: ast.Foreach
    lanes: ast.Foreach
    row: str
    row_bound: ast.Expr
    column: str
    column_bound: ast.Expr
    guard: ast.If
    stmt: ast.Assign
    load: ast.Index
    load_spans: tuple[ast.Index, ...]
    lanes_n: int


class StageTranspose(Refinement):
    name = "stage-transpose"
    summary = ("copy a tile through shared memory where a statement reads an array along "
               "one dimension and writes along the other, so both are coalesced")
    parameters = (
        Parameter("line", "the line of the statement"),
        Parameter("rows", f"the warps of a block (default {ROWS}); each lane copies "
                  "TILE / rows elements each way", optional=True),
    )
    preconditions = (
        "an `uncoalesced` finding names the target or a load of the statement",
        "the statement is the one assignment in an `if (J < M)` without else that ends "
        "the body of the innermost of four foreach loops: one over blocks whose variable "
        "is the row (`int I = BI;` before the `if`, BI's count N reading no foreach "
        "variable), then one over blocks, one over warps and one over the warp's lanes, "
        "over the level's last three par_groups, the lanes in lock-step, the warps' and "
        "lanes' counts constant (named constants or counts the function computes from "
        "the description before its foreach loops)",
        "J numbers the units one column each in order, `(bj * WARPS + w) * LANES + t`, "
        "and the count of the blocks over J is `(M + K - 1) / K` with K = WARPS * LANES",
        "the statement's target and one load of it (every load of that element alike) "
        "index two dimensions with I and J, the one [I, J] and the other [J, I]; no other "
        "access of it reads I or J; it reads no other declaration of the foreach bodies "
        "and no foreach variable; the loaded array is not the target's",
        "the level has a memory space of the block (shared) for the tile, and the lanes "
        "of a warp divide by rows",
        "each foreach's header stands on its own line and the nest is laid out `... {` "
        "... `}`",
    )
    answers = ANSWERS["stage-transpose"]

    def proposals(self, kernel: KernelAtLevel) -> list[Proposal | Refused]:
        return self.answer_each_once(
            kernel, every(kernel.findings, UncoalescedAccess, kernel.function))

    def answer(self, kernel: KernelAtLevel, finding: Finding) -> Proposal:
        if not isinstance(finding, UncoalescedAccess):
            raise Refused(f"{self.name} answers uncoalesced findings, not {finding.code}")
        span = finding.access.span
        if span is None or not kernel.in_file(span):
            raise Refused("the finding names no access of the kernel's own file")
        return self._propose(kernel, span.line, ROWS, finding)

    def propose(self, kernel: KernelAtLevel, args: Mapping[str, str]) -> Proposal:
        line = integer(args, "line")
        finding = next((f for f in kernel.findings if isinstance(f, UncoalescedAccess)
                        and f.function == kernel.function and f.access.span is not None
                        and f.access.span.line == line), None)
        return self._propose(kernel, line, integer(args, "rows", ROWS), finding)

    def _propose(self, kernel: KernelAtLevel, line: int, rows: int,
                 finding: Finding | None) -> Proposal:
        if finding is None:
            raise Refused(f"no uncoalesced finding at line {line} of {kernel.function} at "
                          f"{kernel.level}: no access to coalesce")
        env = _static_env(kernel)
        shape = _transposed(kernel, line, env)
        if rows < 1 or shape.lanes_n % rows:
            raise Refused(f"rows={rows}: a positive number of warps that divides the "
                          f"{shape.lanes_n} lanes of a warp")
        space, banks = _block_space(kernel)
        array = ast.root_name(shape.load) or "a"
        function = kernel.source_function
        taken = every_name(function) | {c.name for c in kernel.constants()} \
            | {f.name for f in kernel.source.program.main.functions}
        tile_c, pad_c, rows_c, tile, step = fresh_names(
            ("TILE", "PAD", "ROWS", f"tile_{array}", "r"), taken)
        element = _element_type(function, array)
        # the conflict analysis's banks of BANK_WORD_BYTES words (pad-shared's choice)
        pad = padding(shape.lanes_n, ELEMENT_BYTES.get(element, 4), BANK_WORD_BYTES,
                      banks) if banks else 0
        spread = _column_banks(shape.lanes_n + pad, ELEMENT_BYTES.get(element, 4), banks)
        assert function.span is not None
        constants = TextEdit.inserting(function.span.line, 1, "\n".join([
            f"// stage-transpose: a {tile_c} x {tile_c} tile of {array} through {space} "
            f"memory, read along its rows",
            "// and written along its columns; the elements of a warp's lanes, one row of "
            "the tile.",
            f"const int {tile_c} = {shape.lanes_n};",
            f"// Padding of each row of the tile: a column of it then falls in {spread} "
            "different banks.",
            f"const int {pad_c} = {pad};",
            f"// Warps per block; each lane copies {tile_c} / {rows_c} elements each way.",
            f"// tune: {', '.join(str(v) for v in _divisors(shape.lanes_n))}",
            f"// require: {tile_c} % {rows_c} == 0",
            f"const int {rows_c} = {rows};",
            "", ""]))
        names = _TransposeNames(tile_c, pad_c, rows_c, tile, step, space)
        nest = _nest_text(kernel, shape, names, element)
        outer = shape.rows
        assert outer.span is not None
        edits = [constants, TextEdit.replacing(outer.span, nest),
                 *_unused_counts(kernel, nest)]
        return Proposal(
            self.name, (("line", str(line)), ("rows", str(rows))), line,
            f"copy a {shape.lanes_n} x {shape.lanes_n} tile of {array} through {space} "
            f"{tile}, read along {print_expr(shape.load)}'s last dimension and written "
            f"along {print_expr(shape.stmt.target)}'s, rows padded by {pad}, with "
            f"barrier({space}) between", tuple(edits), finding)

    def still_there(self, proposal: Proposal, findings: Sequence[Finding]) -> Finding | None:
        """An uncoalesced access of the array the finding named, anywhere in the next
        version: the copy that replaces the access must be coalesced."""
        answered = proposal.answers
        if not isinstance(answered, UncoalescedAccess):
            return None
        return next((f for f in findings if isinstance(f, UncoalescedAccess)
                     and f.access.array == answered.access.array), None)


@dataclass(frozen=True)
class _TransposeNames:
    tile_c: str
    pad_c: str
    rows_c: str
    tile: str
    step: str
    space: str


def _static_env(kernel: KernelAtLevel) -> dict[str, Number]:
    """The named constants and the counts the function computes from the description
    before its foreach loops (a translation's `nrThreadsTj`)."""
    env: dict[str, Number] = dict(constant_env(kernel.source.program.main))
    env.update({decl.name: value for decl, value in static_counts(kernel)})
    return env


def _transposed(kernel: KernelAtLevel, line: int, env: Mapping[str, Number]) -> Transposed:
    function = kernel.source_function
    stmts = [n for n in ast.walk(function.body) if isinstance(n, ast.Assign)
             and n.span is not None and n.span.line == line and kernel.in_file(n.span)]
    if len(stmts) != 1:
        raise Refused(f"no single assignment at line {line}")
    (stmt,) = stmts
    path = path_to(function.body, stmt)
    foreach = [n for n in path if isinstance(n, ast.Foreach)]
    if len(foreach) != 4:
        raise Refused(f"the statement at line {line} is inside {len(foreach)} foreach "
                      "loop(s): four are needed (the row's blocks, the columns' blocks, "
                      "the warps, the lanes; a kernel written above the level has them "
                      "once translated, as `mcl refine` starts)")
    rows, blocks, warps, lanes = foreach
    require_groups(kernel, (rows, blocks), warps, lanes)
    for above, below in zip(foreach, foreach[1:], strict=False):
        if not isinstance(above.body, ast.Block) or len(above.body.stmts) != 1 \
                or above.body.stmts[0] is not below:
            raise Refused(f"foreach {above.var} holds more than foreach {below.var}")
    warps_n, lanes_n = constant_int(warps.count, env), constant_int(lanes.count, env)
    if warps_n is None or lanes_n is None:
        raise Refused(f"the counts of foreach {warps.var} and {lanes.var} are not "
                      "constants of the file")
    body = lanes.body
    if not isinstance(body, ast.Block) or not body.stmts:
        raise Refused(f"the body of foreach {lanes.var} is not a block")
    *indices, guard = body.stmts
    if not isinstance(guard, ast.If) or guard.orelse is not None \
            or not isinstance(guard.then, ast.Block) or len(guard.then.stmts) != 1 \
            or guard.then.stmts[0] is not stmt:
        raise Refused(f"the statement is not the one statement of an `if` without else "
                      f"that ends the body of foreach {lanes.var}")
    if any(not isinstance(d, ast.Decl) or d.init is None or not is_int(d.type)
           for d in indices):
        raise Refused(f"before the `if` in foreach {lanes.var} stand statements other "
                      "than int declarations")
    decls = [d for d in indices if isinstance(d, ast.Decl)]
    column, column_bound = guard_of(guard)
    row = next((d.name for d in decls if isinstance(d.init, ast.Name)
                and d.init.name == rows.var), None)
    if row is None:
        raise Refused(f"no `int I = {rows.var};` before the `if`: the row is not the "
                      f"variable of foreach {rows.var}")
    if column not in {d.name for d in decls}:
        raise Refused(f"{column} of the guard is not declared before it")
    require_row_numbering(decls, column, (blocks.var, warps.var, lanes.var),
                          (warps_n, lanes_n), {rows.var: 0}, env)
    require_block_count(kernel, blocks, column_bound, warps_n * lanes_n, env)
    units = {f.var for f in foreach}
    hidden = units | ({d.name for d in decls} - {row, column})
    read = (names_in(stmt) | names_in(column_bound) | names_in(rows.count)) & hidden
    if read:
        raise Refused(f"the statement or a bound reads {', '.join(sorted(read))}: only the "
                      "element's indices may tell the units apart")
    load, spans = _staged_load(stmt, row, column)
    return Transposed(rows, blocks, warps, lanes, row, rows.count, column, column_bound,
                      guard, stmt, load, spans, lanes_n)


def _subscript_names(access: ast.Index) -> tuple[str, ...] | None:
    """The subscripts of a two-dimensional access that are each a bare name."""
    subscripts = [*access.indices]
    base = access.base
    while isinstance(base, ast.Index):
        subscripts = [*base.indices, *subscripts]
        base = base.base
    if len(subscripts) != 2 or not all(isinstance(s, ast.Name) for s in subscripts):
        return None
    return tuple(s.name for s in subscripts if isinstance(s, ast.Name))


def _staged_load(stmt: ast.Assign, row: str, column: str
                 ) -> tuple[ast.Index, tuple[ast.Index, ...]]:
    """The load to stage: indexed the other way round from the target, I and J, every
    access of the statement that reads I or J one of the two."""
    target = stmt.target
    if not isinstance(target, ast.Index):
        raise Refused("the statement's target is not an array element")
    order = _subscript_names(target)
    if order is None or set(order) != {row, column}:
        raise Refused(f"the target {print_expr(target)} does not index two dimensions "
                      f"with {row} and {column}")
    flipped = (order[1], order[0])
    loads = [a for a in whole_accesses(stmt.value) if names_in(a) & {row, column}]
    staged = [a for a in loads if _subscript_names(a) == flipped]
    if not staged or any(a != staged[0] for a in staged) or len(staged) != len(loads):
        raise Refused(f"the statement does not read one element indexed "
                      f"[{', '.join(flipped)}], and nothing else with {row} or {column}: "
                      "no load the other way round from its target to stage")
    if ast.root_name(staged[0]) == ast.root_name(target):
        raise Refused("the statement reads the array it writes: the tile could go stale")
    if any(a.span is None for a in staged):
        raise Refused("a load has no place in the source")
    return staged[0], tuple(staged)


def _block_space(kernel: KernelAtLevel) -> tuple[str, int]:
    """The memory space of the kernel's level that the units of a block share, and the
    banks of the memory that holds it (0 where it states none)."""
    hwd = kernel.library.get(kernel.source_function.hwd)
    chain = hwd.group_chain(hwd.executing_unit().name)
    unit = chain[-3].unit if len(chain) >= 3 else None
    spaces = [s.name for s in unit.spaces] if unit is not None else []
    if not spaces:
        raise Refused(f"{hwd.name} has no memory space its blocks' units share: no place "
                      "for the tile")
    memories = hwd.memories_for(spaces[0])
    banks = memories[0].nr_banks if memories else None
    return spaces[0], int(banks) if banks else 0


def _element_type(function: ast.Function, array: str) -> str:
    declared = [p.type for p in function.params if p.name == array]
    if len(declared) != 1 or not isinstance(declared[0], ast.ArrayType) \
            or not isinstance(declared[0].element, ast.Prim):
        raise Refused(f"{array} is not a parameter array of a primitive type")
    return declared[0].element.name


def _column_banks(row: int, element: int, banks: int) -> int:
    """The banks a column of a tile with rows of `row` elements falls in."""
    words, whole = divmod(row * element, BANK_WORD_BYTES)
    return banks // math.gcd(words, banks) if banks and not whole else 1


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0 and d <= 32]


def _nest_text(kernel: KernelAtLevel, shape: Transposed, n: _TransposeNames, element: str) -> str:
    """The new foreach nest: the tile declared in the block, the copy in, the barrier,
    the statement reading the tile."""
    text = kernel.text
    outer = shape.rows
    assert outer.span is not None and shape.lanes.span is not None
    at = indentation(text, outer.span.line)
    step = indentation(text, shape.blocks.span.line)[len(at):] \
        if shape.blocks.span is not None else "    "
    step = step or "    "
    load_order = _subscript_names(shape.load)
    assert load_order is not None
    first, last = load_order  # the load's dimensions: the tile's rows and columns
    base = {shape.row: f"{outer.var} * {n.tile_c}",
            shape.column: f"{shape.blocks.var} * {n.tile_c}"}
    bound = {shape.row: text_of(kernel, shape.row_bound),
             shape.column: text_of(kernel, shape.column_bound)}
    w, t, s = shape.warps.var, shape.lanes.var, n.step
    along = f"{s} * {n.rows_c} + {w}"
    guard = f"{shape.row} < {bound[shape.row]} && {shape.column} < {bound[shape.column]}"
    load_text = print_expr(shape.load)
    edits = [TextEdit.replacing(a.span, f"{n.tile}[{t}][{along}]")
             for a in shape.load_spans if a.span is not None]
    assert shape.stmt.span is not None
    statement = edited_span_text(text, shape.stmt.span, edits)

    def copy(inner: dict[str, str], body: str) -> list[str]:
        return [f"for (int {s} = 0; {s} < {n.tile_c} / {n.rows_c}; {s}++) {{",
                *(f"{step}int {v} = {base[v]} + {inner[v]};" for v in (shape.row,
                                                                      shape.column)),
                f"{step}if ({guard}) {{",
                f"{step * 2}{body}",
                f"{step}}}",
                "}"]

    lanes_body = [
        f"// step {s}: row {along} of the tile from {ast.root_name(shape.load)}, a "
        "row per warp",
        *copy({first: along, last: t}, f"{n.tile}[{along}][{t}] = {load_text};"),
        f"barrier({n.space});",
        f"// step {s}: row {along} of the transposed tile to "
        f"{ast.root_name(shape.stmt.target)}, a row per warp",
        *copy({first: t, last: along}, statement),
    ]
    blocks_count = f"({bound[shape.column]} + {n.tile_c} - 1) / {n.tile_c}"
    rows_count = f"({bound[shape.row]} + {n.tile_c} - 1) / {n.tile_c}"
    lines = [
        f"foreach (int {outer.var} in {rows_count} {outer.group}) {{",
        f"{step}foreach (int {shape.blocks.var} in {blocks_count} {shape.blocks.group}) {{",
        f"{step * 2}{n.space} {element}[{n.tile_c}][{n.tile_c} + {n.pad_c}] {n.tile};",
        f"{step * 2}foreach (int {w} in {n.rows_c} {shape.warps.group}) {{",
        f"{step * 3}foreach (int {t} in {n.tile_c} {shape.lanes.group}) {{",
        *(f"{step * 4}{row}" for row in lanes_body),
        f"{step * 3}}}",
        f"{step * 2}}}",
        f"{step}}}",
        "}",
    ]
    return "\n".join([lines[0], *(at + row for row in lines[1:])])


def _unused_counts(kernel: KernelAtLevel, nest: str) -> list[TextEdit]:
    """The lines of the function's leading int declarations that nothing reads once the
    nest is rewritten (the old block counts and what only they read)."""
    function = kernel.source_function
    assert isinstance(function.body, ast.Block)
    leading = []
    for stmt in function.body.stmts:
        if not isinstance(stmt, ast.Decl):
            break
        leading.append(stmt)
    rest = [s for s in function.body.stmts if not isinstance(s, ast.Decl)]
    kept = {d.name: d for d in leading}
    changed = True
    while changed:
        changed = False
        for name, decl in list(kept.items()):
            readers = [re.search(rf"\b{re.escape(name)}\b", nest) is not None,
                       *(name in names_in(d.init) for d in kept.values() if d is not decl),
                       *(name in names_in(s) for s in rest
                         if s is not _first_foreach(function))]
            if not any(readers) and is_int(decl.type):
                del kept[name]
                changed = True
    out = []
    for decl in leading:
        if decl.name not in kept:
            try:
                out.append(deleting_line(kernel.text, decl))
            except Refused:
                return []
    return out


def _first_foreach(function: ast.Function) -> object | None:
    assert isinstance(function.body, ast.Block)
    return next((s for s in function.body.stmts if isinstance(s, ast.Foreach)), None)

