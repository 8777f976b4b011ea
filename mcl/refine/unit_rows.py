"""What `row-per-warp` and `tile-2d` read of a kernel: the translation of a perfect
kernel whose units compute one element each (paper Appendix A). Its last three foreach
loops are over blocks, warps and the warp's threads, which number the elements of one
dimension in order (`(b * WARPS + w) * LANES + t`, guarded by `if (ROW < BOUND)`); in the
guard stand accumulators set to 0, a loop (or a perfect nest of loops) that only adds to
them, then the statements that use them (the tail). Both refinements change which unit
computes which element and keep the loop's body and the tail as written; the
preconditions they share are shown here, once."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mcl.codegen.host_eval import Number, evaluate
from mcl.diagnostics import MclError
from mcl.mcpl import ast
from mcl.mcpl.printer import print_expr
from mcl.refine.edits import TextEdit, line_of, span_text
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.loops import loop_shape, step_of
from mcl.refine.places import constant_env, constant_int, names_in, path_to, written
from mcl.refine.refinement import Refused


@dataclass(frozen=True)
class RowReduction:
    """The parts of a guarded reduction: the foreach loops (`outer` over blocks before
    the row's, `blocks` the row's blocks, `warps`, `threads` the warp's lanes), the
    index declarations before the guard, the row and its bound, the guard, the
    accumulators and the loops of the reduction, outermost first; `warps_n` and
    `lanes_n` the constant counts."""

    outer: tuple[ast.Foreach, ...]
    blocks: ast.Foreach
    warps: ast.Foreach
    threads: ast.Foreach
    indices: tuple[ast.Decl, ...]
    row: str
    bound: ast.Expr
    guard: ast.If
    accumulators: tuple[ast.Decl, ...]
    loops: tuple[ast.For, ...]
    warps_n: int
    lanes_n: int

    @property
    def loop(self) -> ast.For:
        return self.loops[0]

    @property
    def unit_vars(self) -> set[str]:
        return {f.var for f in (*self.outer, self.blocks, self.warps, self.threads)}


def row_reduction(kernel: KernelAtLevel, loop: ast.For, outer: int = 0,
                  kept: frozenset[str] = frozenset(), data_start: bool = False
                  ) -> RowReduction:
    """The guarded reduction whose (outermost) loop is `loop`, under `outer` more foreach
    loops over blocks; `kept`: index declarations the guarded code may read besides the
    row; `data_start`: the loop may start at any expression (a CSR row's first non-zero,
    read from the data), not only a constant. `Refused` with the precondition that
    fails."""
    function = kernel.source_function
    env = constant_env(kernel.source.program.main)
    path = path_to(function.body, loop)
    foreach = [n for n in path if isinstance(n, ast.Foreach)]
    wanted = outer + 3
    if len(foreach) < wanted:
        raise Refused(f"the loop over {loop.var} is inside {len(foreach)} foreach loop(s): "
                      f"{wanted} are needed ({outer + 1} over blocks, one over warps, one "
                      "over threads)")
    *around, blocks, warps, threads = foreach[-wanted:]
    require_groups(kernel, (*around, blocks), warps, threads)
    chain = foreach[-wanted:]
    for above, below in zip(chain, chain[1:], strict=False):
        nested = [n for n in ast.walk(above.body) if isinstance(n, ast.Foreach)]
        if not nested or nested[0] is not below \
                or any(n is not below and not path_to(below, n) for n in nested):
            raise Refused(f"foreach {above.var} holds more than foreach {below.var}")
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
    decls = int_declarations(indices, threads)
    row, bound = guard_of(guard)
    if row not in {d.name for d in decls}:
        raise Refused(f"{row} of the guard is not declared before it in foreach "
                      f"{threads.var}")
    warps_n = constant_int(warps.count, env)
    lanes_n = constant_int(threads.count, env)
    assert warps_n is not None and lanes_n is not None
    require_row_numbering(decls, row, (blocks.var, warps.var, threads.var),
                          (warps_n, lanes_n), {f.var: 0 for f in around}, env)
    require_block_count(kernel, blocks, bound, warps_n * lanes_n, env)
    hidden = {f.var for f in chain} | ({d.name for d in decls if d.name != row} - kept)
    read = (names_in(guard.then) | names_in(bound)) & hidden
    if read:
        raise Refused(f"the `if` reads {', '.join(sorted(read))}: only the element's "
                      "indices may tell the units apart, as the units will compute other "
                      "elements")
    if any(isinstance(n, ast.Barrier | ast.Return) for n in ast.walk(guard)):
        raise Refused("the `if` holds a barrier or a return")
    then = guard.then
    at = next((n for n, s in enumerate(then.stmts) if s is loop), None) \
        if isinstance(then, ast.Block) else None
    if not isinstance(then, ast.Block) or at is None:
        raise Refused(f"the loop over {loop.var} is not a statement of the `if`'s block")
    accumulators = then.stmts[:at]
    if not accumulators or any(not isinstance(d, ast.Decl) or not zero(d.init)
                               or not isinstance(d.type, ast.Prim)
                               for d in accumulators):
        raise Refused(f"before the loop over {loop.var} stand statements other than "
                      "accumulators declared with the value 0")
    accs = tuple(d for d in accumulators if isinstance(d, ast.Decl))
    loops = require_sums(loop, {d.name for d in accs}, env, data_start)
    return RowReduction(tuple(around), blocks, warps, threads, decls, row, bound, guard,
                        accs, tuple(loops), warps_n, lanes_n)


def require_groups(kernel: KernelAtLevel, blocks: Sequence[ast.Foreach], warps: ast.Foreach,
                   threads: ast.Foreach) -> None:
    """The foreach loops are over the level's last three par_groups (the blocks ones all
    over the first of them), and the threads run in lock-step (a warp's lanes)."""
    hwd = kernel.library.get(kernel.source_function.hwd)
    unit = hwd.executing_unit().name
    chain = [g.name for g in hwd.group_chain(unit)]
    lanes = hwd.lockstep(unit)
    groups = [*(b.group for b in blocks), warps.group, threads.group]
    if len(chain) < 3 or groups != [chain[-3]] * len(blocks) + chain[-2:]:
        names = ", ".join(f.var for f in (*blocks, warps, threads))
        raise Refused(f"foreach {names} are over {', '.join(groups)}, not over "
                      f"{' and '.join(chain[-3:])} of {hwd.name} ({', '.join(chain)})")
    if lanes is None or lanes.name != threads.group:
        raise Refused(f"the {threads.group} of {hwd.name} do not run in lock-step: no "
                      "warp's lanes read a row together")


def int_declarations(stmts: Sequence[object], threads: ast.Foreach) -> tuple[ast.Decl, ...]:
    """The statements before the guarding `if` of foreach `threads`, which must all be
    int declarations with a value (the unit's row and column numbers)."""
    if any(not isinstance(d, ast.Decl) or d.init is None or not is_int(d.type)
           for d in stmts):
        raise Refused(f"before the `if` in foreach {threads.var} stand statements other "
                      "than int declarations")
    return tuple(d for d in stmts if isinstance(d, ast.Decl))


def is_int(t: object) -> bool:
    return isinstance(t, ast.Prim) and t.name == "int"


def zero(e: ast.Expr | None) -> bool:
    return isinstance(e, ast.IntLit | ast.FloatLit) and e.value == 0


def guard_of(guard: ast.If) -> tuple[str, ast.Expr]:
    """ROW and BOUND of `if (ROW < BOUND)`."""
    match guard.cond:
        case ast.Binary(op="<", left=ast.Name(name=row), right=bound):
            return row, bound
    raise Refused("the `if` is not `if (ROW < BOUND)`")


def require_row_numbering(decls: Sequence[ast.Decl], row: str, units: tuple[str, str, str],
                          counts: tuple[int, int], others: Mapping[str, Number],
                          env: Mapping[str, Number]) -> None:
    """ROW, its declarations substituted, is `(b * warps + w) * lanes + t` for the units
    (b, w, t): checked on a grid that determines a sum of products of degree at most the
    number of reads of the units' variables (`others`: the values the other foreach
    variables take meanwhile)."""
    b, w, t = units
    warps, lanes = counts
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
    points = max(degrees.get(row, 0), 1) + 1
    for vb in range(points):
        for vw in range(min(warps, points) if warps >= points else warps):
            for vt in range(min(lanes, points) if lanes >= points else lanes):
                values: dict[str, Number] = {**env, **others, b: vb, w: vw, t: vt}
                try:
                    for decl in decls:
                        assert decl.init is not None
                        values[decl.name] = evaluate(decl.init, values)
                except (MclError, ArithmeticError):
                    raise Refused(f"the index {row} cannot be computed from the "
                                  "constants and the units' variables") from None
                if values[row] != (vb * warps + vw) * lanes + vt:
                    raise Refused(f"{row} is not ({b} * {warps} + {w}) * {lanes} + {t}: "
                                  "the units do not number the rows one each in order")


def block_count(kernel: KernelAtLevel, blocks: ast.Foreach) -> tuple[ast.Expr, ast.Decl | None]:
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


def require_block_count(kernel: KernelAtLevel, blocks: ast.Foreach, bound: ast.Expr,
                        per_block: int, env: Mapping[str, Number]) -> None:
    """The blocks' count is `(BOUND + K - 1) / K` with K the rows of a block: every row
    below BOUND has a unit."""
    count, _ = block_count(kernel, blocks)
    match count:
        case ast.Binary(op="/", left=ast.Binary(op="-", left=ast.Binary(
                op="+", left=size, right=k1), right=ast.IntLit(value=1)), right=k2) \
                if print_expr(size) == print_expr(bound) \
                and constant_int(k1, env) == per_block == constant_int(k2, env):
            return
    raise Refused(f"the count of foreach {blocks.var} is not ({print_expr(bound)} + K - 1) "
                  f"/ K with K = {per_block}, the rows of a block: not every row below "
                  f"{print_expr(bound)} is shown to have a unit")


def require_sums(loop: ast.For, accs: set[str], env: Mapping[str, Number],
                 data_start: bool = False) -> list[ast.For]:
    """The loop and the loops perfectly nested in it, outermost first, the innermost's
    body only adding to the accumulators (`acc += e`, `e` reading none, where an `if`
    without else whose condition reads none may guard it, as a chunk's last elements
    are) besides what it declares itself; no bound or start reads an accumulator, no
    body writes a loop's variable (with `data_start`, the outermost loop may start at
    any expression). `Refused` otherwise."""
    loops = [loop]
    while True:
        body = loops[-1].body
        stmts = body.stmts if isinstance(body, ast.Block) else (body,)
        if len(stmts) == 1 and isinstance(stmts[0], ast.For):
            loops.append(stmts[0])
        else:
            break
    for each in loops:
        if data_start and each is loop and step_of(each, env) is not None:
            pass
        elif loop_shape(each, env) is None:
            raise Refused(f"the loop over {each.var} is not `for (int {each.var} = C; "
                          f"{each.var} < E; {each.var}++)` with C a constant")
        if (names_in(each.cond) | names_in(each.init)) & accs:
            raise Refused(f"the bounds of the loop over {each.var} read an accumulator")
    declared = {n.name for n in ast.walk(body) if isinstance(n, ast.Decl)}
    adds, rest = _guarded_adds(stmts, accs)
    if written(body) & {each.var for each in loops}:
        raise Refused(f"the loop's body writes "
                      f"{', '.join(sorted(written(body) & {e.var for e in loops}))}")
    others = written(body) - declared - {a.target.name for a in adds
                                         if isinstance(a.target, ast.Name)}
    if others:
        raise Refused(f"the loop over {loops[-1].var} writes {', '.join(sorted(others))}, "
                      "not only its accumulators: its iterations are not independent")
    if any(names_in(a.value) & accs for a in adds) or any(names_in(s) & accs for s in rest):
        raise Refused(f"the loop over {loops[-1].var} reads an accumulator other than to "
                      "add to it")
    return loops


def _guarded_adds(stmts: Sequence[object], accs: set[str]
                  ) -> tuple[list[ast.Assign], list[object]]:
    """The `acc += e` statements among `stmts` and in the blocks of the `if`s without
    else among them, and the other statements (an `if` that holds an add counts by its
    condition alone)."""
    adds: list[ast.Assign] = []
    rest: list[object] = []
    for s in stmts:
        if isinstance(s, ast.Assign) and s.op == "+=" and isinstance(s.target, ast.Name) \
                and s.target.name in accs:
            adds.append(s)
        elif isinstance(s, ast.If) and s.orelse is None and isinstance(s.then, ast.Block):
            inner, others = _guarded_adds(s.then.stmts, accs)
            adds += inner
            rest += [s.cond, *others]
        else:
            rest.append(s)
    return adds, rest


def text_of(kernel: KernelAtLevel, e: ast.Expr) -> str:
    """The expression as written, in brackets unless it is a name or a number."""
    assert e.span is not None
    text = span_text(kernel.text, e.span)
    if not _balanced(text):
        # the span of `(a + b) / c` starts inside its first operand's brackets
        text = print_expr(e)
    return text if re.fullmatch(r"\w+", text) else f"({text})"


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def count_edit(kernel: KernelAtLevel, blocks: ast.Foreach, count: str) -> TextEdit:
    """The blocks' count becomes `count`: in the local declaration the count reads (`int
    NAME = ...;` on one line), or in the foreach's header. (An expression's span leaves
    out its outer brackets, so the line is rewritten.)"""
    _, decl = block_count(kernel, blocks)
    holder: ast.Decl | ast.Foreach = decl if decl is not None else blocks
    if holder.span is None or not kernel.in_file(holder.span):
        raise Refused(f"the count of foreach {blocks.var} has no place in the file")
    row = line_of(kernel.text, holder.span.line)
    if decl is not None:
        pattern = rf"(\bint\s+{re.escape(decl.name)}\s*=\s*)[^;]*(;)"
    else:
        pattern = rf"(\bforeach\s*\(\s*int\s+{re.escape(blocks.var)}\s+in\s+).*" \
                  rf"(\s+{re.escape(blocks.group)}\s*\))"
    found = re.search(pattern, row)
    if found is None:
        raise Refused(f"the count of foreach {blocks.var} does not stand on one line")
    return TextEdit(holder.span.line, found.end(1) + 1, holder.span.line,
                    found.start(2) + 1, count)
