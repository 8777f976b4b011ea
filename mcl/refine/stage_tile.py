"""stage-tile: stage a tile of an array in a faster memory space, loaded by the units of a
block together, with the barriers it needs (the memory analysis's `memory-faster-space`
suggestion, a `ShareInFasterMemory`; paper 5.1, gpu (v1): "local memory can be
leveraged", and 6.3).

The units of a block that all read the same element `a[i, k]` in a for-loop over k
(the index reads k and, besides it, only values that are the same for the whole block)
split the loop into tiles of T iterations, T the block's units by default. For each
tile, unit u loads element k0 + u into a `local` (or `shared`) array, a barrier makes
every unit's element visible, the loop over the tile reads the array instead, and a
second barrier keeps the next tile's loads from overwriting elements a slower unit
still reads:

    for (int k0 = 0; k0 < p; k0 += T) {
      if (k0 + tj < p) {
        tile_a[tj] = a[i, k0 + tj];
      }
      barrier(local);
      for (int k = k0; k < min(k0 + T, p); k++) { ... tile_a[k - k0] ... }
      barrier(local);
    }

The guard leaves the elements past the loop's bound unloaded, and the loop over the
tile stops at the bound, so sizes that the tile does not divide read only what the
kernel read. Where the load stands under an `if` inside the loop, the guard keeps inside
the array's extents too: the block's units may then read none of the range (a block
past the last row), and the fill must not load what the kernel never reads. Every unit
of the block reaches both barriers: the loop stands under no condition that depends on
the units, and its bounds do not either."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from mcl.codegen.host_eval import Number
from mcl.diagnostics import MclError, Span
from mcl.feedback.findings import (
    FasterMemoryProposal,
    Finding,
    LoopPlace,
    ShareInFasterMemory,
)
from mcl.hdl.equivalence import equivalent_space, find_equivalent_par_groups
from mcl.identity import Ref
from mcl.mcpl import ast
from mcl.mcpl.printer import print_expr
from mcl.refine.answers import ANSWERS
from mcl.refine.edits import TextEdit, edited_span_text, indentation, indented, span_text
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.loads import element_type, full_accesses, stored_nodes, the_load
from mcl.refine.loops import LoopShape, loop_shape
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


class StageTile(Refinement):
    name = "stage-tile"
    summary = ("stage a tile of an array in a faster memory, loaded by the units of a "
               "block together, with barriers")
    parameters = (
        Parameter("line", "the line of the load"),
        Parameter("access", "the load as written, e.g. a[i, k] (where the line has "
                  "several)", optional=True),
        Parameter("loop", "the line of the for-loop the tile runs along (default: the "
                  "innermost one whose variable the index reads)", optional=True),
        Parameter("tile", "elements per tile (default: the units of the block that share "
                  "the load, one element each)", optional=True),
    )
    preconditions = (
        "a `memory-faster-space` finding names the load: which units of a block share it, "
        "and in which faster space",
        "the kernel's own level has the memory space that becomes the finding's (a "
        "kernel of perfect, translated, has no block to share it)",
        "the sharing units are foreach loops of the kernel's file with constant counts "
        "(the tile's size per block is a constant), the outermost starting its line in a "
        "block `{ ... }`",
        "the for-loop counts up by one from a constant (`for (int k = C; k < E; k++)`, or "
        "`<=`), is a statement of a block, starts its line and has a block as its body",
        "the load's index reads the loop's variable and otherwise only values the same for "
        "every unit of the block, none of them written inside the loop",
        "between the sharing units and the loop stand only blocks, for-loops and `if`s "
        "whose headers and conditions are the same for every unit, and the loop's bounds "
        "are too: every unit of the block reaches both barriers",
        "the loop writes nothing of the array (no store, no atomic, no call passed it): "
        "the tile does not go stale while it is read; it holds no return",
    )
    answers = ANSWERS["stage-tile"]

    def proposals(self, kernel: KernelAtLevel) -> list[Proposal | Refused]:
        seen: set[tuple[str, int | None]] = set()
        wanted: list[Finding] = []
        for f in kernel.findings:
            if isinstance(f, FasterMemoryProposal) and f.function == kernel.function:
                key = (_change(f).access.text, f.span.line if f.span else None)
                if key not in seen:
                    seen.add(key)
                    wanted.append(f)
        return self.answer_each(kernel, wanted)

    def answer(self, kernel: KernelAtLevel, finding: Finding) -> Proposal:
        if not isinstance(finding, FasterMemoryProposal):
            raise Refused(f"{self.name} answers memory-faster-space findings, not "
                          f"{finding.code}")
        access = _change(finding).access
        if access.span is None:
            raise Refused("the finding names no place in the source")
        return self._propose(kernel, {"line": str(access.span.line), "access": access.text},
                             finding)

    def propose(self, kernel: KernelAtLevel, args: Mapping[str, str]) -> Proposal:
        line = integer(args, "line")
        wanted = args.get("access")
        finding = next((f for f in kernel.findings if isinstance(f, FasterMemoryProposal)
                        and f.function == kernel.function
                        and _access_line(f) == line
                        and (wanted is None or _same_text(_change(f).access.text, wanted))),
                       None)
        if finding is None:
            raise Refused(f"no memory-faster-space finding at line {line} of "
                          f"{kernel.function} at {kernel.level}: which units share the "
                          "load, and in which faster space, is not shown")
        return self._propose(kernel, {"access": _change(finding).access.text, **args},
                             finding)

    def _propose(self, kernel: KernelAtLevel, args: Mapping[str, str],
                 finding: FasterMemoryProposal) -> Proposal:
        change = _change(finding)
        function = kernel.source_function
        line = integer(args, "line")
        load = the_load(kernel, function, line, args.get("access"))
        text = print_expr(load)
        array = ast.root_name(load) or ""
        path = path_to(function.body, load)
        sharers = _sharing_foreaches(kernel, path, change.sharers, text)
        space = _source_space(kernel, change.space, change.current)
        env = constant_env(kernel.source.program.main)
        counts = []
        for unit in sharers:
            count = constant_int(unit.count, env)
            if count is None or count < 1:
                raise Refused(f"foreach {unit.var} runs a number of {unit.group} that is "
                              "not a constant: the tile's size per block is not known")
            counts.append(count)
        units = math.prod(counts)
        if change.units.numeric is not None and change.units.numeric != units:
            raise Refused(f"the {units} units of the foreach loops around {text} are not "
                          f"the {change.units.numeric} that share it at {kernel.level}")
        varying = _unit_dependent(sharers[0], {u.var for u in sharers})
        below = path[_position(path, sharers[-1]) + 1:]
        loop = _staged_loop(below, load, args.get("loop"), text)
        shape, loop_span = _shape_of(kernel, function, loop, env, text)
        _require_uniform_path(below[:_position(below, loop)], varying, loop.var)
        _require_staged_index(load, loop, shape, varying, array, text)
        outer = sharers[0]
        if holding_block(function, outer) is None or outer.span is None \
                or outer.span.column != len(indentation(kernel.text, outer.span.line)) + 1:
            raise Refused(f"foreach {outer.var} does not start its line in a block: no "
                          "place to declare the tile before it")
        tile = integer(args, "tile", units)
        if tile < 1:
            raise Refused(f"tile={tile}: a tile holds at least one element")
        taken = every_name(function)
        start_name = fresh_name(f"{loop.var}0", taken)
        tile_name = fresh_name(f"tile_{array}", taken | {start_name})
        slot_name = fresh_name("s", taken | {start_name, tile_name})
        # A tile of one element per unit is written in the units' own terms.
        size = str(tile) if tile != units else " * ".join(
            _operand(kernel.text, u.count) for u in sharers)
        # Where the load stands under an `if` inside the loop, the block's units may not
        # read every element of the range the original reads: the fill then loads only
        # elements inside the array (those the original may read).
        guarded = any(isinstance(n, ast.If) for n in path[_position(path, loop):])
        extents = _extents(kernel.text, function, array, text) if guarded else None
        staged = _StagedLoop(kernel.text, loop, shape, load, array, tile_name, start_name,
                             size, space, extents)
        if tile == units and len(sharers) == 1:
            fill = staged.fill(sharers[0].var)
        else:
            number = _unit_index(kernel.text, sharers)
            every = " * ".join(_operand(kernel.text, u.count) for u in sharers)
            fill = staged.fill_by_steps(slot_name, number, every)
        element = element_type(function, load)
        declaration = (f"{indentation(kernel.text, outer.span.line)}{space} {element}"
                       f"[{size}] {tile_name};\n")
        edits = (TextEdit.inserting(outer.span.line, 1, declaration),
                 TextEdit.replacing(loop_span, staged.text(fill)))
        group = sharers[-1].group
        return Proposal(
            self.name, (("line", str(line)), ("access", text),
                        ("loop", str(loop_span.line)),
                        ("tile", str(tile))), line,
            f"stage {text} in {space} {tile_name}[{size}], {tile} elements along for-loop "
            f"{loop.var} at a time, loaded by the {units} {group} of a block together, "
            f"with barrier({space}) before and after their use", edits, finding)

    def still_there(self, proposal: Proposal, findings: Sequence[Finding]) -> Finding | None:
        access = dict(proposal.args)["access"]
        return next((f for f in findings if isinstance(f, FasterMemoryProposal)
                     and _same_text(_change(f).access.text, access)), None)


class _StagedLoop:
    """The text of the staged loop: the loop over tiles, the fill, the barriers, and the
    original loop over one tile reading the tile instead of the array."""

    def __init__(self, text: str, loop: ast.For, shape: LoopShape, load: ast.Index,
                 array: str, tile: str, start: str, size: str, space: str,
                 extents: list[str] | None):
        self.source, self.loop, self.load, self.array = text, loop, load, array
        self.extents = extents
        self.tile, self.start, self.size, self.space = tile, start, size, space
        assert loop.span is not None
        self.indent = indentation(text, loop.span.line)
        self.step = _indent_step(text, loop, self.indent)
        self.bound = span_text(text, shape.bound.span) if shape.bound.span else \
            print_expr(shape.bound)
        self.op = "<=" if shape.inclusive else "<"
        self.end = f"{self.bound} + 1" if shape.inclusive else self.bound
        init = loop.init
        assert isinstance(init, ast.Decl) and init.init is not None
        self.first = span_text(text, init.init.span) if init.init.span else \
            print_expr(init.init)

    def _element(self, slot: str) -> ast.Index:
        """The load with the loop's variable at element `slot` of the tile."""
        var = self.loop.var

        def shift(node: object) -> object | None:
            if isinstance(node, ast.Name) and node.name == var:
                return ast.Binary("+", ast.Name(self.start), ast.Name(slot))
            return None
        moved = ast.transform(self.load, shift)
        assert isinstance(moved, ast.Index)
        return moved

    def fill(self, unit: str) -> list[str]:
        """Unit `unit` loads element `unit` of the tile (one element per unit), where it
        lies in the loop's range (and in the array, where `extents` are given)."""
        element = self._element(unit)
        guard = [f"{self.start} + {unit} {self.op} {self.bound}"]
        for index, extent in zip(_subscripts(element), self.extents or [], strict=False):
            inside = f"{print_expr(index)} < {extent}"
            if inside not in guard:
                guard.append(inside)
        return [f"if ({' && '.join(guard)}) {{",
                f"{self.step}{self.tile}[{unit}] = {print_expr(element)};", "}"]

    def fill_by_steps(self, slot: str, unit: str, units: str) -> list[str]:
        """Unit `unit` loads elements `unit`, `unit` + `units`, ... of the tile."""
        inner = [self.step + row for row in self.fill(slot)]
        return [f"for (int {slot} = {unit}; {slot} < {self.size}; {slot} += {units}) {{",
                *inner, "}"]

    def text(self, fill: list[str]) -> str:
        """The staged loop, replacing the loop's text (its first line placed as it was)."""
        loop, var, s = self.loop, self.loop.var, self.step
        assert loop.body.span is not None
        at = [TextEdit.replacing(n.span, f"{self.tile}[{var} - {self.start}]")
              for n in _same_loads(loop.body, self.load) if n.span is not None]
        body = indented(edited_span_text(self.source, loop.body.span, at), s)
        inner = self.indent + s
        rows = [f"for (int {self.start} = {self.first}; {self.start} {self.op} "
                f"{self.bound}; {self.start} += {self.size}) {{",
                f"{inner}// {self.tile}: {self.size} elements of {self.array}, loaded by the "
                "units of the block together",
                *(inner + row for row in fill),
                f"{inner}barrier({self.space});",
                f"{inner}for (int {var} = {self.start}; {var} < min({self.start} + "
                f"{self.size}, {self.end}); {var}++) {body}",
                f"{inner}// every unit is done with {self.tile} before the next loads "
                "overwrite it",
                f"{inner}barrier({self.space});",
                f"{self.indent}}}"]
        return "\n".join(rows)


