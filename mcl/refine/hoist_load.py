"""hoist-load: load an element that a loop reads again in every iteration into a local
variable before the loop, and read the local inside it (the memory analysis's
`memory-register` suggestion, a `KeepInRegister`; paper 6.3)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from mcl.feedback.findings import Finding, RegisterReload, every
from mcl.identity import Ref
from mcl.mcpl import ast
from mcl.mcpl.printer import print_expr
from mcl.refine.answers import ANSWERS
from mcl.refine.edits import TextEdit, indentation
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.loads import element_type, the_load
from mcl.refine.loops import loop_shape, size_names
from mcl.refine.places import (
    constant_env,
    every_name,
    fresh_name,
    holding_block,
    names_in,
    path_to,
    written,
)
from mcl.refine.refinement import Parameter, Proposal, Refinement, Refused, integer


class HoistLoad(Refinement):
    name = "hoist-load"
    summary = "load a loop-invariant element once, into a local before the loop"
    parameters = (
        Parameter("line", "the line of the load"),
        Parameter("access", "the load as written, e.g. weight[r] (where the line has "
                  "several)", optional=True),
        Parameter("loop", "the line of the outermost for-loop to hoist it out of "
                  "(default: the outermost it does not depend on)", optional=True),
    )
    preconditions = (
        "the access is a load of an element of a primitive type, in the kernel's own file",
        "no index of it reads a variable that the loops hoisted over declare or write, "
        "their loop variables included",
        "the loops write nothing of the array (no store, no atomic, no call that is "
        "passed it) and hold no barrier (no other unit changes it between iterations)",
        "between the outermost loop and the load stands no `if` and no `foreach`: each "
        "iteration loads it",
        "each loop runs at least once whenever it is reached (a positive constant trip "
        "count, or from 0 to a size): the hoisted load loads nothing the kernel did not",
        "the outermost loop is a statement of a block `{ ... }` and starts its line",
    )
    answers = ANSWERS["hoist-load"]

    def proposals(self, kernel: KernelAtLevel) -> list[Proposal | Refused]:
        return self.answer_each(
            kernel, every(kernel.findings, RegisterReload, kernel.function))

    def answer(self, kernel: KernelAtLevel, finding: Finding) -> Proposal:
        if not isinstance(finding, RegisterReload):
            raise Refused(f"{self.name} answers memory-register findings, not {finding.code}")
        keep = finding.keep
        if keep.access.span is None or not keep.loops:
            raise Refused("the finding names no place in the source")
        outermost = min((p for p in keep.loops if p.span is not None),
                        key=lambda p: (p.span.line, p.span.column) if p.span else (0, 0),
                        default=None)
        args = {"line": str(keep.access.span.line), "access": keep.access.text}
        if outermost is not None and outermost.span is not None:
            args["loop"] = str(outermost.span.line)
        return self._propose(kernel, args, finding)

    def propose(self, kernel: KernelAtLevel, args: Mapping[str, str]) -> Proposal:
        return self._propose(kernel, args, None)

    def _propose(self, kernel: KernelAtLevel, args: Mapping[str, str],
                 finding: Finding | None) -> Proposal:
        function = kernel.source_function
        line = integer(args, "line")
        load = the_load(kernel, function, line, args.get("access"))
        text = print_expr(load)
        path = path_to(function.body, load)
        loops = [n for n in path if isinstance(n, ast.For)]
        if not loops:
            raise Refused(f"{text} at line {line} is in no for-loop")
        chosen = _loops_hoisted_over(loops, path, load, args.get("loop"), text)
        outer = chosen[0]
        env = constant_env(kernel.source.program.main)
        sizes = size_names(function)
        for loop in chosen:
            shape = loop_shape(loop, env)
            if shape is None or not shape.runs(env, sizes):
                raise Refused(f"for-loop {loop.var} may run zero times: hoisted, {text} "
                              "would be loaded where the kernel does not load it")
        if holding_block(function, outer) is None or outer.span is None:
            raise Refused(f"for-loop {outer.var} is not a statement of a block")
        indent = indentation(kernel.text, outer.span.line)
        if outer.span.column != len(indent) + 1:
            raise Refused(f"for-loop {outer.var} does not start its line")
        element = element_type(function, load)
        local = fresh_name(re.sub(r"\W+", "_", text).strip("_"), every_name(function))
        edits = [TextEdit.inserting(outer.span.line, 1,
                                    f"{indent}{element} {local} = {text};\n")]
        edits += [TextEdit.replacing(n.span, local) for n in _same_loads(outer, load)
                  if n.span is not None]
        names = ", ".join(loop.var for loop in chosen)
        return Proposal(self.name, (("line", str(line)), ("access", text),
                                    ("loop", str(outer.span.line))), line,
                        f"load {text} once into {local} before for-loop {outer.var} "
                        f"(line {outer.span.line}) instead of in every iteration of "
                        f"{names}", tuple(edits), finding)

    def still_there(self, proposal: Proposal, findings: Sequence[Finding]) -> Finding | None:
        args = dict(proposal.args)
        return next((f for f in findings if isinstance(f, RegisterReload)
                     and f.keep.access.text == args["access"]
                     and any(p.span is not None and p.span.line >= int(args["loop"])
                             for p in f.keep.loops)), None)


def _loops_hoisted_over(loops: list[ast.For], path: list[object], load: ast.Index,
                        wanted: str | None, text: str) -> list[ast.For]:
    """The for-loops (outermost first) the load moves out of: from the one at line
    `wanted`, else the outermost of those it does not depend on, to the innermost."""
    array = ast.root_name(load) or ""
    reads = names_in(load)

    def problem(loop: ast.For) -> str | None:
        below = path[_position(path, loop):]
        if array in written(loop):
            return f"for-loop {loop.var} writes {array}"
        if reads & written(loop):
            return (f"{text} reads {', '.join(sorted(reads & written(loop)))}, which "
                    f"for-loop {loop.var} changes")
        if any(isinstance(n, ast.Barrier) for n in ast.walk(loop)):
            return f"for-loop {loop.var} holds a barrier"
        if any(isinstance(n, ast.If | ast.Foreach) for n in below[1:]):
            return f"{text} is under an if or a foreach inside for-loop {loop.var}"
        return None

    if wanted is not None:
        chosen = [loop for loop in loops if loop.span is not None
                  and str(loop.span.line) == wanted]
        if not chosen:
            raise Refused(f"no for-loop around {text} starts at line {wanted}")
        start = _position(loops, chosen[0])
        for loop in loops[start:]:
            why = problem(loop)
            if why is not None:
                raise Refused(why)
        return loops[start:]
    start = len(loops)
    while start > 0 and problem(loops[start - 1]) is None:
        start -= 1
    if start == len(loops):
        raise Refused(problem(loops[-1]) or f"{text} depends on its loop")
    return loops[start:]


def _same_loads(loop: ast.For, load: ast.Index) -> list[ast.Index]:
    """The loads inside `loop` of the same element as `load` (equal trees)."""
    parts = {Ref(n.base) for n in ast.walk(loop) if isinstance(n, ast.Index)}
    stored = {Ref(x) for n in ast.walk(loop) if isinstance(n, ast.Assign | ast.IncDec)
              for x in ast.walk(n.target)}
    return [n for n in ast.walk(loop.body) if isinstance(n, ast.Index) and n == load
            and Ref(n) not in parts and Ref(n) not in stored]


def _position(items: Sequence[object], item: object) -> int:
    """The index of `item` in `items` by identity (equal trees may stand twice)."""
    return next(n for n, x in enumerate(items) if x is item)
