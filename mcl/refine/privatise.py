"""privatise: give each group of units its own copy of an array they all update with
atomicAdd (a histogram), in a faster memory where the level has one, and add the copies
into the array once per group at the end (the `store-privatise` finding's
`PrivatiseArray`; paper section 7, the histogram's gpu (v1)).

The copy is declared in the body of the foreach whose units own a copy, before the
foreach of the units that share it. In the sharers' body, before their statements, the
units clear the copy together (unit t the elements t, t + units, ...) and wait at a
barrier; every `atomicAdd(array[x], v)` of the body becomes `atomicAdd(copy[x], v)`; after
a second barrier the units add the copy into the array together, one atomicAdd per
element. The body's statements are kept as written, the accesses renamed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mcl.diagnostics import MclError
from mcl.feedback.findings import Finding, PrivatisationProposal, PrivatiseArray
from mcl.hdl.equivalence import equivalent_space, find_equivalent_par_groups
from mcl.mcpl import ast
from mcl.mcpl.printer import print_expr
from mcl.refine.answers import ANSWERS
from mcl.refine.edits import TextEdit, body_lines, indentation
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.places import (
    constant_env,
    constant_int,
    every_name,
    fresh_name,
    names_in,
    path_to,
    written,
)
from mcl.refine.refinement import Parameter, Proposal, Refinement, Refused


class Privatise(Refinement):
    name = "privatise"
    summary = "give each group of units a copy of an atomically updated array"
    parameters = (
        Parameter("array", "the array the units update with atomicAdd"),
        Parameter("owner", "the line of the foreach each of whose units owns a copy "
                  "(default: the finding's)", optional=True),
        Parameter("space", "the memory space of the copies, at the kernel's own level "
                  "(default: the finding's)", optional=True),
    )
    preconditions = (
        "the array is a parameter of the function of one dimension of constant size, "
        "of int elements",
        "the owner's foreach is in the kernel's own file, and its body holds "
        "(besides declarations) exactly one foreach, the sharers', innermost (no foreach "
        "inside it), whose count nothing in it writes",
        "every access of the array is `atomicAdd(array[x], v)` in the sharers' body: "
        "no unit reads it, no other statement writes it",
        "the sharers' body holds no return (every unit reaches the barriers added), "
        "and is a block `{` at the end of its first line, `}` alone on the last",
        "the copy's space is one of the kernel's level (the finding's space, named at "
        "the kernel's level)",
    )
    answers = ANSWERS["privatise"]

    def proposals(self, kernel: KernelAtLevel) -> list[Proposal | Refused]:
        return self.answer_each(kernel, [
            f for f in kernel.findings
            if isinstance(f, PrivatisationProposal) and f.function == kernel.function])

    def answer(self, kernel: KernelAtLevel, finding: Finding) -> Proposal:
        if not isinstance(finding, PrivatisationProposal) \
                or not isinstance(finding.change, PrivatiseArray):
            raise Refused(f"{self.name} answers store-privatise findings, not {finding.code}")
        change = finding.change
        owner = change.owners[-1] if change.owners else None
        if owner is None or owner.span is None:
            raise Refused(f"the finding proposes one copy of {change.array} for the whole "
                          "kernel: no foreach owns it")
        return self._propose(kernel, {"array": change.array, "owner": str(owner.span.line)},
                             finding, change.space)

    def propose(self, kernel: KernelAtLevel, args: Mapping[str, str]) -> Proposal:
        finding = next((f for f in kernel.findings if isinstance(f, PrivatisationProposal)
                        and f.function == kernel.function
                        and isinstance(f.change, PrivatiseArray)
                        and f.change.array == args.get("array")), None)
        if finding is None or "space" in args:
            return self._propose(kernel, args, finding)
        assert isinstance(finding.change, PrivatiseArray)
        owners = finding.change.owners
        if "owner" not in args and owners and owners[-1].span is not None:
            args = {**args, "owner": str(owners[-1].span.line)}
        return self._propose(kernel, args, finding, finding.change.space)

    def _propose(self, kernel: KernelAtLevel, args: Mapping[str, str],
                 finding: Finding | None, level_space: str | None = None) -> Proposal:
        """The rewrite; `level_space`: the copy's space as the feedback's level names
        it (the finding's), where `args` give none at the kernel's own level."""
        array = args.get("array")
        if not array:
            raise Refused("give the array: privatise:array=NAME")
        if "owner" not in args or ("space" not in args and level_space is None):
            raise Refused(f"no store-privatise finding of {array}: give owner= and space=")
        function = kernel.source_function
        param = next((p for p in function.params if p.name == array), None)
        env = constant_env(kernel.source.program.main)
        if param is None or not isinstance(param.type, ast.ArrayType) \
                or param.type.rank != 1 or not isinstance(param.type.element, ast.Prim) \
                or param.type.element.name != "int":
            raise Refused(f"{array} is not a parameter of {function.name} of one "
                          "dimension of ints")
        size = param.type.dims[0][0]
        if constant_int(size, env) is None:
            raise Refused(f"the size of {array} is not a constant: a copy needs one")
        line = int(args["owner"]) if args["owner"].isdigit() else -1
        owner = next((n for n in ast.walk(function.body) if isinstance(n, ast.Foreach)
                      and n.span is not None and n.span.line == line
                      and kernel.in_file(n.span)), None)
        if owner is None or owner.span is None:
            raise Refused(f"no foreach starts at line {args['owner']} of {kernel.path.name}")
        sharers = _sharers(owner)
        body = sharers.body
        if not isinstance(body, ast.Block) or body.span is None or sharers.span is None:
            raise Refused(f"the body of foreach {sharers.var} is not a block")
        updates = _updates(function, array)
        others = [n for n in ast.walk(function.body) if isinstance(n, ast.Name)
                  and n.name == array and not any(n is u.args[0].base for u in updates
                                                  if isinstance(u.args[0], ast.Index))]
        if others or any(not path_to(body, u) for u in updates) or not updates:
            raise Refused(f"{array} is accessed otherwise than by atomicAdd({array}[x], v) "
                          f"in the body of foreach {sharers.var}")
        if names_in(sharers.count) & written(owner.body):
            raise Refused(f"the body of foreach {owner.var} writes a name the count of "
                          f"foreach {sharers.var} reads")
        if any(isinstance(n, ast.Return) for n in ast.walk(body)):
            raise Refused(f"the body of foreach {sharers.var} holds a return: not every "
                          "unit would reach the barriers")
        space = args.get("space") or _source_space(kernel, level_space or "")
        if kernel.library.get(function.hwd).memory_space(space) is None:
            raise Refused(f"{function.hwd} has no memory space {space}")
        lines = body_lines(kernel.text, sharers.span, body.span, f"foreach {sharers.var}")
        taken = every_name(function)
        copy = fresh_name(f"{space[0]}_{array}", taken)
        element = fresh_name("e", taken | {copy})
        indent = indentation(kernel.text, sharers.span.line)
        group = owner.group[:-1] if owner.group.endswith("s") else owner.group
        size_text = print_expr(size)
        units = print_expr(sharers.count)
        inner = indent + "  "
        loop = f"for (int {element} = {sharers.var}; {element} < {size_text}; " \
               f"{element} += {units}) {{"
        before = [f"{inner}// {copy}: this {group}'s copy of {array}, cleared together",
                  f"{inner}{loop}", f"{inner}  {copy}[{element}] = 0;", f"{inner}}}",
                  f"{inner}barrier({space});"]
        after = [f"{inner}barrier({space});",
                 f"{inner}// add this {group}'s copy into {array}",
                 f"{inner}{loop}", f"{inner}  atomicAdd({array}[{element}], "
                 f"{copy}[{element}]);", f"{inner}}}"]
        renamed = _renamed(kernel, lines, body.span.line + 1, updates, copy)
        edits = [TextEdit.inserting(sharers.span.line, 1,
                                    f"{indent}{space} int[{size_text}] {copy};\n"),
                 TextEdit(body.span.line + 1, 1, body.span.end_line, 1,
                          "\n".join([*before, *renamed, *after]) + "\n")]
        return Proposal(self.name, (("array", array), ("owner", str(line)),
                                    ("space", space)), owner.span.line,
                        f"a copy {copy} of {array} in {space} per {group} of "
                        f"foreach {owner.var}, updated by its units and added into {array} "
                        "at the end", tuple(edits), finding)

    def still_there(self, proposal: Proposal, findings: Sequence[Finding]) -> Finding | None:
        array = dict(proposal.args)["array"]
        return next((f for f in findings if isinstance(f, PrivatisationProposal)
                     and isinstance(f.change, PrivatiseArray) and f.change.array == array),
                    None)


def _sharers(owner: ast.Foreach) -> ast.Foreach:
    stmts = owner.body.stmts if isinstance(owner.body, ast.Block) else [owner.body]
    nested = [s for s in stmts if isinstance(s, ast.Foreach)]
    if len(nested) != 1 or any(not isinstance(s, ast.Foreach | ast.Decl) for s in stmts):
        raise Refused(f"the body of foreach {owner.var} is not one foreach (and "
                      "declarations) of the units that would share a copy: at this level "
                      "the copy has no place between the owners and the sharers")
    inner = nested[0]
    if any(isinstance(n, ast.Foreach) for n in ast.walk(inner.body)):
        raise Refused(f"the units that share a copy are those of more than one foreach "
                      f"(foreach {inner.var} and those inside it): the loops that clear "
                      "and add the copy stride over one foreach's units")
    return inner


def _updates(function: ast.Function, array: str) -> list[ast.Call]:
    """The `atomicAdd(array[x], v)` calls of the function."""
    return [n for n in ast.walk(function.body) if isinstance(n, ast.Call)
            and n.func == "atomicAdd" and n.args and isinstance(n.args[0], ast.Index)
            and isinstance(n.args[0].base, ast.Name) and n.args[0].base.name == array]


def _renamed(kernel: KernelAtLevel, lines: list[str], first_line: int,
             updates: list[ast.Call], copy: str) -> list[str]:
    """The body's lines as written, the updated array renamed to the copy at each
    update's place in its line."""
    out = list(lines)
    # right to left, so that a rename does not move the columns of those before it
    places = sorted(((u.args[0].base.span.line, u.args[0].base.span.column,
                      u.args[0].base.span.end_column) for u in updates
                     if isinstance(u.args[0], ast.Index) and u.args[0].base.span is not None),
                    reverse=True)
    for line, column, end in places:
        row = out[line - first_line]
        out[line - first_line] = row[:column - 1] + copy + row[end - 1:]
    return out


def _source_space(kernel: KernelAtLevel, leaf_space: str) -> str:
    """The space of the kernel's own level that translates to `leaf_space` at the level
    of the feedback (the same name where they are one level)."""
    library = kernel.library
    own = kernel.source_function.hwd
    path = library.path(own, kernel.level)
    for space in library.get(own).memory_spaces():
        name = space.name
        try:
            for parent, child in zip(path, path[1:], strict=False):
                source, target = library.get(parent), library.get(child)
                name = equivalent_space(name, source, target,
                                        find_equivalent_par_groups(source, target)).name
        except MclError:
            continue
        if name == leaf_space:
            return space.name
    raise Refused(f"no memory space of {own} translates to {leaf_space} at {kernel.level}")