def _change(finding: Finding) -> ShareInFasterMemory:
    assert isinstance(finding.change, ShareInFasterMemory)
    return finding.change


def _access_line(finding: Finding) -> int | None:
    """The line of the access the finding proposes to share, where it names one."""
    span = _change(finding).access.span
    return span.line if span is not None else None


def _same_text(a: str, b: str) -> bool:
    return "".join(a.split()) == "".join(b.split())


def _sharing_foreaches(kernel: KernelAtLevel, path: list[object],
                       sharers: Sequence[LoopPlace], text: str) -> list[ast.Foreach]:
    """The kernel's foreach loops around the load that the finding's sharers are (a
    leaf's loops keep the spans of the source's loops they were translated from)."""
    places = {(p.span.line, p.span.column) for p in sharers if p.span is not None}
    found = [n for n in path if isinstance(n, ast.Foreach) and n.span is not None
             and kernel.in_file(n.span) and (n.span.line, n.span.column) in places]
    if not found:
        raise Refused(f"the units that share {text} ("
                      + ", ".join(f"{p.group} {p.name}" for p in sharers)
                      + f") are no foreach loops around it in {kernel.path.name}")
    inner = _position(path, found[0])
    if any(isinstance(n, ast.Foreach) and all(n is not f for f in found)
           for n in path[inner:_position(path, found[-1])]):
        raise Refused(f"a foreach of other units stands between the units that share {text}")
    return found


