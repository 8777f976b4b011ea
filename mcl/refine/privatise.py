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
from dataclasses import replace

from mcl.diagnostics import MclError
from mcl.feedback.findings import Finding, PrivatisationProposal, PrivatiseArray, every
from mcl.hdl.equivalence import equivalent_space, find_equivalent_par_groups
from mcl.mcpl import ast
from mcl.mcpl.printer import print_expr
from mcl.refine.answers import ANSWERS
from mcl.refine.edits import TextEdit, apply_edits, body_lines, indentation
from mcl.refine.grid_walk import grid_walk
from mcl.refine.kernel import KernelAtLevel, load_kernel
from mcl.refine.places import (
    constant_env,
    constant_int,
    every_name,
    fresh_name,
    names_in,
    path_to,
    written,
)
from mcl.refine.refinement import Parameter, Proposal, Refinement, Refused, integer, node_at
from mcl.refine.several_elements import SeveralElements

# The elements per unit of the owners' foreach that a list weighs (paper section 7: the
# histogram's blocks each walk many rows of the image; its gpu (v1) gives each of its
# 1024 blocks 16 rows, each thread 1024 pixels: the larger factors reach that grid, where
# the clearing and adding of a copy are a small part of a block's work).
ELEMENTS = (4, 16, 64, 256, 1024)


