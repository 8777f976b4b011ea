"""tile-2d: let each thread compute a 2-D tile of ELEMS_I x ELEMS_J elements of a 2-D
output, a block THREADS_I x THREADS_J threads, so that a block covers TILE_I x TILE_J
elements; the loads of the reduction that read only the row (`a[i, k]`) or only the
column (`b[k, j]`) of an element are loaded once per iteration into registers and used
for all the thread's elements of that row or column (the paper's gpu (v2) and (v3):
several elements per thread, section 5.1; the register tiles of kernels/matmul/hopper_v1).

The kernel it rewrites is the translation of a perfect kernel with a foreach over rows
`i` and one over columns `j` (paper Appendix A): a foreach over blocks whose variable is
the row (`int i = bi;`), then one over blocks, one over warps and one over the warp's
threads that number the columns in order, guarded by `if (j < M)`; in the guard
accumulators set to 0, a loop nest that only adds to them, the tail that uses them. The
loops of the reduction go outside the thread's elements: each iteration loads the
row-only and column-only elements into registers, then adds to every element's sum; the
tail runs for each element, as written, with the element's sums. Each element adds its
terms in the order it did: the results are the same but for the guards' reads of
elements past the edges, which are not loaded (a register holds 0 there, and those
elements are not stored). New named constants (`// tune:` values and a `// require:`
rule, docs/tuning.md) give the tile's shape, so that `set-constant` and `mcl tune` take it
from there."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from mcl.diagnostics import MclError, Span
from mcl.mcpl import ast
from mcl.refine.edits import TextEdit, body_lines, edited_span_text, indentation, line_of
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.nesting import whole_accesses
from mcl.refine.places import (
    constant_int,
    every_name,
    fresh_name,
    fresh_names,
    names_in,
    path_to,
)
from mcl.refine.refinement import (
    Parameter,
    Proposal,
    Refinement,
    Refused,
    for_loop_at,
    integer,
)
from mcl.refine.set_constant import SetConstant
from mcl.refine.unit_rows import RowReduction, count_edit, row_reduction, text_of
from mcl.tune.space import constant_values, rule_problems, space_from_source

# The tiles of elements per thread a list tries (ELEMS_I, ELEMS_J); the model's fastest
# is offered where it is faster than the kernel.
SHAPES = ((4, 4), (8, 4), (4, 8), (8, 8))
ELEMS_TUNE = "1, 2, 4, 8"
THREADS_TUNE = (1, 2, 4, 8, 16, 32, 64)


@dataclass(frozen=True)
class Hoisted:
    """A load of the reduction's innermost body that reads the row only (`kind` "i"),
    the column only ("j") or neither ("-"): loaded once per iteration into `register`."""

    text: str
    kind: str
    register: str
    element: str
    spans: tuple[Span, ...]


@dataclass(frozen=True)
class TileNames:
    """The names the new code declares, none taken in the function or the file."""

    threads_i: str
    threads_j: str
    elems_i: str
    elems_j: str
    tile_i: str
    tile_j: str
    unit: str
    ui: str
    uj: str
    ei: str
    ej: str


class Tile2D(Refinement):
    name = "tile-2d"
    # The tiles a list weighs (ELEMS_I x ELEMS_J).
    shapes: tuple[tuple[int, int], ...] = SHAPES
    summary = ("let each thread compute a 2-D tile of elements, loading each row's and "
               "column's operands once into registers")
    parameters: tuple[Parameter, ...] = (
        Parameter("line", "the line of the (outermost) loop of the reduction"),
        Parameter("elems_i", "the rows of a thread's tile", optional=True),
        Parameter("elems_j", "the columns of a thread's tile", optional=True),
        Parameter("threads_i", "the rows of a block's threads (default: its warps)",
                  optional=True),
        Parameter("threads", "the block's threads (default: as many as it has); fewer "
                  "leave each thread more registers for a larger tile", optional=True),
    )
    preconditions: tuple[str, ...] = (
        "the loop is a statement of the block of an `if (J < M)` without else that ends "
        "the body of the innermost of four foreach loops: one over blocks whose variable "
        "is the row (`int I = BI;` before the `if`, and BI's count N its bound), then "
        "one over blocks, one over warps and one over the warp's lanes, over the level's "
        "last three par_groups, the lanes in lock-step, the warps' and lanes' counts "
        "constants of the file",
        "J is a sum of products of constants and the last three foreach variables that "
        "numbers the units one column each in order, `(bj * WARPS + w) * LANES + t`, and "
        "the count of the blocks over J is `(M + K - 1) / K` with K = WARPS * LANES "
        "(directly or through a local declaration only it reads)",
        "before the `if` stand only int declarations; the `if` and M read none of the "
        "foreach variables and none of the declarations but I and J; N reads none of "
        "the foreach variables; no barrier, no return in the `if`",
        "in the `if` stand the accumulators (declared with the value 0), the loop, then "
        "the tail; the loop and the loops perfectly nested in it have constant starts, "
        "bounds that read neither I, J nor an accumulator, and the innermost body only "
        "adds to the accumulators (`acc += e`, e reading none) besides what it declares",
        "the loops, the `if`'s block and the lanes' foreach are laid out `... {` ... `}`; "
        "the row's foreach and the blocks' count declaration each on one line",
        "with `threads`: one named constant with `// tune:` values gives the warps' "
        "count, one of its values makes the block `threads` threads, and every "
        "`// require:` rule of the file holds with it",
    )

    def proposals(self, kernel: KernelAtLevel) -> list[Proposal | Refused]:
        out: list[Proposal | Refused] = []
        for loop in _candidate_loops(kernel):
            assert loop.span is not None
            line = loop.span.line
            for elems_i, elems_j in self.shapes:
                try:
                    found = self.fitting(kernel, line, elems_i, elems_j)
                except Refused as refused:
                    out.append(Refused(refused.reason, line))
                    if not isinstance(refused, _TooManyRegisters):
                        break
                    continue
                # alternatives: the model's fastest is verified and offered where it is
                # faster than the kernel by MIN_GAIN (mcl.refine.offers)
                out += [replace(p, group=f"{self.name}:line={line}") for p in found]
        return out

    def fitting(self, kernel: KernelAtLevel, line: int, elems_i: int, elems_j: int
                ) -> list[Proposal]:
        """The proposals of the tile a list weighs (`_fitting`'s)."""
        return [self._fitting(kernel, line, elems_i, elems_j)]

    def _fitting(self, kernel: KernelAtLevel, line: int, elems_i: int,
                 elems_j: int) -> Proposal:
        """The tile at the kernel's block size or, where its registers do not fit there,
        at the largest smaller block the block's named constant allows that they fit
        (a smaller block leaves each thread more of the register file)."""
        args = {"line": str(line), "elems_i": str(elems_i), "elems_j": str(elems_j),
                **self.default_args()}
        try:
            return self.propose(kernel, args)
        except _TooManyRegisters as refused:
            shape = reduction_shape(kernel, for_loop_at(kernel, line))
            threads = shape.warps_n * shape.lanes_n
            smaller = sorted((t for t in block_sizes(kernel, shape) if t < threads),
                             reverse=True)
            for fewer in smaller:
                try:
                    return self.propose(kernel, {**args, "threads": str(fewer)})
                except _TooManyRegisters:
                    continue
            raise refused from None

    def default_args(self) -> dict[str, str]:
        """The parameters a list gives besides the tile's shape."""
        return {}

    def propose(self, kernel: KernelAtLevel, args: Mapping[str, str]) -> Proposal:
        plan = self.plan(kernel, args)
        return self.proposal(kernel, plan, thread_body(kernel, plan.shape, plan.row,
                                                       plan.names))

    def plan(self, kernel: KernelAtLevel, args: Mapping[str, str]) -> TilePlan:
        """The tile `args` ask for, its preconditions shown (Refused where one fails,
        _TooManyRegisters where the tile does not fit the block's registers)."""
        line = integer(args, "line")
        loop = for_loop_at(kernel, line)
        elems_i, elems_j = integer(args, "elems_i", 4), integer(args, "elems_j", 4)
        shape = reduction_shape(kernel, loop)
        block: TextEdit | None = None
        if "threads" in args and integer(args, "threads") != shape.warps_n * shape.lanes_n:
            block, warps_n = _block_edit(kernel, shape, integer(args, "threads"))
            shape = replace(shape, warps_n=warps_n)
        threads = shape.warps_n * shape.lanes_n
        threads_i = integer(args, "threads_i", shape.warps_n)
        if min(elems_i, elems_j, threads_i) < 1 or threads % threads_i:
            raise Refused(f"elems_i={elems_i}, elems_j={elems_j}, threads_i={threads_i}: "
                          f"positive, and threads_i divides the block's {threads} threads")
        names = _names(kernel)
        row = _row(shape)
        budget = _register_rule(kernel, shape, hoisted_loads(kernel, shape, row.name, names),
                                names)
        if budget is not None:
            needed = budget.needed(elems_i, elems_j)
            if needed > budget.per_thread:
                raise _TooManyRegisters(
                    f"a tile of {elems_i} x {elems_j} needs about {needed} registers per "
                    f"thread, more than the {budget.per_thread} a thread of a block of "
                    f"{threads} may have: the compiler would spill them to memory")
        return TilePlan(line, shape, row, names, elems_i, elems_j, threads_i, budget, block)

    def proposal(self, kernel: KernelAtLevel, plan: TilePlan, body: TextEdit,
                 more: tuple[tuple[str, str], ...] = (), constants: Sequence[str] = (),
                 edits: Sequence[TextEdit] = (), also: str = "") -> Proposal:
        """The proposal of `plan` whose threads' body is `body`; `more` parameters,
        `constants` (lines declared after the tile's), `edits` and words (`also`)
        besides the tile's."""
        shape, names, block = plan.shape, plan.names, plan.block
        threads = plan.threads
        every = (_constants(kernel, shape, names,
                            (plan.elems_i, plan.elems_j, plan.threads_i), plan.budget,
                            constants),
                 _row_count(kernel, shape, names),
                 count_edit(kernel, shape.blocks, f"({text_of(kernel, shape.bound)} + "
                            f"{names.tile_j} - 1) / {names.tile_j}"),
                 body, *edits, *([block] if block else []))
        return Proposal(
            self.name, (("line", str(plan.line)), ("elems_i", str(plan.elems_i)),
                        ("elems_j", str(plan.elems_j)), ("threads_i", str(plan.threads_i)),
                        *([("threads", str(threads))] if block else []), *more), plan.line,
            f"each thread computes {plan.elems_i} x {plan.elems_j} elements "
            f"({plan.row.name}, {shape.row}) of a block's {plan.threads_i * plan.elems_i} x "
            f"{threads // plan.threads_i * plan.elems_j}, its row's and column's operands "
            "loaded once into registers" + also
            + (f"; blocks of {threads} threads, so that the tile fits in registers"
               if block else ""), every)


@dataclass(frozen=True)
class TilePlan:
    """A tile whose preconditions hold: the reduction's loop (at `line`) and its shape,
    the row, the new names, the tile's parameters, the register rule and the edit of
    the block's size (None: the block keeps its size)."""

    line: int
    shape: RowReduction
    row: RowIndex
    names: TileNames
    elems_i: int
    elems_j: int
    threads_i: int
    budget: RegisterRule | None
    block: TextEdit | None

    @property
    def threads(self) -> int:
        return self.shape.warps_n * self.shape.lanes_n


class _TooManyRegisters(Refused):
    """The tile needs more registers than a thread of the block may have."""


def _block_constant(kernel: KernelAtLevel, shape: RowReduction
                    ) -> tuple[str, dict[int, int]] | None:
    """The named constant with `// tune:` values that gives the warps' count, and the
    block's threads for each of its values the file's rules allow; None where no one
    constant does."""
    try:
        space = space_from_source(kernel.source.program.main, kernel.path, {}, kernel.text)
    except MclError:
        return None
    found: list[tuple[str, dict[int, int]]] = []
    for name, values in space.params.items():
        sizes: dict[int, int] = {}
        for value in values:
            env = constant_values(kernel.constants(), {name: value})
            warps = constant_int(shape.warps.count, env)
            if isinstance(value, int) and warps is not None and warps > 0 \
                    and not rule_problems(space, env):
                sizes[value] = warps * shape.lanes_n
        if len(set(sizes.values())) > 1:
            found.append((name, sizes))
    return found[0] if len(found) == 1 else None


def block_sizes(kernel: KernelAtLevel, shape: RowReduction) -> set[int]:
    """The blocks' thread counts the block's named constant allows."""
    found = _block_constant(kernel, shape)
    return set(found[1].values()) if found is not None else set()


def _block_edit(kernel: KernelAtLevel, shape: RowReduction, threads: int
                ) -> tuple[TextEdit, int]:
    """The edit that gives the block `threads` threads (the value of the block's named
    constant, as `set-constant` gives it), and the warps' count it makes."""
    found = _block_constant(kernel, shape)
    if found is None:
        raise Refused(f"threads={threads}: no one named constant with `// tune:` values "
                      f"gives the count of foreach {shape.warps.var}")
    name, sizes = found
    values = [v for v, t in sizes.items() if t == threads]
    if not values:
        raise Refused(f"threads={threads}: no value of {name} the file's rules allow "
                      f"makes a block of {threads} threads "
                      f"({', '.join(str(t) for t in sorted(set(sizes.values())))})")
    (edit,) = SetConstant().propose(kernel, {"name": name, "value": str(values[0])}).edits
    return edit, threads // shape.lanes_n


@dataclass(frozen=True)
class RowIndex:
    """The row: its declaration `int I = BI;`, the foreach over it and its bound."""

    name: str
    foreach: ast.Foreach
    bound: ast.Expr


def _candidate_loops(kernel: KernelAtLevel) -> list[ast.For]:
    """The outermost for-loops of the function's `if` blocks inside four foreach loops:
    where a reduction of the shape may stand."""
    body = kernel.source_function.body
    found = []
    for n in ast.walk(body):
        if isinstance(n, ast.If) and isinstance(n.then, ast.Block):
            foreach = [f for f in path_to(body, n) if isinstance(f, ast.Foreach)]
            if len(foreach) >= 4:
                found += [s for s in n.then.stmts if isinstance(s, ast.For)
                          and s.span is not None and kernel.in_file(s.span)][:1]
    return found


def reduction_shape(kernel: KernelAtLevel, loop: ast.For) -> RowReduction:
    path = path_to(kernel.source_function.body, loop)
    foreach = [n for n in path if isinstance(n, ast.Foreach)]
    decls = foreach[-1].body.stmts if len(foreach) >= 4 and isinstance(
        foreach[-1].body, ast.Block) else ()
    rows = [d.name for d in decls if isinstance(d, ast.Decl) and isinstance(d.init, ast.Name)
            and len(foreach) >= 4 and d.init.name == foreach[-4].var]
    if len(foreach) >= 4 and not rows:
        raise Refused(f"no `int I = {foreach[-4].var};` before the `if`: the row is not the "
                      f"variable of foreach {foreach[-4].var}")
    shape = row_reduction(kernel, loop, outer=1, kept=frozenset(rows[:1]))
    row = _row(shape)
    for each in shape.loops:
        varying = (names_in(each.cond) | names_in(each.init)) & {row.name, shape.row}
        if varying:
            raise Refused(f"the bounds of the loop over {each.var} read "
                          f"{', '.join(sorted(varying))}: the loops of the reduction go "
                          "outside the thread's elements, so they must be the same for all")
    return shape


def _row(shape: RowReduction) -> RowIndex:
    (foreach,) = shape.outer
    rows = [d.name for d in shape.indices if isinstance(d.init, ast.Name)
            and d.init.name == foreach.var]
    if not rows:
        raise Refused(f"no `int I = {foreach.var};` before the `if`: the row is not the "
                      f"variable of foreach {foreach.var}")
    if names_in(foreach.count) & shape.unit_vars:
        raise Refused(f"the count of foreach {foreach.var} reads a foreach variable")
    return RowIndex(rows[0], foreach, foreach.count)


def _names(kernel: KernelAtLevel) -> TileNames:
    taken = every_name(kernel.source_function) | {c.name for c in kernel.constants()}
    return TileNames(*fresh_names(("THREADS_I", "THREADS_J", "ELEMS_I", "ELEMS_J", "TILE_I",
                                   "TILE_J", "unit", "ui", "uj", "ei", "ej"), taken))


# Registers a thread needs besides its tile and its operands (indices, addresses, loop
# counters): ptxas gives matmul's 8 x 4 tile 57 registers, 4 x 8 60 (sm_90).
RESERVED_REGISTERS = 16


@dataclass(frozen=True)
class RegisterRule:
    """The registers a thread's tile needs (per element of the tile, per row, per
    column, and besides) against those a thread of the block may have: the register
    file of a multiprocessor over the block's threads (a block runs on one)."""

    per_element: int
    per_row: int
    per_column: int
    fixed: int
    per_thread: int
    text: str

    def needed(self, elems_i: int, elems_j: int) -> int:
        return (self.per_element * elems_i * elems_j + self.per_row * elems_i
                + self.per_column * elems_j + self.fixed)


def _register_rule(kernel: KernelAtLevel, shape: RowReduction, hoisted: list[Hoisted],
                   names: TileNames) -> RegisterRule | None:
    """The rule that keeps the tile in registers, where the description states its
    register file (a memory that is not addressable, as the occupancy analysis reads
    it); None where it states none."""
    hwd = kernel.library.get(kernel.source_function.hwd)
    files = [m.capacity for m in hwd.memories() if not m.addressable and m.capacity]
    if not files:
        return None
    registers = int(files[0]) // 4  # 32-bit registers
    threads = shape.warps_n * shape.lanes_n
    per_element = len(shape.accumulators)
    per_row = sum(1 for h in hoisted if h.kind == "i")
    per_column = sum(1 for h in hoisted if h.kind == "j")
    fixed = sum(1 for h in hoisted if h.kind == "-") + RESERVED_REGISTERS
    terms = [f"{names.elems_i} * {names.elems_j}" + (f" * {per_element}"
                                                     if per_element > 1 else "")]
    terms += [f"{names.elems_i}" + (f" * {per_row}" if per_row > 1 else "")] * (per_row > 0)
    terms += [f"{names.elems_j}" + (f" * {per_column}" if per_column > 1 else "")] \
        * (per_column > 0)
    block = f"{text_of(kernel, shape.warps.count)} * {text_of(kernel, shape.threads.count)}"
    text = f"{' + '.join(terms)} + {fixed} <= {registers} / ({block})"
    return RegisterRule(per_element, per_row, per_column, fixed, registers // threads, text)


def _constants(kernel: KernelAtLevel, shape: RowReduction, names: TileNames,
               values: tuple[int, int, int], budget: RegisterRule | None,
               more: Sequence[str] = ()) -> TextEdit:
    """The tile's named constants, before the function: the block's threads as
    THREADS_I x THREADS_J, each thread's ELEMS_I x ELEMS_J elements, the block's tile."""
    elems_i, elems_j, threads_i = values
    function = kernel.source_function
    assert function.span is not None
    threads = f"{text_of(kernel, shape.warps.count)} * {text_of(kernel, shape.threads.count)}"
    tune = ", ".join(str(v) for v in THREADS_TUNE
                     if (shape.warps_n * shape.lanes_n) % v == 0)
    lines = [
        f"// tile-2d: the block's {threads} threads as {names.threads_i} x "
        f"{names.threads_j}, each computing",
        f"// {names.elems_i} x {names.elems_j} elements: a tile of {names.tile_i} x "
        f"{names.tile_j} elements per block.",
        f"// tune: {tune}",
        f"// require: ({threads}) % {names.threads_i} == 0",
        f"const int {names.threads_i} = {threads_i};",
        f"const int {names.threads_j} = {threads} / {names.threads_i};",
        f"// tune: {ELEMS_TUNE}",
        f"const int {names.elems_i} = {elems_i};",
        f"// tune: {ELEMS_TUNE}",
        f"const int {names.elems_j} = {elems_j};",
        *(["// the tile and its operands in registers, at most the register file "
           "over the block's threads",
           f"// require: {budget.text}"] if budget is not None else []),
        f"const int {names.tile_i} = {names.threads_i} * {names.elems_i};",
        f"const int {names.tile_j} = {names.threads_j} * {names.elems_j};",
        *more,
        "",
    ]
    return TextEdit.inserting(function.span.line, 1, "\n".join(lines) + "\n")


def _row_count(kernel: KernelAtLevel, shape: RowReduction, names: TileNames) -> TextEdit:
    row = _row(shape)
    return count_edit(kernel, row.foreach, f"({text_of(kernel, row.bound)} + "
                                           f"{names.tile_i} - 1) / {names.tile_i}")


def hoisted_loads(kernel: KernelAtLevel, shape: RowReduction, row: str, names: TileNames
             ) -> list[Hoisted]:
    """The loads of the innermost body that read the row only, the column only, or
    neither (and nothing the body declares), one register each per text."""
    innermost = shape.loops[-1].body
    declared = {n.name for n in ast.walk(innermost) if isinstance(n, ast.Decl)}
    accesses = whole_accesses(innermost)
    outermost = [a for a in accesses if not any(o is not a and path_to(o, a)
                                                for o in accesses)]
    taken = every_name(kernel.source_function) | set(vars(names).values())
    found: dict[str, Hoisted] = {}
    for access in outermost:
        read = names_in(access)
        # a load under an `if` of the body stays there: its guard may keep it inside
        # the array
        guarded = any(isinstance(n, ast.If) for n in path_to(innermost, access))
        if read & declared or access.span is None or guarded:
            continue
        kind = "-" if not read & {row, shape.row} else "i" if row in read and \
            shape.row not in read else "j" if shape.row in read and row not in read else ""
        if not kind:
            continue
        text = edited_span_text(kernel.text, access.span, ())
        element = _element_type(kernel, access)
        if text in found:
            known = found[text]
            found[text] = replace(known, spans=(*known.spans, access.span))
            continue
        base = access.base
        while isinstance(base, ast.Index):
            base = base.base
        array = base.name if isinstance(base, ast.Name) else "load"
        register = fresh_name(f"r_{array}", taken)
        taken.add(register)
        found[text] = Hoisted(text, kind, register, element, (access.span,))
    return list(found.values())


def _element_type(kernel: KernelAtLevel, access: ast.Index) -> str:
    base = access.base
    while isinstance(base, ast.Index):
        base = base.base
    name = base.name if isinstance(base, ast.Name) else None
    function = kernel.source_function
    declared = [p.type for p in function.params if p.name == name]
    declared += [d.type for d in ast.walk(function.body) if isinstance(d, ast.Decl)
                 and d.name == name]
    if not declared or not isinstance(declared[0], ast.ArrayType) \
            or not isinstance(declared[0].element, ast.Prim):
        raise Refused(f"the element type of {name} is not a primitive one")
    return declared[0].element.name


class Layout(Protocol):
    """Which elements of the block's tile a thread computes, where the threads are laid
    otherwise than tile-2d's rows and columns THREADS_I and THREADS_J apart
    (mcl.refine.tile_layout): `place` declares the thread's place at `indent` (with
    `unit`, its number in the block), `offset` is the row (`kind` "i") or the column
    ("j") of its element (ei, ej) in the block's tile."""

    def place(self, indent: str) -> list[str]: ...

    def offset(self, kind: str) -> str: ...


class Operands(Protocol):
    """How the loops of the reduction load the row's and column's operands into their
    registers: `around` gives the lines that open the loops and load them (at `depth`,
    indented by `step`), the lines that close the loops, and the depth of the sums."""

    def around(self, depth: str, step: str, hoisted: list[Hoisted]
               ) -> tuple[list[str], list[str], str]: ...


def thread_body(kernel: KernelAtLevel, shape: RowReduction, row: RowIndex,
                names: TileNames, operands: Operands | None = None,
                layout: Layout | None = None) -> TextEdit:
    """The lanes' new body: the thread's place in the block (as `layout` lays the
    threads, or rows and columns THREADS_I and THREADS_J apart), a register tile per
    accumulator set to 0, the loops of the reduction with the row's and column's loads
    into registers (each iteration's from the arrays, or as `operands` loads them) and
    every element's sums, then the tail for every element."""
    text, threads, guard = kernel.text, shape.threads, shape.guard
    loops = shape.loops
    assert threads.span is not None and threads.body.span is not None
    assert guard.span is not None and guard.then.span is not None
    body_lines(text, threads.span, threads.body.span, f"foreach {threads.var}")
    then = body_lines(text, guard.span, guard.then.span, "the `if`")
    for loop in loops:
        assert loop.span is not None and loop.body.span is not None
        body_lines(text, loop.span, loop.body.span, f"the loop over {loop.var}")
    outer = indentation(text, threads.span.line)
    indent = indentation(text, guard.span.line)
    step = indent[len(outer):] if indent.startswith(outer) else ""
    if not step:
        raise Refused("the `if` is not indented inside the foreach of the threads")
    n = names
    i, j = row.name, shape.row
    hoisted = hoisted_loads(kernel, shape, i, names)
    taken = every_name(kernel.source_function) | set(vars(names).values()) \
        | {h.register for h in hoisted}
    tiles = {}
    for acc in shape.accumulators:
        tiles[acc.name] = fresh_name(f"{acc.name}_tile", taken)
        taken.add(tiles[acc.name])
    i_of, j_of = (f"int {i} = {element_index(shape, row, names, 'i', layout)};",
                  f"int {j} = {element_index(shape, row, names, 'j', layout)};")
    lanes = text_of(kernel, threads.count)

    def tile_loops(at: str, inner: list[str], guarded: str | None) -> list[str]:
        deeper = step if guarded is not None else ""
        body = [f"{at}{step * 2}{deeper}{x}" if x.strip() else "" for x in inner]
        if guarded is not None:
            body = [f"{at}{step * 2}if ({guarded}) {{", *body, f"{at}{step * 2}}}"]
        # the element's indices, where the code in the loops reads them
        reads = "\n".join(body)
        return [f"{at}for (int {n.ei} = 0; {n.ei} < {n.elems_i}; {n.ei}++) {{",
                *([f"{at}{step}{i_of}"] if re.search(rf"\b{i}\b", reads) else []),
                f"{at}{step}for (int {n.ej} = 0; {n.ej} < {n.elems_j}; {n.ej}++) {{",
                *([f"{at}{step * 2}{j_of}"] if re.search(rf"\b{j}\b", reads) else []),
                *body, f"{at}{step}}}", f"{at}}}"]

    out = layout.place(indent) if layout is not None else [
        f"{indent}// thread ({n.ui}, {n.uj}) of the block's {n.threads_i} x "
        f"{n.threads_j} computes the elements",
        f"{indent}// {i} = {row.foreach.var} * {n.tile_i} + {n.ei} * {n.threads_i} + "
        f"{n.ui}, {j} = {shape.blocks.var} * {n.tile_j} + {n.ej} * {n.threads_j} + "
        f"{n.uj}",
        f"{indent}int {n.unit} = {shape.warps.var} * {lanes} + {threads.var};",
        f"{indent}int {n.ui} = {n.unit} / {n.threads_j};",
        f"{indent}int {n.uj} = {n.unit} % {n.threads_j};"]
    for acc in shape.accumulators:
        assert isinstance(acc.type, ast.Prim)
        out.append(f"{indent}reg {acc.type.name}[{n.elems_i}][{n.elems_j}] {tiles[acc.name]};")
    for h in hoisted:
        if h.kind != "-":
            size = n.elems_i if h.kind == "i" else n.elems_j
            out.append(f"{indent}reg {h.element}[{size}] {h.register};")
    out += tile_loops(indent, [f"{tiles[a.name]}[{n.ei}][{n.ej}] = {zero_of(a.type)};"
                               for a in shape.accumulators], None)
    if operands is None:
        opened, closed, depth = _loads_per_iteration(kernel, shape, row, names, indent,
                                                     step, hoisted)
    else:
        opened, closed, depth = operands.around(indent, step, hoisted)
    out += opened
    innermost = loops[-1]
    assert innermost.body.span is not None
    edits = [TextEdit.replacing(span, h.register if h.kind == "-" else
                                f"{h.register}[{n.ei if h.kind == 'i' else n.ej}]")
             for h in hoisted for span in h.spans]
    # the adds to the accumulators, guarded ones too (unit_rows.require_sums)
    for add in ast.walk(innermost.body):
        if isinstance(add, ast.Assign) and isinstance(add.target, ast.Name) \
                and add.target.name in tiles and add.target.span is not None:
            edits.append(TextEdit.replacing(add.target.span,
                                            f"{tiles[add.target.name]}[{n.ei}][{n.ej}]"))
    edited = edited_span_text(text, innermost.body.span, edits).split("\n")[1:-1]
    body_indent = indentation(text, innermost.span.line) + step \
        if innermost.span is not None else depth
    inner = [row_text[len(body_indent):] if row_text.startswith(body_indent)
             else row_text.strip() for row_text in edited]
    rest = whole_accesses(innermost.body)
    inline = any(a.span is not None and not any(a.span in h.spans for h in hoisted)
                 and not any(path_to(o, a) for o in rest if o is not a) for a in rest)
    out += tile_loops(depth, inner, f"{i} < {text_of(kernel, row.bound)} && {j} < "
                      f"{text_of(kernel, shape.bound)}" if inline else None)
    out += closed
    first = guard.then.span.line + 1
    last_loop = loops[0].span
    assert last_loop is not None
    tail = then[last_loop.end_line - first + 1:]
    tail_indent = indent + step
    sums = [f"{a.type.name if isinstance(a.type, ast.Prim) else 'float'} {a.name} = "
            f"{tiles[a.name]}[{n.ei}][{n.ej}];" for a in shape.accumulators]
    out += tile_loops(indent, [*sums, *(x[len(tail_indent):] if x.startswith(tail_indent)
                                        else x.strip() for x in tail)],
                      f"{i} < {text_of(kernel, row.bound)} && {j} < "
                      f"{text_of(kernel, shape.bound)}")
    span = threads.body.span
    return TextEdit(span.line + 1, 1, span.end_line, 1, "\n".join(out) + "\n")


def element_index(shape: RowReduction, row: RowIndex, names: TileNames, kind: str,
                  layout: Layout | None = None) -> str:
    """The row (`kind` "i") or the column ("j") of the thread's element (ei, ej)."""
    n = names
    offset = layout.offset(kind) if layout is not None else element_offset(names, kind)
    if kind == "i":
        return f"{row.foreach.var} * {n.tile_i} + {offset}"
    return f"{shape.blocks.var} * {n.tile_j} + {offset}"


def element_offset(names: TileNames, kind: str) -> str:
    """The row (`kind` "i") or the column ("j") of the thread's element (ei, ej) in the
    block's tile: the elements of a thread lie THREADS_I rows (THREADS_J columns) apart,
    so that side by side the threads of a warp read consecutive columns."""
    n = names
    if kind == "i":
        return f"{n.ei} * {n.threads_i} + {n.ui}"
    return f"{n.ej} * {n.threads_j} + {n.uj}"


def _loads_per_iteration(kernel: KernelAtLevel, shape: RowReduction, row: RowIndex,
                         names: TileNames, indent: str, step: str, hoisted: list[Hoisted]
                         ) -> tuple[list[str], list[str], str]:
    """The loops of the reduction as written, each iteration loading the row's and the
    column's operands from the arrays into registers (0 past the edges)."""
    n, text = names, kernel.text
    i, j = row.name, shape.row
    i_of, j_of = (f"int {i} = {element_index(shape, row, names, 'i')};",
                  f"int {j} = {element_index(shape, row, names, 'j')};")
    out: list[str] = []
    depth = indent
    for loop in shape.loops:
        assert loop.span is not None
        out.append(depth + line_of(text, loop.span.line).strip())
        depth += step
    for h in hoisted:
        if h.kind == "-":
            out.append(f"{depth}{h.element} {h.register} = {h.text};")
            continue
        index, bound, of = (n.ei, text_of(kernel, row.bound), i_of) if h.kind == "i" \
            else (n.ej, text_of(kernel, shape.bound), j_of)
        size = n.elems_i if h.kind == "i" else n.elems_j
        var = i if h.kind == "i" else j
        out += [f"{depth}for (int {index} = 0; {index} < {size}; {index}++) {{",
                f"{depth}{step}{of}",
                f"{depth}{step}if ({var} < {bound}) {{",
                f"{depth}{step * 2}{h.register}[{index}] = {h.text};",
                f"{depth}{step}}} else {{",
                f"{depth}{step * 2}{h.register}[{index}] = {zero_of(h.element)};",
                f"{depth}{step}}}",
                f"{depth}}}"]
    closed = [indent + step * k + "}" for k in reversed(range(len(shape.loops)))]
    return out, closed, depth


def zero_of(t: object) -> str:
    """0 of a primitive type, as MCPL writes it."""
    name = t.name if isinstance(t, ast.Prim) else t
    return "0" if name in ("int", "byte") else "0.0"