def _unit_dependent(outer: ast.Foreach, units: set[str]) -> set[str]:
    """The names inside `outer` whose value may differ between the sharing units: the
    units' loop variables, and every variable assigned from one of them or under a
    condition or loop that reads one (to a fixed point)."""
    varying = set(units)

    def visit(node: object, divergent: bool) -> None:
        match node:
            case ast.Decl(name=name, init=init):
                if divergent or (init is not None and names_in(init) & varying):
                    varying.add(name)
            case ast.Assign(target=target, value=value):
                if divergent or names_in(value) & varying or names_in(target) & varying:
                    varying.update(written(node))
            case ast.IncDec() | ast.Swap() | ast.CallStmt():
                if divergent or names_in(node) & varying:
                    varying.update(written(node))
            case ast.If(cond=cond, then=then, orelse=orelse):
                inside = divergent or bool(names_in(cond) & varying)
                visit(then, inside)
                if orelse is not None:
                    visit(orelse, inside)
            case ast.For(init=init, cond=cond, step=step, body=body):
                inside = divergent or bool(names_in(init) & varying or names_in(cond)
                                           & varying or names_in(step) & varying)
                visit(init, inside)
                visit(body, inside)
            case ast.Foreach(body=body):
                visit(body, divergent)
            case ast.Block(stmts=stmts):
                for stmt in stmts:
                    visit(stmt, divergent)
            case _:
                pass

    size = -1
    while size != len(varying):
        size = len(varying)
        visit(outer.body, False)
    return varying