class Privatise(Refinement):
    name = "privatise"
    summary = "give each group of units a copy of an atomically updated array"
    parameters = (
        Parameter("array", "the array the units update with atomicAdd"),
        Parameter("owner", "the line of the foreach each of whose units owns a copy "
                  "(default: the finding's)", optional=True),
        Parameter("space", "the memory space of the copies, at the kernel's own level "
                  "(default: the finding's)", optional=True),
        Parameter("elements", "elements per unit of foreach `merged` (as several-elements "
                  "makes them) before the copies: fewer copies to add into the array "
                  "(default 1)", optional=True),
        Parameter("units", "instead of `elements`: a fixed grid of this many units of "
                  "foreach `merged` walks its elements with a constant stride (a named "
                  "constant) before the copies", optional=True),
        Parameter("merged", "the line of the foreach whose units compute `elements` "
                  "elements or walk them as `units` (default: the outermost foreach of "
                  "the owner's par_group around it)", optional=True),
    )
    preconditions = (
        "the array is a parameter of the function of one dimension of constant size, "
        "of int elements",
        "the owner's foreach is in the kernel's own file, and its body holds "
        "(besides declarations) exactly one foreach, the sharers', which holds (besides "
        "declarations) one more foreach of sharers or none (their units numbered in "
        "order, `w * LANES + t`); no count of theirs is written in the owner's body",
        "every access of the array is `atomicAdd(array[x], v)` in the sharers' body: "
        "no unit reads it, no other statement writes it",
        "the sharers' body holds no return (every unit reaches the barriers added), "
        "and is a block `{` at the end of its first line, `}` alone on the last",
        "the copy's space is one of the kernel's level (the finding's space, named at "
        "the kernel's level)",
        "with `elements`: several-elements applies to foreach `merged` with that factor "
        "(its preconditions), and the copy is then made in the version it makes; with "
        "`units`, the same preconditions for a grid of that many units",
    )
    answers = ANSWERS["privatise"]

    def proposals(self, kernel: KernelAtLevel) -> list[Proposal | Refused]:
        out = self.answer_each(
            kernel, every(kernel.findings, PrivatisationProposal, kernel.function))
        if kernel.model_seconds is None:
            return out
        # Each copy is added into the array once: where the owners are many (a block
        # per row of an image), their additions contend as the units' did. Owners that
        # each take several elements, as the paper's histogram does (a fixed grid of
        # blocks walks the image, section 7), add fewer copies; the factors are
        # alternatives, the model's fastest offered where it gains (mcl.refine.offers).
        # Where the owners' count is a number at the sizes weighed, a fixed grid of
        # count / F units walks the elements instead (mcl.refine.grid_walk: its constant
        # stride lets the compiler issue several loads before their updates).
        for plain in [p for p in out if isinstance(p, Proposal)]:
            args = dict(plain.args)
            try:
                count = _count_at(kernel, _merged(kernel, _owner(kernel, args), None))
            except Refused:
                count = None
            walks = [{"elements": str(f)} for f in ELEMENTS] if count is None else \
                [{"units": str(u)} for u in dict.fromkeys(-(-count // f) for f in ELEMENTS)]
            for walk in walks:
                try:
                    coarse = self._propose(kernel, {**args, **walk}, plain.answers)
                except Refused as refused:
                    out.append(Refused(refused.reason, plain.line))
                    break
                out.append(replace(coarse, group=f"{self.name}:array={args['array']},"
                                                 "elements"))
        return out

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
        if integer(args, "elements", 1) != 1 or "merged" in args or "units" in args:
            return self._coarsened(kernel, args, finding, level_space)
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
        owner = _owner(kernel, args)
        assert owner.span is not None  # node_at finds nodes with a span only
        line = owner.span.line
        chain = _sharers(owner)
        sharers, outer = chain[-1], chain[0]
        body = sharers.body
        if not isinstance(body, ast.Block) or body.span is None or sharers.span is None \
                or outer.span is None:
            raise Refused(f"the body of foreach {sharers.var} is not a block")
        updates = _updates(function, array)
        others = [n for n in ast.walk(function.body) if isinstance(n, ast.Name)
                  and n.name == array and not any(n is u.args[0].base for u in updates
                                                  if isinstance(u.args[0], ast.Index))]
        if others or any(not path_to(body, u) for u in updates) or not updates:
            raise Refused(f"{array} is accessed otherwise than by atomicAdd({array}[x], v) "
                          f"in the body of foreach {sharers.var}")
        for unit in chain:
            if names_in(unit.count) & written(owner.body):
                raise Refused(f"the body of foreach {owner.var} writes a name the count "
                              f"of foreach {unit.var} reads")
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
        indent = indentation(kernel.text, outer.span.line)
        group = owner.group[:-1] if owner.group.endswith("s") else owner.group
        size_text = print_expr(size)
        # the units of the nested sharers numbered in order (`w * LANES + t`), and as
        # many as the product of their counts: each clears and adds its elements
        unit_number = chain[0].var
        for unit in chain[1:]:
            unit_number = f"{unit_number} * {_operand(unit.count)} + {unit.var}"
        units = " * ".join(_operand(u.count) for u in chain) if len(chain) > 1 \
            else print_expr(sharers.count)
        inner = _body_indent(kernel.text, sharers, body)
        loop = f"for (int {element} = {unit_number}; {element} < {size_text}; " \
               f"{element} += {units}) {{"
        step = inner[len(indentation(kernel.text, sharers.span.line)):] or "  "
        before = [f"{inner}// {copy}: this {group}'s copy of {array}, cleared together",
                  f"{inner}{loop}", f"{inner}{step}{copy}[{element}] = 0;", f"{inner}}}",
                  f"{inner}barrier({space});"]
        after = [f"{inner}barrier({space});",
                 f"{inner}// add this {group}'s copy into {array}",
                 f"{inner}{loop}", f"{inner}{step}atomicAdd({array}[{element}], "
                 f"{copy}[{element}]);", f"{inner}}}"]
        renamed = _renamed(kernel, lines, body.span.line + 1, updates, copy)
        edits = [TextEdit.inserting(outer.span.line, 1,
                                    f"{indent}{space} int[{size_text}] {copy};\n"),
                 TextEdit(body.span.line + 1, 1, body.span.end_line, 1,
                          "\n".join([*before, *renamed, *after]) + "\n")]
        return Proposal(self.name, (("array", array), ("owner", str(line)),
                                    ("space", space)), owner.span.line,
                        f"a copy {copy} of {array} in {space} per {group} of "
                        f"foreach {owner.var}, updated by its units and added into {array} "
                        "at the end", tuple(edits), finding)

    def _coarsened(self, kernel: KernelAtLevel, args: Mapping[str, str],
                   finding: Finding | None, level_space: str | None) -> Proposal:
        """several-elements on foreach `merged` (with `units`, a grid of that many units
        walking its elements), then the copies in the version it makes: one edit of the
        lines the two change."""
        owner = _owner(kernel, args)
        merged = _merged(kernel, owner, args.get("merged"))
        assert merged.span is not None and owner.span is not None
        if "units" in args:
            if "elements" in args:
                raise Refused("give elements= or units=, not both")
            units = integer(args, "units")
            edits = grid_walk(kernel, merged.span.line, units)
            walk = ("units", str(units))
            what = (f"a fixed grid of {units} units of foreach {merged.var} walks its "
                    "elements")
        else:
            factor = integer(args, "elements", 1)
            edits = SeveralElements().propose(kernel, {"line": str(merged.span.line),
                                                       "factor": str(factor)}).edits
            walk = ("elements", str(factor))
            what = (f"each unit of foreach {merged.var} takes {factor} elements "
                    "(several-elements)")
        text = apply_edits(kernel.text, edits)
        try:
            middle = load_kernel(kernel.path, kernel.level, kernel.library,
                                 kernel.include_dirs, kernel.values, kernel.function,
                                 text=text, reference=kernel.reference)
        except MclError:
            raise Refused(f"{what}: that version does not check") from None
        plain = {k: v for k, v in args.items() if k not in ("elements", "units", "merged")}
        space = args.get("space") or _source_space(kernel, level_space or "")
        # the owner where the first edits moved it (the grid's constant goes above the
        # function), named by its line in the kernel given
        line = str(owner.span.line)
        moved = str(_moved(owner.span.line, edits))
        second = self._propose(middle, {**plain, "owner": moved, "space": space}, None)
        after = apply_edits(middle.text, second.edits)
        return Proposal(
            self.name, (*((k, line if k == "owner" else v) for k, v in second.args), walk,
                        ("merged", str(merged.span.line))),
            owner.span.line, f"{what}, then {second.summary}",
            (_lines_changed(kernel.text, after),), finding)

    def still_there(self, proposal: Proposal, findings: Sequence[Finding]) -> Finding | None:
        array = dict(proposal.args)["array"]
        return next((f for f in findings if isinstance(f, PrivatisationProposal)
                     and isinstance(f.change, PrivatiseArray) and f.change.array == array),
                    None)


def _owner(kernel: KernelAtLevel, args: Mapping[str, str]) -> ast.Foreach:
    """The foreach of the kernel's file at line `owner`."""
    wanted = args.get("owner", "")
    owner = node_at(kernel, int(wanted), ast.Foreach) if wanted.isdigit() else None
    if owner is None:
        raise Refused(f"no foreach starts at line {wanted} of {kernel.path.name}")
    return owner


def _merged(kernel: KernelAtLevel, owner: ast.Foreach, wanted: str | None) -> ast.Foreach:
    """The foreach whose units take several elements: the one at line `wanted`, else
    the outermost of the owner's par_group around it (the owner itself where none)."""
    path = [n for n in path_to(kernel.source_function.body, owner)
            if isinstance(n, ast.Foreach)]
    if wanted is None:
        return next(n for n in path if n.group == owner.group)
    found = next((n for n in path if n.span is not None and str(n.span.line) == wanted),
                 None)
    if found is None:
        raise Refused(f"merged={wanted}: no foreach around foreach {owner.var} (or it) "
                      "starts at that line")
    return found


def _count_at(kernel: KernelAtLevel, merged: ast.Foreach) -> int | None:
    """The count of foreach `merged` at the kernel's sizes (its parameters' values and
    the file's constants), None where it depends on anything else."""
    env = {**constant_env(kernel.source.program.main),
           **{k: v for k, v in kernel.values.items()
              if isinstance(v, int) and not isinstance(v, bool)}}
    count = constant_int(merged.count, env)
    return count if count is not None and count > 0 else None


def _moved(line: int, edits: Sequence[TextEdit]) -> int:
    """Line `line` after `edits`, none of which touches it: moved by the lines those
    above it add or remove."""
    return line + sum(e.text.count("\n") - (e.end_line - e.line) for e in edits
                      if e.end_line < line or (e.end_line == line and e.end_column == 1))


def _lines_changed(before: str, after: str) -> TextEdit:
    """One edit that replaces the lines from the first that differs to the last."""
    old, new = before.split("\n"), after.split("\n")
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    middle = new[head:len(new) - tail]
    if tail == 0:  # the last line differs: up to its end
        return TextEdit(head + 1, 1, len(old), len(old[-1]) + 1, "\n".join(middle))
    return TextEdit(head + 1, 1, len(old) - tail + 1, 1,
                    "".join(row + "\n" for row in middle))


def _sharers(owner: ast.Foreach) -> list[ast.Foreach]:
    """The foreach loops whose units share a copy, outermost first: the one foreach
    of the owner's body and those nested in it, each holding the next (and
    declarations) alone, the innermost no foreach (it runs the statements)."""
    chain = [_only_foreach(owner, "the units that would share a copy: at this level the "
                                  "copy has no place between the owners and the sharers")]
    while any(isinstance(n, ast.Foreach) for n in ast.walk(chain[-1].body)):
        chain.append(_only_foreach(chain[-1], "the units inside it: the copy's clearing "
                                              "and adding would not run once per unit"))
    return chain


def _only_foreach(outer: ast.Foreach, what: str) -> ast.Foreach:
    stmts = outer.body.stmts if isinstance(outer.body, ast.Block) else [outer.body]
    nested = [s for s in stmts if isinstance(s, ast.Foreach)]
    if len(nested) != 1 or any(not isinstance(s, ast.Foreach | ast.Decl) for s in stmts):
        raise Refused(f"the body of foreach {outer.var} is not one foreach (and "
                      f"declarations) of {what}")
    return nested[0]


def _operand(e: ast.Expr) -> str:
    text = print_expr(e)
    return f"({text})" if isinstance(e, ast.Binary) else text


def _body_indent(text: str, foreach: ast.Foreach, body: ast.Block) -> str:
    """The indentation of the foreach's statements (its own and two spaces where they
    do not start their lines deeper)."""
    own = indentation(text, foreach.span.line) if foreach.span is not None else ""
    first = body.stmts[0].span if body.stmts else None
    if first is not None:
        inner = indentation(text, first.line)
        if inner.startswith(own) and len(inner) > len(own):
            return inner
    return own + "  "


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

