"""row-per-warp: give each row of a row reduction to a warp instead of a thread. The
lanes of the warp take every WARP-th iteration of the row's loop, so side by side they
read consecutive columns (coalesced, paper 6.4), and their partial sums are added in the
block's shared memory at the end: the lock-step analysis's `uncoalesced` suggestion on a
row-major read `a[i, j]` walked by a thread per row `i` (a `CoalesceAccess`), answered
as the paper's gpu kernels read a row with a block's threads (section 5.1) and as
kernels/gesummv/hopper_v1 does it by hand.

The kernel it rewrites is the translation of a perfect kernel with one thread per row
(paper Appendix A): a foreach over blocks, one over warps, one over the warp's threads,
the row the flat index of the thread, guarded by `if (row < BOUND)`, and in the guard
accumulators set to 0, a for-loop that only adds to them, then the statements that use
them (the tail). The rewrite keeps the loop's body and the tail as written; it changes
which unit runs which iteration, and the order in which a row's terms are added (the
lanes' partial sums, then their sum): integers are exact, floats within the reference's
error bound, as every verification compares them."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mcl.codegen.host_eval import Number, evaluate
from mcl.diagnostics import MclError
from mcl.feedback.findings import Finding, UncoalescedAccess
from mcl.mcpl import ast
from mcl.mcpl.printer import print_expr
from mcl.refine.answers import ANSWERS
from mcl.refine.edits import TextEdit, body_lines, indentation, line_of, span_text
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.loops import loop_shape
from mcl.refine.nesting import header_span
from mcl.refine.places import (
    constant_env,
    constant_int,
    every_name,
    fresh_name,
    holding_block,
    names_in,
    path_to,
    written,
)
from mcl.refine.refinement import Parameter, Proposal, Refinement, Refused, integer


@dataclass(frozen=True)
class RowReduction:
    """The parts of a row reduction the rewrite reads: the three foreach loops (blocks,
    warps, the warp's threads), the index declarations before the guard, the guard, the
    accumulators, the loop, and the shared space of a block."""

    blocks: ast.Foreach
    warps: ast.Foreach
    threads: ast.Foreach
    indices: tuple[ast.Decl, ...]
    row: str
    guard: ast.If
    accumulators: tuple[ast.Decl, ...]
    loop: ast.For
    space: str


class RowPerWarp(Refinement):
    name = "row-per-warp"
    summary = ("give each row of a row reduction to a warp: its lanes read consecutive "
               "columns and add their partial sums in shared memory")
    parameters = (
        Parameter("line", "the line of the for-loop over a row's columns"),
    )
    preconditions = (
        "the for-loop is `for (int j = C; j < E; j++)` (or `<=`), C a constant, in the "
        "kernel's own file, a statement of the block of an `if (ROW < BOUND)` with no "
        "else, which is the last statement of the innermost of three foreach loops over "
        "the level's last three par_groups (blocks, warps, threads), whose threads run in "
        "lock-step (a warp) and whose block unit declares a memory space (shared)",
        "the warps' and threads' counts are constants of the file",
        "before the `if` stand only int declarations, ROW's among them; ROW is a sum of "
        "products of constants and the three foreach variables that numbers the units "
        "one row each in order, `(b * WARPS + w) * THREADS + t`, and the blocks' count is "
        "`(BOUND + K - 1) / K` with K = WARPS * THREADS (every row below BOUND has a "
        "unit; directly or through a local declaration)",
        "in the `if` stand first the accumulators, declared with the value 0, then the "
        "loop, then the tail; the `if` reads none of the foreach variables and none of "
        "the index declarations but ROW, and holds no barrier and no return",
        "the loop's body writes only the accumulators, each with `+=` of an expression "
        "that reads no accumulator, and names it declares itself; it reads no "
        "accumulator otherwise, and E reads none",
        "the loop, the `if`'s block and the threads' foreach are laid out `... {` ... "
        "`}` with the loop's header on one line, and the warps' foreach starts its line",
    )
    answers = ANSWERS["row-per-warp"]

    def proposals(self, kernel: KernelAtLevel) -> list[Proposal | Refused]:
        made: dict[int, Proposal | Refused] = {}
        for finding in kernel.findings:
            if not isinstance(finding, UncoalescedAccess) \
                    or finding.function != kernel.function:
                continue
            try:
                loop = _loop_around(kernel, finding)
            except Refused as refused:
                made.setdefault(-1, Refused(refused.reason, _line(finding)))
                continue
            assert loop.span is not None
            line = loop.span.line
            if line in made:
                continue
            try:
                made[line] = self._propose(kernel, loop, finding)
            except Refused as refused:
                made[line] = Refused(refused.reason, line)
        # The swap of the row's units changes the whole kernel's mapping: it is offered
        # only where the time model estimates it faster (a group of one alternative,
        # mcl.refine.offers), never as a 1.00x suggestion.
        return list(made.values())

    def answer(self, kernel: KernelAtLevel, finding: Finding) -> Proposal:
        if not isinstance(finding, UncoalescedAccess):
            raise Refused(f"{self.name} answers uncoalesced findings, not {finding.code}")
        return self._propose(kernel, _loop_around(kernel, finding), finding)

    def propose(self, kernel: KernelAtLevel, args: Mapping[str, str]) -> Proposal:
        line = integer(args, "line")
        loop = next((n for n in ast.walk(kernel.source_function.body)
                     if isinstance(n, ast.For) and n.span is not None
                     and n.span.line == line and kernel.in_file(n.span)), None)
        if loop is None:
            raise Refused(f"no for-loop starts at line {line} of {kernel.path.name}")
        finding = next((f for f in kernel.findings if isinstance(f, UncoalescedAccess)
                        and f.function == kernel.function and f.access.span is not None
                        and _inside(loop, f.access.span.line)), None)
        return self._propose(kernel, loop, finding)

    def _propose(self, kernel: KernelAtLevel, loop: ast.For,
                 finding: Finding | None) -> Proposal:
        shape = _row_reduction(kernel, loop)
        assert loop.span is not None
        line = loop.span.line
        edits = (*_count_edits(kernel, shape), _shared_arrays(kernel, shape),
                 _thread_body(kernel, shape))
        return Proposal(
            self.name, (("line", str(line)),), line,
            f"warp {shape.warps.var} owns row {shape.row}: lane {shape.threads.var} takes "
            f"{loop.var} = {shape.threads.var}, {shape.threads.var} + "
            f"{_text(kernel, shape.threads.count)}, ... and the lanes' partial sums are "
            f"added in {shape.space} memory",
            edits, finding, group=f"{self.name}:line={line}")

    def still_there(self, proposal: Proposal, findings: Sequence[Finding]) -> Finding | None:
        answered = proposal.answers
        if not isinstance(answered, UncoalescedAccess) or answered.access.span is None:
            return None
        where = answered.access.span
        return next((f for f in findings if isinstance(f, UncoalescedAccess)
                     and f.access.span is not None and f.access.span.line == where.line
                     and f.access.span.column == where.column), None)


def _line(finding: Finding) -> int | None:
    return finding.span.line if finding.span is not None else None


def _inside(loop: ast.For, line: int) -> bool:
    return loop.span is not None and loop.span.line < line <= loop.span.end_line


def _loop_around(kernel: KernelAtLevel, finding: UncoalescedAccess) -> ast.For:
    """The innermost for-loop of the kernel's file around the finding's access."""
    span = finding.access.span
    if span is None or not kernel.in_file(span):
        raise Refused("the finding names no access of the kernel's own file")
    loops = [n for n in ast.walk(kernel.source_function.body) if isinstance(n, ast.For)
             and _inside(n, span.line)]
    if not loops:
        raise Refused(f"the access at line {span.line} is in no for-loop: there is no row "
                      "loop to share among a warp's lanes")
    return min(loops, key=lambda n: n.span.end_line - n.span.line if n.span else 0)


def _row_reduction(kernel: KernelAtLevel, loop: ast.For) -> RowReduction:
    """The loop's row reduction, or `Refused` with the precondition that fails."""
    function = kernel.source_function
    env = constant_env(kernel.source.program.main)
    path = path_to(function.body, loop)
    foreach = [n for n in path if isinstance(n, ast.Foreach)]
    if len(foreach) < 3:
        raise Refused(f"the loop over {loop.var} is inside {len(foreach)} foreach loop(s): "
                      "a foreach over blocks, one over warps and one over threads are needed")
    blocks, warps, threads = foreach[-3:]
    _require_groups(kernel, blocks, warps, threads)
    space = _block_space(kernel, blocks.group)
    for outer, inner in ((blocks, warps), (warps, threads)):
        nested = [n for n in ast.walk(outer.body) if isinstance(n, ast.Foreach)]
        if not nested or nested[0] is not inner \
                or any(n is not inner and not path_to(inner, n) for n in nested):
            raise Refused(f"foreach {outer.var} holds more than foreach {inner.var}")
    for counted in (warps, threads):
        if constant_int(counted.count, env) is None:
            raise Refused(f"the count of foreach {counted.var} is not a constant of the file")
    body = threads.body
    if not isinstance(body, ast.Block) or not body.stmts:
        raise Refused(f"the body of foreach {threads.var} is not a block")
    *indices, guard = body.stmts
    if not isinstance(guard, ast.If) or guard.orelse is not None \
            or not any(n is guard for n in path):
        raise Refused(f"the loop over {loop.var} is not under an `if` without else that "
                      f"ends the body of foreach {threads.var}")
    if any(not isinstance(d, ast.Decl) or d.init is None or not _is_int(d.type)
           for d in indices):
        raise Refused(f"before the `if` in foreach {threads.var} stand statements other "
                      "than int declarations")
    decls = tuple(d for d in indices if isinstance(d, ast.Decl))
    row, bound = _guard(guard)
    if row not in {d.name for d in decls}:
        raise Refused(f"{row} of the guard is not declared before it in foreach "
                      f"{threads.var}")
    warps_n = constant_int(warps.count, env)
    threads_n = constant_int(threads.count, env)
    assert warps_n is not None and threads_n is not None
    _require_row_numbering(decls, row, blocks.var, warps.var, threads.var, warps_n,
                           threads_n, env)
    _require_block_count(kernel, blocks, bound, warps_n * threads_n, env)
    hidden = {blocks.var, warps.var, threads.var} | {d.name for d in decls if d.name != row}
    if names_in(guard.then) & hidden or names_in(bound) & hidden:
        raise Refused("the `if` reads " + ", ".join(sorted((names_in(guard.then)
                                                              | names_in(bound)) & hidden))
                      + ": only the row may tell the units apart, as each lane will run "
                        "other iterations and only the first lane the tail")
    if any(isinstance(n, ast.Barrier | ast.Return) for n in ast.walk(guard)):
        raise Refused("the `if` holds a barrier or a return")
    then = guard.then
    at = next((n for n, s in enumerate(then.stmts) if s is loop), None) \
        if isinstance(then, ast.Block) else None
    if not isinstance(then, ast.Block) or at is None:
        raise Refused(f"the loop over {loop.var} is not a statement of the `if`'s block")
    accumulators = then.stmts[:at]
    if not accumulators or any(not isinstance(d, ast.Decl) or not _zero(d.init)
                               or not isinstance(d.type, ast.Prim)
                               for d in accumulators):
        raise Refused(f"before the loop over {loop.var} stand statements other than "
                      "accumulators declared with the value 0")
    accs = tuple(d for d in accumulators if isinstance(d, ast.Decl))
    _require_sums(loop, {d.name for d in accs}, env)
    return RowReduction(blocks, warps, threads, decls, row, guard, accs, loop, space)


def _require_groups(kernel: KernelAtLevel, blocks: ast.Foreach, warps: ast.Foreach,
                    threads: ast.Foreach) -> None:
    hwd = kernel.library.get(kernel.source_function.hwd)
    unit = hwd.executing_unit().name
    chain = [g.name for g in hwd.group_chain(unit)]
    lanes = hwd.lockstep(unit)
    if len(chain) < 3 or [blocks.group, warps.group, threads.group] != chain[-3:]:
        raise Refused(f"foreach {blocks.var}, {warps.var}, {threads.var} are over "
                      f"{blocks.group}, {warps.group}, {threads.group}, not the last three "
                      f"par_groups of {hwd.name} ({', '.join(chain)})")
    if lanes is None or lanes.name != threads.group:
        raise Refused(f"the {threads.group} of {hwd.name} do not run in lock-step: no "
                      "warp's lanes read a row together")


def _block_space(kernel: KernelAtLevel, group: str) -> str:
    """The writable memory space a unit of `group` (a block) declares: where its
    threads add their partial sums."""
    hwd = kernel.library.get(kernel.source_function.hwd)
    found = hwd.par_group(group)
    spaces = [s.name for s in (found.unit.spaces if found and found.unit else ())
              if not s.read_only]
    if not spaces:
        raise Refused(f"a unit of {group} of {hwd.name} declares no writable memory "
                      "space for the lanes' partial sums")
    return spaces[0]


def _is_int(t: object) -> bool:
    return isinstance(t, ast.Prim) and t.name == "int"


def _zero(e: ast.Expr | None) -> bool:
    return isinstance(e, ast.IntLit | ast.FloatLit) and e.value == 0


def _guard(guard: ast.If) -> tuple[str, ast.Expr]:
    match guard.cond:
        case ast.Binary(op="<", left=ast.Name(name=row), right=bound):
            return row, bound
    raise Refused("the `if` is not `if (ROW < BOUND)`")


def _require_row_numbering(decls: Sequence[ast.Decl], row: str, b: str, w: str, t: str,
                           warps: int, threads: int, env: Mapping[str, Number]) -> None:
    """ROW, its declarations substituted, is `(b * warps + w) * threads + t`: checked
    on a grid that determines a sum of products in which each variable occurs at most
    as often as it is read (a polynomial of that degree in it)."""
    # the degree of each declaration in the units' variables: each read of one counts
    # 1, each read of an earlier declaration its degree
    degrees: dict[str, int] = {b: 1, w: 1, t: 1}
    for decl in decls:
        for n in ast.walk(decl.init):
            if isinstance(n, ast.Binary) and n.op not in ("+", "*"):
                raise Refused(f"the index {decl.name} is computed with {n.op}: only a sum "
                              "of products of the units' variables is shown to number "
                              "the rows in order")
            if not isinstance(n, ast.Binary | ast.Name | ast.IntLit):
                raise Refused(f"the index {decl.name} reads a {type(n).__name__}: only a "
                              "sum of products of the units' variables and constants is "
                              "shown to number the rows in order")
        degrees[decl.name] = sum(degrees.get(n.name, 0) for n in ast.walk(decl.init)
                                 if isinstance(n, ast.Name))
    degree = max(degrees.get(row, 0), 1)
    grid_b = range(degree + 1)
    grid_w = range(min(warps, degree + 1))
    grid_t = range(min(threads, degree + 1))
    if warps < degree + 1 or threads < degree + 1:
        grid_w, grid_t = range(warps), range(threads)
    for vb in grid_b:
        for vw in grid_w:
            for vt in grid_t:
                values: dict[str, Number] = {**env, b: vb, w: vw, t: vt}
                try:
                    for decl in decls:
                        assert decl.init is not None
                        values[decl.name] = evaluate(decl.init, values)
                except (MclError, ArithmeticError):
                    raise Refused(f"the index {row} cannot be computed from the "
                                  "constants and the units' variables") from None
                if values[row] != (vb * warps + vw) * threads + vt:
                    raise Refused(f"{row} is not ({b} * {warps} + {w}) * {threads} + {t}: "
                                  "the units do not number the rows one each in order")


def _block_count(kernel: KernelAtLevel, blocks: ast.Foreach) -> tuple[ast.Expr, ast.Decl | None]:
    """The blocks' count, through a local declaration it names (returned too, where
    only the count reads it and nothing writes it)."""
    count = blocks.count
    if not isinstance(count, ast.Name):
        return count, None
    function = kernel.source_function
    decl = next((s for s in function.body.stmts if isinstance(s, ast.Decl)
                 and s.name == count.name), None) if isinstance(function.body, ast.Block) \
        else None
    if decl is None or decl.init is None:
        return count, None
    reads = [n for n in ast.walk(function.body) if isinstance(n, ast.Name)
             and n.name == count.name]
    if count.name in written(blocks) or len(reads) != 1:
        return decl.init, None
    return decl.init, decl


def _require_block_count(kernel: KernelAtLevel, blocks: ast.Foreach, bound: ast.Expr,
                         per_block: int, env: Mapping[str, Number]) -> None:
    count, _ = _block_count(kernel, blocks)
    match count:
        case ast.Binary(op="/", left=ast.Binary(op="-", left=ast.Binary(
                op="+", left=size, right=k1), right=ast.IntLit(value=1)), right=k2) \
                if print_expr(size) == print_expr(bound) \
                and constant_int(k1, env) == per_block == constant_int(k2, env):
            return
    raise Refused(f"the count of foreach {blocks.var} is not ({print_expr(bound)} + K - 1) "
                  f"/ K with K = {per_block}, the rows of a block: not every row below "
                  f"{print_expr(bound)} is shown to have a unit")


def _require_sums(loop: ast.For, accs: set[str], env: Mapping[str, Number]) -> None:
    shape = loop_shape(loop, env)
    if shape is None or shape.step != 1:
        raise Refused(f"the loop over {loop.var} is not `for (int {loop.var} = C; "
                      f"{loop.var} < E; {loop.var}++)` with C a constant")
    if names_in(shape.bound) & accs:
        raise Refused(f"the bound of the loop over {loop.var} reads an accumulator")
    body = loop.body
    stmts = body.stmts if isinstance(body, ast.Block) else (body,)
    declared = {n.name for n in ast.walk(body) if isinstance(n, ast.Decl)}
    adds = [s for s in stmts if isinstance(s, ast.Assign) and s.op == "+="
            and isinstance(s.target, ast.Name) and s.target.name in accs]
    if loop.var in written(body):
        raise Refused(f"the loop's body writes {loop.var}")
    others = written(body) - declared - {a.target.name for a in adds
                                         if isinstance(a.target, ast.Name)}
    if others:
        raise Refused(f"the loop over {loop.var} writes {', '.join(sorted(others))}, "
                      "not only its accumulators: its iterations are not independent")
    rest = [s for s in stmts if not any(s is a for a in adds)]
    if any(names_in(a.value) & accs for a in adds) or any(names_in(s) & accs for s in rest):
        raise Refused(f"the loop over {loop.var} reads an accumulator other than to add "
                      "to it")


def _text(kernel: KernelAtLevel, e: ast.Expr) -> str:
    assert e.span is not None
    text = span_text(kernel.text, e.span)
    return text if re.fullmatch(r"\w+", text) else f"({text})"


def _count_edits(kernel: KernelAtLevel, shape: RowReduction) -> tuple[TextEdit, ...]:
    """The blocks' count becomes one block per WARPS rows: in the local declaration the
    count reads (`int NAME = ...;` on one line), or in the foreach's header. (An
    expression's span leaves out its outer brackets, so the line is rewritten.)"""
    _, decl = _block_count(kernel, shape.blocks)
    _, bound = _guard(shape.guard)
    warps = _text(kernel, shape.warps.count)
    count = f"({_text(kernel, bound)} + {warps} - 1) / {warps}"
    holder: ast.Decl | ast.Foreach = decl if decl is not None else shape.blocks
    if holder.span is None or not kernel.in_file(holder.span):
        raise Refused(f"the count of foreach {shape.blocks.var} has no place in the file")
    row = line_of(kernel.text, holder.span.line)
    if decl is not None:
        pattern = rf"(\bint\s+{re.escape(decl.name)}\s*=\s*)[^;]*(;)"
    else:
        pattern = rf"(\bforeach\s*\(\s*int\s+{re.escape(shape.blocks.var)}\s+in\s+).*" \
                  rf"(\s+{re.escape(shape.blocks.group)}\s*\))"
    found = re.search(pattern, row)
    if found is None:
        raise Refused(f"the count of foreach {shape.blocks.var} does not stand on one line")
    return (TextEdit(holder.span.line, found.end(1) + 1, holder.span.line,
                     found.start(2) + 1, count),)


def _shared_arrays(kernel: KernelAtLevel, shape: RowReduction) -> TextEdit:
    """An array of the lanes' partial sums per accumulator, declared before the warps."""
    warps = shape.warps
    assert warps.span is not None
    indent = indentation(kernel.text, warps.span.line)
    if warps.span.column != len(indent) + 1:
        raise Refused(f"foreach {warps.var} does not start its line")
    lines = [f"{indent}// the partial sums of each warp's lanes, added by its first lane"]
    for acc in shape.accumulators:
        assert isinstance(acc.type, ast.Prim)
        lines.append(f"{indent}{shape.space} {acc.type.name}"
                     f"[{_text(kernel, warps.count)}][{_text(kernel, shape.threads.count)}] "
                     f"{_parts(kernel, acc.name)};")
    return TextEdit.inserting(warps.span.line, 1, "\n".join(lines) + "\n")


def _parts(kernel: KernelAtLevel, acc: str) -> str:
    return fresh_name(f"{acc}_parts", every_name(kernel.source_function))


def _thread_body(kernel: KernelAtLevel, shape: RowReduction) -> TextEdit:
    """The threads' new body: the row of the warp, the accumulators, the loop with the
    lane's iterations under the guard, the partial sums stored, a barrier, and the first
    lane adding them before the tail, all of the loop and the tail as written."""
    text, threads, guard, loop = kernel.text, shape.threads, shape.guard, shape.loop
    assert threads.span is not None and threads.body.span is not None
    assert guard.span is not None and guard.then.span is not None and loop.span is not None
    body_lines(text, threads.span, threads.body.span, f"foreach {threads.var}")
    then = body_lines(text, guard.span, guard.then.span, "the `if`")
    assert loop.body.span is not None
    body_lines(text, loop.span, loop.body.span, f"the loop over {loop.var}")
    outer = indentation(text, threads.span.line)
    indent = indentation(text, guard.span.line)
    step = indent[len(outer):] if indent.startswith(outer) else ""
    if not step or holding_block(kernel.source_function, guard) is None:
        raise Refused("the `if` is not indented inside the foreach of the threads")
    first = guard.then.span.line + 1
    declarations = then[:loop.span.line - first]
    tail = then[loop.span.end_line - first + 1:]
    lanes, warp, lane = _text(kernel, threads.count), shape.warps.var, threads.var
    taken = every_name(kernel.source_function)
    other = fresh_name("u", taken)
    cond = span_text(text, guard.cond.span) if guard.cond.span else print_expr(guard.cond)
    out = [f"{indent}// warp {warp} owns row {shape.row}: lane {lane} takes {loop.var} = "
           f"{lane}, {lane} + {lanes}, ...,",
           f"{indent}// so that the lanes side by side read consecutive columns",
           f"{indent}int {shape.row} = {shape.blocks.var} * "
           f"{_text(kernel, shape.warps.count)} + {warp};"]
    out += [row[len(step):] if row.startswith(indent + step) else row for row in declarations]
    out.append(f"{indent}if ({cond}) {{")
    out += _lane_loop(kernel, loop, lane, lanes)
    out.append(f"{indent}}}")
    out += [f"{indent}{_parts(kernel, a.name)}[{warp}][{lane}] = {a.name};"
            for a in shape.accumulators]
    out.append(f"{indent}barrier({shape.space});")
    out.append(f"{indent}if ({lane} == 0 && {cond}) {{")
    out.append(f"{indent}{step}for (int {other} = 1; {other} < {lanes}; {other}++) {{")
    out += [f"{indent}{step * 2}{a.name} += {_parts(kernel, a.name)}[{warp}][{other}];"
            for a in shape.accumulators]
    out.append(f"{indent}{step}}}")
    out += tail
    out.append(f"{indent}}}")
    span = threads.body.span
    return TextEdit(span.line + 1, 1, span.end_line, 1, "\n".join(out) + "\n")


def _lane_loop(kernel: KernelAtLevel, loop: ast.For, lane: str, lanes: str) -> list[str]:
    """The loop as written, its header starting at the lane's first iteration and
    stepping over the warp's lanes."""
    assert loop.span is not None and isinstance(loop.init, ast.Decl)
    head = header_span(kernel, loop)
    first = line_of(kernel.text, loop.span.line)
    start = loop.init.init
    assert start is not None and loop.cond.span is not None
    begin = lane if _zero(start) else f"{print_expr(start)} + {lane}"
    header = (f"for (int {loop.var} = {begin}; {span_text(kernel.text, loop.cond.span)}; "
              f"{loop.var} += {lanes})")
    lines = kernel.text.split("\n")[loop.span.line - 1:loop.span.end_line]
    lines[0] = first[:head.column - 1] + header + first[head.end_column - 1:]
    return lines