def _staged_loop(below: list[object], load: ast.Index, wanted: str | None,
                 text: str) -> ast.For:
    """The for-loop the tile runs along: the one at line `wanted`, else the innermost
    whose variable the load's index reads."""
    loops = [n for n in below if isinstance(n, ast.For)]
    if wanted is not None:
        chosen = [loop for loop in loops if loop.span is not None
                  and str(loop.span.line) == wanted]
        if not chosen:
            raise Refused(f"no for-loop around {text} inside the sharing units starts at "
                          f"line {wanted}")
        return chosen[0]
    reads = _index_names(load)
    chosen = [loop for loop in loops if loop.var in reads]
    if not chosen:
        raise Refused(f"the index of {text} reads no variable of a for-loop inside the "
                      "sharing units: no loop to stage it along")
    return chosen[-1]


def _shape_of(kernel: KernelAtLevel, function: ast.Function, loop: ast.For,
              env: Mapping[str, Number], text: str) -> tuple[LoopShape, Span]:
    """The shape of the loop to stage along and its span (a loop that does not count up
    by one, does not start its line in a block or has no block body is refused)."""
    shape = loop_shape(loop, env)
    if shape is None or shape.step != 1:
        raise Refused(f"for-loop {loop.var} does not count up by one from a constant "
                      f"(`for (int {loop.var} = C; {loop.var} < E; {loop.var}++)`)")
    if holding_block(function, loop) is None or loop.span is None \
            or loop.span.column != len(indentation(kernel.text, loop.span.line)) + 1:
        raise Refused(f"for-loop {loop.var} does not start its line in a block")
    if not isinstance(loop.body, ast.Block) or loop.body.span is None:
        raise Refused(f"the body of for-loop {loop.var} is not a block `{{ ... }}`")
    return shape, loop.span


