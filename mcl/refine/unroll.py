"""unroll: repeat the body of a for-loop with a constant trip count `factor` times per
iteration, each copy a block that declares the loop variable with its value (so the body
is copied as written, comments and all); iterations that the factor does not divide
follow the loop as copies of their own. A factor equal to the trip count replaces the
loop by its copies."""

from __future__ import annotations

from collections.abc import Mapping

from mcl.mcpl import ast
from mcl.refine.edits import TextEdit, body_lines, indentation, span_text
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.loops import LoopShape, loop_shape
from mcl.refine.places import constant_env, every_name, fresh_name, holding_block, written
from mcl.refine.refinement import (
    Parameter,
    Proposal,
    Refinement,
    Refused,
    for_loop_at,
    integer,
)

# Proposed: innermost loops of at most this many trips (a longer body is no gain).
MAX_LISTED_TRIPS = 16


class Unroll(Refinement):
    name = "unroll"
    summary = "unroll a for-loop with a constant trip count by a factor"
    parameters = (
        Parameter("line", "the line of the for-loop"),
        Parameter("factor", "copies of the body per iteration, 2 up to the trip count; "
                  "one that does not divide it leaves the rest as copies after the loop"),
    )
    # The time model has no term for a loop's overhead: what it would estimate for an
    # unrolled loop is the registers its copies declare, not the change (a search over
    # refinements measures it instead).
    listed = False
    preconditions = (
        "the loop is `for (int v = A; v < B; v++)` (`<=`, or `v += C`) with A, B and C "
        "constants of the file: its trip count is a constant",
        "the body does not write the loop variable",
        "the loop is a statement of a block, starts its line, and its body is a block "
        "`{` at the end of the loop's first line, `}` alone on the last",
    )

    def proposals(self, kernel: KernelAtLevel) -> list[Proposal | Refused]:
        env = constant_env(kernel.source.program.main)
        out: list[Proposal | Refused] = []
        for loop in ast.walk(kernel.source_function.body):
            if not isinstance(loop, ast.For) or loop.span is None \
                    or any(isinstance(n, ast.For) for n in ast.walk(loop.body)):
                continue
            shape = loop_shape(loop, env)
            trips = shape.trips(env) if shape is not None else None
            if trips is None or not 2 <= trips <= MAX_LISTED_TRIPS:
                continue
            factor = next(f for f in (trips, 4, 2) if f <= 4 and (trips % f == 0 or f == 2))
            try:
                out.append(self.propose(kernel, {"line": str(loop.span.line),
                                                 "factor": str(factor)}))
            except Refused as refused:
                out.append(Refused(refused.reason, loop.span.line))
        return out

    def propose(self, kernel: KernelAtLevel, args: Mapping[str, str]) -> Proposal:
        line = integer(args, "line")
        function = kernel.source_function
        loop = for_loop_at(kernel, line)
        assert loop.span is not None  # for_loop_at finds a loop by its span
        env = constant_env(kernel.source.program.main)
        shape = loop_shape(loop, env)
        trips = shape.trips(env) if shape is not None else None
        if shape is None or trips is None:
            raise Refused(f"for-loop {loop.var} has no constant trip count")
        factor = integer(args, "factor", 2)
        if not 2 <= factor <= trips:
            raise Refused(f"factor={factor}: between 2 and the trip count {trips}")
        if loop.var in written(loop.body):
            raise Refused(f"the body of for-loop {loop.var} writes {loop.var}")
        if holding_block(function, loop) is None:
            raise Refused(f"for-loop {loop.var} is not a statement of a block")
        body = _body_lines(kernel, loop)
        base = fresh_name(f"{loop.var}0", every_name(function))
        text = _unrolled(kernel, loop, shape, trips, factor, body, base)
        rest = trips % factor
        how = ("replaced by its copies" if factor == trips else
               f"{factor} copies per iteration" + (f", {rest} after the loop" if rest else ""))
        return Proposal(self.name, (("line", str(line)), ("factor", str(factor))), line,
                        f"unroll for-loop {loop.var} ({trips} trips): {how}",
                        (TextEdit.replacing(loop.span, text),))


def _body_lines(kernel: KernelAtLevel, loop: ast.For) -> list[str]:
    """The lines between the body's braces, as written."""
    assert loop.span is not None
    if not isinstance(loop.body, ast.Block) or loop.body.span is None:
        raise Refused(f"for-loop {loop.var} is not laid out as `for (...) {{` ... `}}`")
    return body_lines(kernel.text, loop.span, loop.body.span, f"for-loop {loop.var}")


def _copy(indent: str, var: str, value: str, body: list[str], extra: str) -> list[str]:
    """One copy of the body: a block that declares the loop variable."""
    lines = [f"{indent}{{", f"{indent}  int {var} = {value};"]
    lines += [(extra + x) if x.strip() else x for x in body]
    return [*lines, f"{indent}}}"]


def _unrolled(kernel: KernelAtLevel, loop: ast.For, shape: LoopShape, trips: int,
              factor: int, body: list[str], base: str) -> str:
    assert loop.span is not None and isinstance(loop.init, ast.Decl)
    indent = indentation(kernel.text, loop.span.line)
    var, step = shape.var, shape.step
    main = trips - trips % factor
    lines: list[str] = []
    if factor < trips:
        start = span_text(kernel.text, loop.init.init.span) if loop.init.init is not None \
            and loop.init.init.span is not None else str(shape.start)
        if trips % factor == 0 and shape.bound.span is not None:
            bound = f"{'<=' if shape.inclusive else '<'} {span_text(kernel.text, shape.bound.span)}"
        else:
            bound = f"< {shape.start + main * step}"
        lines.append(f"{indent}for (int {base} = {start}; {base} {bound}; "
                     f"{base} += {factor * step}) {{")
        for j in range(factor):
            lines += _copy(indent + "  ", var, base if j == 0 else f"{base} + {j * step}",
                           body, "  ")
        lines.append(f"{indent}}}")
        first_rest = main
    else:
        first_rest = 0
    for t in range(first_rest, trips):
        lines += _copy(indent, var, str(shape.start + t * step), body, "")
    return "\n".join(lines)[len(indent):]
