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

from collections.abc import Mapping, Sequence

from mcl.feedback.findings import Finding, UncoalescedAccess, WarpAccessUnknown
from mcl.mcpl import ast
from mcl.mcpl.printer import print_expr
from mcl.refine.answers import ANSWERS
from mcl.refine.edits import TextEdit, body_lines, indentation, line_of, span_text
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.loops import loop_shape, step_of
from mcl.refine.nesting import header_span
from mcl.refine.places import constant_env, every_name, fresh_name, holding_block
from mcl.refine.refinement import (
    Parameter,
    Proposal,
    Refinement,
    Refused,
    block_space,
    for_loop_at,
    integer,
    uncoalesced_still_there,
)
from mcl.refine.unit_rows import (
    RowReduction,
    count_edit,
    row_reduction,
    text_of,
    zero,
)

# The lanes that share a row, weighed where the data give a row's length (_data_rows):
# the powers of two that divide a warp of 32, as kernels/spmv/gpu_v2's GROUP is tuned.
LANE_CHOICES = (4, 8, 16, 32)


class RowPerWarp(Refinement):
    name = "row-per-warp"
    summary = ("give each row of a row reduction to a warp: its lanes read consecutive "
               "columns and add their partial sums in shared memory")
    parameters = (
        Parameter("line", "the line of the for-loop over a row's columns"),
        Parameter("lanes", "the lanes that share a row, a divisor of the warp's (default: "
                  "the whole warp); a warp then takes warp / lanes neighbouring rows",
                  optional=True),
    )
    preconditions = (
        "the for-loop is `for (int j = S; j < E; j++)` (or `<=`) in the kernel's own file, "
        "S a constant or (a row whose start the data give, as a CSR row's) any expression "
        "reading neither an accumulator nor a unit's variable, a statement of the block "
        "of an `if (ROW < BOUND)` with no else, which is the last statement of the "
        "innermost of three foreach loops over the level's last three par_groups (blocks, "
        "warps, threads), whose threads run in lock-step (a warp) and whose block unit "
        "declares a memory space (shared)",
        "with `lanes`: it divides the warp's threads; without it, where S is not a "
        "constant (the row's length is data, the model states no time for it), each of "
        "4, 8, 16 and 32 lanes is an alternative, weighed by the model where it has a "
        "time and timed by a search that measures otherwise",
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
        rows = _data_rows(self, kernel)
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
        return list(made.values()) + [p for line, each in rows.items() if line not in made
                                      for p in each]

    def answer(self, kernel: KernelAtLevel, finding: Finding) -> Proposal:
        if not isinstance(finding, UncoalescedAccess):
            raise Refused(f"{self.name} answers uncoalesced findings, not {finding.code}")
        return self._propose(kernel, _loop_around(kernel, finding), finding)

    def propose(self, kernel: KernelAtLevel, args: Mapping[str, str]) -> Proposal:
        line = integer(args, "line")
        loop = for_loop_at(kernel, line)
        finding = next((f for f in kernel.findings if isinstance(f, UncoalescedAccess)
                        and f.function == kernel.function and f.access.span is not None
                        and _inside(loop, f.access.span.line)), None)
        lanes = integer(args, "lanes") if "lanes" in args else None
        return self._propose(kernel, loop, finding, lanes)

    def _propose(self, kernel: KernelAtLevel, loop: ast.For,
                 finding: Finding | None, lanes: int | None = None) -> Proposal:
        shape = row_reduction(kernel, loop, data_start=True)
        if step_of(loop, constant_env(kernel.source.program.main)) != 1:
            raise Refused(f"the loop over {loop.var} does not step by 1: its iterations "
                          "cannot be dealt to the lanes in turn")
        group = shape.lanes_n if lanes is None else lanes
        if group < 1 or shape.lanes_n % group:
            raise Refused(f"lanes={group} does not divide the {shape.lanes_n} lanes of a "
                          "warp: a warp would not take whole rows")
        space = block_space(kernel, shape.blocks.group, "the lanes' partial sums")
        assert loop.span is not None
        line = loop.span.line
        rows = _rows_of_block(kernel, shape, group)
        edits = (count_edit(kernel, shape.blocks, f"({text_of(kernel, shape.bound)} + "
                            f"{rows} - 1) / {_bracketed(rows)}"),
                 _shared_arrays(kernel, shape, space),
                 _thread_body(kernel, shape, space, group))
        t = shape.threads.var
        if group == shape.lanes_n:
            args: tuple[tuple[str, str], ...] = (("line", str(line)),)
            owner = f"warp {shape.warps.var} owns row {shape.row}: lane {t} takes"
            lane, step = t, text_of(kernel, shape.threads.count)
        else:
            args = (("line", str(line)), ("lanes", str(group)))
            owner = (f"{group} lanes of warp {shape.warps.var} own row {shape.row}: lane "
                     f"{t} takes")
            lane, step = f"{t} % {group}", str(group)
        return Proposal(
            self.name, args, line,
            f"{owner} {loop.var} = {lane}, {lane} + {step}, ... and the lanes' partial sums "
            f"are added in {space} memory",
            edits, finding, group=f"{self.name}:line={line}")

    def still_there(self, proposal: Proposal, findings: Sequence[Finding]) -> Finding | None:
        return uncoalesced_still_there(proposal, findings)


def _data_rows(refinement: RowPerWarp, kernel: KernelAtLevel
               ) -> dict[int, list[Proposal | Refused]]:
    """The rows whose start the data give (a CSR row, `for (k = rowptr[i]; k <
    rowptr[i + 1]; k++)`), found by the lock-step analysis's `warp-access-unknown` on
    their loads: a proposal per count of lanes in LANE_CHOICES for each such loop. The
    analysis cannot tell such a row's length, so it cannot tell whether a whole warp or
    a few lanes suit it (a warp idles most lanes on a row of 20 non-zeros, paper section
    7's spmv): the counts are alternatives of one group, weighed by the model where it
    states a time and by the device where it does not (mcl.refine.offers)."""
    env = constant_env(kernel.source.program.main)
    out: dict[int, list[Proposal | Refused]] = {}
    for finding in kernel.findings:
        if not isinstance(finding, WarpAccessUnknown) or finding.function != kernel.function:
            continue
        try:
            loop = _loop_around(kernel, finding)
        except Refused:
            continue
        assert loop.span is not None
        line = loop.span.line
        if line in out or loop_shape(loop, env) is not None:
            continue  # a row of constant start: its loads are examined (`uncoalesced`)
        made: list[Proposal | Refused] = []
        for lanes in LANE_CHOICES:
            try:
                made.append(refinement._propose(kernel, loop, None, lanes))
            except Refused as refused:
                made.append(Refused(refused.reason, line))
                break
        out[line] = made
    return out


def _rows_of_block(kernel: KernelAtLevel, shape: RowReduction, group: int) -> str:
    """The rows a block takes: a row per warp, or warp / group rows per warp."""
    warps = text_of(kernel, shape.warps.count)
    if group == shape.lanes_n:
        return warps
    return f"{warps} * ({text_of(kernel, shape.threads.count)} / {group})"


def _bracketed(text: str) -> str:
    return text if text.isidentifier() or text.isdigit() else f"({text})"


def _line(finding: Finding) -> int | None:
    return finding.span.line if finding.span is not None else None


def _inside(loop: ast.For, line: int) -> bool:
    return loop.span is not None and loop.span.line < line <= loop.span.end_line


def _loop_around(kernel: KernelAtLevel, finding: UncoalescedAccess | WarpAccessUnknown
                 ) -> ast.For:
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


def _shared_arrays(kernel: KernelAtLevel, shape: RowReduction, space: str) -> TextEdit:
    """An array of the lanes' partial sums per accumulator, declared before the warps."""
    warps = shape.warps
    assert warps.span is not None
    indent = indentation(kernel.text, warps.span.line)
    if warps.span.column != len(indent) + 1:
        raise Refused(f"foreach {warps.var} does not start its line")
    lines = [f"{indent}// the partial sums of each warp's lanes, added by its first lane"]
    for acc in shape.accumulators:
        assert isinstance(acc.type, ast.Prim)
        lines.append(f"{indent}{space} {acc.type.name}"
                     f"[{text_of(kernel, warps.count)}][{text_of(kernel, shape.threads.count)}] "
                     f"{_parts(kernel, acc.name)};")
    return TextEdit.inserting(warps.span.line, 1, "\n".join(lines) + "\n")


def _parts(kernel: KernelAtLevel, acc: str) -> str:
    return fresh_name(f"{acc}_parts", every_name(kernel.source_function))


def _thread_body(kernel: KernelAtLevel, shape: RowReduction, space: str,
                 group: int) -> TextEdit:
    """The threads' new body: the row of the warp (of the lane's `group` of lanes), the
    accumulators, the loop with the lane's iterations under the guard, the partial sums
    stored, a barrier, and the first lane of the group adding them before the tail, all
    of the loop and the tail as written."""
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
    lanes, warp, lane = text_of(kernel, threads.count), shape.warps.var, threads.var
    taken = every_name(kernel.source_function)
    other = fresh_name("u", taken)
    cond = span_text(text, guard.cond.span) if guard.cond.span else print_expr(guard.cond)
    warp_row = f"{shape.blocks.var} * {text_of(kernel, shape.warps.count)} + {warp}"
    if group == shape.lanes_n:
        out = [f"{indent}// warp {warp} owns row {shape.row}: lane {lane} takes {loop.var} = "
               f"{lane}, {lane} + {lanes}, ...,",
               f"{indent}// so that the lanes side by side read consecutive columns",
               f"{indent}int {shape.row} = {warp_row};"]
        mine, leader, parts_at = lane, f"{lane} == 0", other
    else:
        mine = f"{lane} % {group}"
        out = [f"{indent}// warp {warp} takes {lanes} / {group} rows, {group} lanes each: "
               f"lane {mine} of a group",
               f"{indent}// takes {loop.var} = {mine}, {mine} + {group}, ..., so that the "
               "lanes side by side read",
               f"{indent}// neighbouring elements, and a short row idles few lanes",
               f"{indent}int {shape.row} = ({warp_row}) * ({lanes} / {group}) + "
               f"{lane} / {group};"]
        leader, parts_at = f"{mine} == 0", f"{lane} + {other}"
    out += [row[len(step):] if row.startswith(indent + step) else row for row in declarations]
    out.append(f"{indent}if ({cond}) {{")
    out += _lane_loop(kernel, loop, mine, lanes if group == shape.lanes_n else str(group))
    out.append(f"{indent}}}")
    out += [f"{indent}{_parts(kernel, a.name)}[{warp}][{lane}] = {a.name};"
            for a in shape.accumulators]
    out.append(f"{indent}barrier({space});")
    out.append(f"{indent}if ({leader} && {cond}) {{")
    count = lanes if group == shape.lanes_n else str(group)
    out.append(f"{indent}{step}for (int {other} = 1; {other} < {count}; {other}++) {{")
    out += [f"{indent}{step * 2}{a.name} += {_parts(kernel, a.name)}[{warp}][{parts_at}];"
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
    begin = lane if zero(start) else f"{print_expr(start)} + {lane}"
    header = (f"for (int {loop.var} = {begin}; {span_text(kernel.text, loop.cond.span)}; "
              f"{loop.var} += {lanes})")
    lines = kernel.text.split("\n")[loop.span.line - 1:loop.span.end_line]
    lines[0] = first[:head.column - 1] + header + first[head.end_column - 1:]
    return lines