def _require_uniform_path(between: list[object], varying: set[str], var: str) -> None:
    """Every unit of the block reaches the loop together: between the sharing units and
    the loop stand only blocks, for-loops and ifs the same for every unit."""
    for node in between:
        match node:
            case ast.Block():
                pass
            case ast.If(cond=cond) if not names_in(cond) & varying:
                pass
            case ast.If(cond=cond):
                raise Refused(f"for-loop {var} stands under `if ({print_expr(cond)})`, "
                              "which the units of the block may take differently: a "
                              "barrier there would not be reached by all of them")
            case ast.For(init=init, cond=cond, step=step) if not (
                    names_in(init) | names_in(cond) | names_in(step)) & varying:
                pass
            case ast.For(var=outer):
                raise Refused(f"for-loop {var} stands in for-loop {outer}, whose header "
                              "depends on the units: they would not reach the barriers "
                              "together")
            case _:
                raise Refused(f"for-loop {var} stands in a statement that not every unit "
                              "of the block runs alike")


def _require_staged_index(load: ast.Index, loop: ast.For, shape: LoopShape,
                          varying: set[str], array: str, text: str) -> None:
    """The tile is one range of elements along the loop, the same for the whole block,
    and stays what the array holds while it is read."""
    var = loop.var
    reads = _index_names(load) - {var}
    inside = written(loop.body)
    bound = names_in(shape.bound)
    if var not in _index_names(load):
        raise Refused(f"the index of {text} does not read {var}: it is one element for "
                      f"the whole for-loop {var}")
    if var in inside:
        raise Refused(f"for-loop {var} changes {var} in its body")
    if reads & varying:
        raise Refused(f"the index of {text} reads {', '.join(sorted(reads & varying))}, "
                      "which differs between the units of the block: they need other "
                      "elements, not one tile")
    if reads & inside:
        raise Refused(f"the index of {text} reads {', '.join(sorted(reads & inside))}, "
                      f"which for-loop {var} changes")
    if bound & varying or bound & inside:
        raise Refused(f"the bound of for-loop {var} differs between the units or changes "
                      "in the loop: they would not reach the barriers together")
    if array in written(loop):
        raise Refused(f"for-loop {var} writes {array}: the tile would go stale")
    if any(isinstance(n, ast.Return) for n in ast.walk(loop.body)):
        raise Refused(f"for-loop {var} holds a return: a unit that leaves would not reach "
                      "the barriers")


def _subscripts(load: ast.Index) -> list[ast.Expr]:
    """The subscripts of `load`, outermost dimension first (`d[i][j]` and `d[i, j]`)."""
    inner = _subscripts(load.base) if isinstance(load.base, ast.Index) else []
    return [*inner, *load.indices]


def _extents(text: str, function: ast.Function, array: str, access: str) -> list[str]:
    """The extents of `array` as written, outermost dimension first; `Refused` where it
    is not one array the function takes or declares (a view, a field)."""
    declared = [p.type for p in function.params if p.name == array]
    declared += [n.type for n in ast.walk(function.body)
                 if isinstance(n, ast.Decl) and n.name == array]
    if len(declared) != 1 or not isinstance(declared[0], ast.ArrayType):
        raise Refused(f"{access} stands under an if in the loop and the extents of {array} "
                      "are not known: the fill could not keep inside the array")
    return [span_text(text, e.span) if e.span is not None else print_expr(e)
            for group in declared[0].dims for e in group]


def _index_names(load: ast.Index) -> set[str]:
    """The names the subscripts of `load` read (not the array's)."""
    return {name for n in ast.walk(load) if isinstance(n, ast.Index)
            for e in n.indices for name in names_in(e)}


def _same_loads(body: object, load: ast.Index) -> list[ast.Index]:
    """The loads in `body` of the same element as `load` (equal trees)."""
    stored = stored_nodes(body)
    return [n for n in full_accesses(body) if n == load and Ref(n) not in stored]


def _source_space(kernel: KernelAtLevel, space: str, current: str | None) -> str:
    """The memory space of the kernel's own level that becomes `space` at the kernel's
    level (translation keeps names where it can: gpu's `local` is hopper's `shared`)."""
    library = kernel.library
    own = kernel.source_function.hwd
    if own == kernel.level:
        return space
    path = library.path(own, kernel.level)
    for candidate in library.get(own).memory_spaces():
        name = candidate.name
        try:
            for parent, child in zip(path, path[1:], strict=False):
                frm, to = library.get(parent), library.get(child)
                name = equivalent_space(name, frm, to,
                                        find_equivalent_par_groups(frm, to)).name
        except MclError:
            continue
        if name == space and name != current:
            return candidate.name
    raise Refused(f"{own} has no memory space that becomes {space} at {kernel.level}: "
                  f"the block whose units share the load exists only below {own}")


def _unit_index(text: str, sharers: Sequence[ast.Foreach]) -> str:
    """The unit's number within the block, 0 up to the sharing units' product."""
    index = sharers[0].var
    for unit in sharers[1:]:
        index = f"{index} * {_operand(text, unit.count)} + {unit.var}"
    return index


def _operand(text: str, e: ast.Expr) -> str:
    """`e` as written, in parentheses where it is a binary operation."""
    written_as = span_text(text, e.span) if e.span is not None else print_expr(e)
    return f"({written_as})" if isinstance(e, ast.Binary) else written_as


def _indent_step(text: str, loop: ast.For, indent: str) -> str:
    """One level of the file's indentation: the loop's body's against the loop's."""
    body = loop.body
    if isinstance(body, ast.Block) and body.stmts and body.stmts[0].span is not None:
        inner = indentation(text, body.stmts[0].span.line)
        if inner.startswith(indent) and len(inner) > len(indent):
            return inner[len(indent):]
    return "  "


def _position(items: Sequence[object], item: object) -> int:
    """The index of `item` in `items` by identity."""
    return next(n for n, x in enumerate(items) if x is item)
