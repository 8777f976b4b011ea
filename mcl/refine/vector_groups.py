"""vector-groups: let each unit of an elementwise foreach take VEC consecutive elements,
read into registers as one vector load per array before any element is computed and
stored as one vector store per array after all of them (kernels/blackscholes/hopper_v2's
form, written by hand in round 5 of the performance work).

The translation of a perfect kernel with one thread per element (paper Appendix A) has
each lane of a warp load 4 bytes of each array; side by side the lanes are coalesced
(paper 6.4), but each load instruction moves 4 bytes per lane, and a lane computes its
element before it loads anything else. Here unit g (the same number the element had)
takes the elements g * VEC .. g * VEC + VEC - 1: a loop `for (c = 0; c < VEC; c++)`
copies them between the array and a register array, which the code generator turns into
one 16-byte access where it proves contiguity and alignment (`codegen.vector_width` of
the leaf's mapping, docs/codegen.md "Vector copies"; `g * VEC` is a multiple of VEC), and
all of a unit's loads are issued before its first element is computed. A group that runs
past the bound is read and stored element by element under a guard, and its elements
past the bound are not computed, so every element below the bound is computed once, by
the body as written (comments and all), the element's index `i` declared anew.

The time model charges a kernel's bytes, not its access instructions: it estimates the
next version as fast as the original (the same bytes move), so the rewrite is offered
only to a search that measures (`Refinement.measured_only`); by name it applies always."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from mcl.identity import Ref
from mcl.mcpl import ast
from mcl.mcpl.printer import print_expr
from mcl.refine.edits import TextEdit, body_lines, edited_span_text, indentation, line_of
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.name_counts import static_counts
from mcl.refine.nesting import whole_accesses
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
from mcl.refine.unit_rows import (
    block_count,
    count_edit,
    guard_of,
    int_declarations,
    require_block_count,
    require_groups,
    require_row_numbering,
    text_of,
)

# The element types a vector copy is generated for (mcl/codegen/vectorize.py).
_VECTOR_TYPES = ("float", "int")


@dataclass(frozen=True)
class Elementwise:
    """The parts of an elementwise foreach: the three foreach loops, the element's
    declaration and name, its bound, the guard, the blocks' K (units per block, as
    written) and the parameter arrays the guard reads and writes at [element]."""

    blocks: ast.Foreach
    warps: ast.Foreach
    threads: ast.Foreach
    element: ast.Decl
    bound: ast.Expr
    guard: ast.If
    per_block: ast.Expr
    read: tuple[str, ...]
    stored: tuple[str, ...]
    types: Mapping[str, str]


class VectorGroups(Refinement):
    name = "vector-groups"
    summary = ("let each unit take VEC consecutive elements of an elementwise foreach, "
               "loaded and stored as vector accesses, all loads before any element")
    parameters = (
        Parameter("line", "the line of the `if (i < BOUND)` around the element's statements"),
    )
    preconditions = (
        "the leaf's mapping turns copy loops of VEC contiguous elements into vector "
        "accesses (`codegen.vector_width` VEC >= 2, docs/codegen.md)",
        "the `if (i < BOUND)`, without else, ends the body of the innermost of exactly "
        "three foreach loops over the level's last three par_groups (blocks, warps, "
        "threads in lock-step); before it stand only int declarations, i's among them; i "
        "numbers the units one each in order, `(b * WARPS + w) * THREADS + t`, the counts "
        "of warps and threads constant (named constants, or counts of the description a "
        "translation declares), and the blocks' count is `(BOUND + K - 1) / K` with K = "
        "WARPS * THREADS (every element below BOUND has a unit)",
        "the `if` reads none of the foreach variables and no index declaration but i, "
        "does not write i, and holds no barrier and no return",
        "every access of a parameter array in the `if` is `a[i]` of a one-dimensional "
        "array of float or int, no array is passed whole to a call, and an array the "
        "`if` writes but does not read is assigned `a[i] = e;` by a statement of the "
        "`if`'s block itself (so each element's value is set before it is stored)",
        "the `if`'s block and the threads' foreach are laid out `... {` ... `}`, the "
        "element's declaration stands on its line",
    )
    measured_only = ("the time model charges bytes, not access instructions: it estimates "
                     "the vector accesses as fast as the original's 4-byte ones, so only "
                     "a search that measures (`mcl refine --measure`) weighs it; apply it "
                     "by name to try it")

    def proposals(self, kernel: KernelAtLevel) -> list[Proposal | Refused]:
        # Only an elementwise foreach (every parameter array read at [i]) is a
        # candidate; a guard of another shape is passed over in silence.
        out: list[Proposal | Refused] = []
        for guard in _guards(kernel):
            try:
                shape = elementwise(kernel, guard)
            except Refused:
                continue
            assert guard.span is not None
            try:
                out.append(self._propose(kernel, shape))
            except Refused as refused:
                out.append(Refused(refused.reason, guard.span.line))
        return out

    def propose(self, kernel: KernelAtLevel, args: Mapping[str, str]) -> Proposal:
        line = integer(args, "line")
        guard = node_at(kernel, line, ast.If)
        if guard is None:
            raise Refused(f"no `if` starts at line {line} of {kernel.path.name}")
        return self._propose(kernel, elementwise(kernel, guard))

    def _propose(self, kernel: KernelAtLevel, shape: Elementwise) -> Proposal:
        width = vector_width(kernel)
        private = _private_space(kernel)
        for array, kind in shape.types.items():
            if kind not in _VECTOR_TYPES:
                raise Refused(f"{array} holds {kind}: vector copies are generated for "
                              f"{' and '.join(_VECTOR_TYPES)} only")
        _require_set_before_stored(shape)
        function = kernel.source_function
        assert function.span is not None and shape.guard.span is not None
        taken = every_name(function) | {c.name for c in kernel.constants()} \
            | {f.name for f in kernel.source.program.main.functions}
        vec = fresh_name("VEC", taken)
        group = fresh_name(f"{shape.element.name}Group", taken | {vec})
        lane = fresh_name("c", taken | {vec, group})
        registers = {a: fresh_name(f"{a}Vec", taken | {vec, group, lane})
                     for a in (*shape.read, *shape.stored)}
        names = _Names(vec, group, lane, registers, private, text_of(kernel, shape.bound))
        k = text_of(kernel, shape.per_block)
        line = shape.guard.span.line
        edits = (
            TextEdit.inserting(function.span.line, 1, _constant_text(kernel, vec, width)),
            count_edit(kernel, shape.blocks, f"({names.bound} + {k} * {vec} - 1) / ({k} * {vec})"),
            _renamed_element(kernel, shape.element, group),
            TextEdit(line, 1, shape.guard.span.end_line + 1, 1,
                     _new_guard(kernel, shape, names)),
        )
        moved = " and ".join(f"{', '.join(arrays)} {how}" for arrays, how in (
            (shape.read, "loaded"), (shape.stored, "stored")) if arrays)
        return Proposal(
            self.name, (("line", str(line)),), line,
            f"unit {group} takes the {vec} = {width} consecutive elements {group} * {vec} + "
            f"{lane}: {moved} as {width}-wide vector accesses"
            + (", every load before the first element" if shape.read else ""), edits)


def vector_width(kernel: KernelAtLevel) -> int:
    """The elements a copy loop moves in one vector access at the kernel's leaf
    (`codegen.vector_width` of its mapping to the default backend); Refused where none."""
    from mcl.backends import DEFAULT_BACKEND, load_mapping
    from mcl.diagnostics import MclError

    if not kernel.library.is_leaf(kernel.level):
        raise Refused(f"{kernel.level} is not a leaf: no code is generated, no vector "
                      "access made")
    try:
        width = load_mapping(kernel.library.get(kernel.level),
                             language=DEFAULT_BACKEND).vector_width
    except MclError:
        width = 0
    if width < 2:
        raise Refused(f"the mapping of {kernel.level} makes no vector accesses "
                      "(codegen.vector_width is off)")
    return width


def elementwise(kernel: KernelAtLevel, guard: ast.If) -> Elementwise:
    """The elementwise foreach that `guard` ends; Refused with the precondition that
    fails."""
    function = kernel.source_function
    path = path_to(function.body, guard)
    foreach = [n for n in path if isinstance(n, ast.Foreach)]
    if len(foreach) != 3:
        raise Refused(f"the `if` is inside {len(foreach)} foreach loop(s), not three (over "
                      "blocks, warps and threads)")
    blocks, warps, threads = foreach
    require_groups(kernel, (blocks,), warps, threads)
    env = {**constant_env(kernel.source.program.main),
           **{decl.name: value for decl, value in static_counts(kernel)}}
    counts = [constant_int(f.count, env) for f in (warps, threads)]
    if None in counts:
        raise Refused(f"the counts of foreach {warps.var} and {threads.var} are not "
                      "constants")
    warps_n, lanes_n = (c for c in counts if c is not None)
    for above, below in ((blocks, warps), (warps, threads)):
        stmts = above.body.stmts if isinstance(above.body, ast.Block) else [above.body]
        held = [s for s in stmts if not isinstance(s, ast.Decl)]
        if len(held) != 1 or held[0] is not below:
            raise Refused(f"foreach {above.var} holds more than foreach {below.var}")
    body = threads.body
    if not isinstance(body, ast.Block) or not body.stmts or body.stmts[-1] is not guard \
            or guard.orelse is not None:
        raise Refused(f"the `if` without else does not end the body of foreach "
                      f"{threads.var}")
    indices = body.stmts[:-1]
    decls = int_declarations(indices, threads)
    row, bound = guard_of(guard)
    element = next((d for d in decls if d.name == row), None)
    if element is None:
        raise Refused(f"{row} of the guard is not declared before it")
    require_row_numbering(decls, row, (blocks.var, warps.var, threads.var),
                          (warps_n, lanes_n), {}, env)
    require_block_count(kernel, blocks, bound, warps_n * lanes_n, env)
    hidden = {f.var for f in foreach} | {d.name for d in decls if d.name != row}
    read = (names_in(guard.then) | names_in(bound)) & hidden
    if read:
        raise Refused(f"the `if` reads {', '.join(sorted(read))}: only the element's index "
                      "may tell the units apart, as the units will compute other elements")
    if row in written(guard.then):
        raise Refused(f"the `if` writes {row}")
    if any(isinstance(n, ast.Barrier | ast.Return) for n in ast.walk(guard)):
        raise Refused("the `if` holds a barrier or a return")
    arrays = _arrays(function)
    loaded, stored = _accesses(guard, row, arrays)
    if not loaded and not stored:
        raise Refused("the `if` accesses no parameter array")
    count, _ = block_count(kernel, blocks)
    assert isinstance(count, ast.Binary)
    return Elementwise(blocks, warps, threads, element, bound, guard, count.right,
                       tuple(loaded), tuple(stored), {a: arrays[a] for a in loaded + stored})


def _guards(kernel: KernelAtLevel) -> list[ast.If]:
    """The `if`s of the kernel's own file that end the body of a foreach."""
    out = []
    for n in ast.walk(kernel.source_function.body):
        if isinstance(n, ast.Foreach) and isinstance(n.body, ast.Block) and n.body.stmts:
            last = n.body.stmts[-1]
            if isinstance(last, ast.If) and kernel.in_file(last.span):
                out.append(last)
    return out


def _arrays(function: ast.Function) -> dict[str, str]:
    """The function's one-dimensional array parameters and their element types."""
    out: dict[str, str] = {}
    for p in function.params:
        if isinstance(p.type, ast.ArrayType) and p.type.rank == 1:
            element = p.type.element
            out[p.name] = element.name if isinstance(element, ast.Prim) else str(element)
    return out


def _accesses(guard: ast.If, row: str, arrays: Mapping[str, str]
              ) -> tuple[list[str], list[str]]:
    """The parameter arrays the guard reads and writes, each at [row] only (arrays it
    declares itself are its own business)."""
    own = {n.name for n in ast.walk(guard.then) if isinstance(n, ast.Decl)}
    targets = {Ref(n.target) for n in ast.walk(guard.then)
               if isinstance(n, ast.Assign | ast.IncDec)}
    compound = {Ref(n.target) for n in ast.walk(guard.then)
                if isinstance(n, ast.IncDec) or (isinstance(n, ast.Assign) and n.op != "=")}
    loaded: list[str] = []
    stored: list[str] = []
    accessed = whole_accesses(guard.then)
    for access in accessed:
        root = ast.root_name(access)
        if root is None or root in own:
            continue
        if root not in arrays or not (
                isinstance(access.base, ast.Name) and len(access.indices) == 1
                and isinstance(access.indices[0], ast.Name)
                and access.indices[0].name == row):
            raise Refused(f"{print_expr(access)} is not an access of a one-dimensional "
                          f"parameter array at [{row}]: the foreach is not elementwise")
        if Ref(access) not in targets or Ref(access) in compound:
            loaded.append(root)
        if Ref(access) in targets:
            stored.append(root)
    inside = {Ref(a.base) for a in accessed}
    whole = sorted({n.name for n in ast.walk(guard.then) if isinstance(n, ast.Name)
                    and n.name in arrays and Ref(n) not in inside})
    if whole:
        raise Refused(f"the `if` uses {', '.join(whole)} other than by element (a call "
                      "may read any element)")
    return list(dict.fromkeys(loaded)), list(dict.fromkeys(stored))


def _require_set_before_stored(shape: Elementwise) -> None:
    """Each array stored but not loaded is assigned by a statement of the guard's block
    itself: its register holds the element's value on every path."""
    then = shape.guard.then
    stmts = then.stmts if isinstance(then, ast.Block) else [then]
    row = shape.element.name
    set_always = {ast.root_name(s.target) for s in stmts
                  if isinstance(s, ast.Assign) and s.op == "="
                  and isinstance(s.target, ast.Index)
                  and print_expr(s.target) == f"{ast.root_name(s.target)}[{row}]"}
    unset = [a for a in shape.stored if a not in shape.read and a not in set_always]
    if unset:
        raise Refused(f"{', '.join(unset)} is written under a condition and not read: a "
                      "group's store would write elements the original leaves as they are")


def _private_space(kernel: KernelAtLevel) -> str:
    hwd = kernel.library.get(kernel.source_function.hwd)
    spaces = [s.name for s in hwd.executing_unit().spaces if not s.read_only]
    if not spaces:
        raise Refused(f"a {hwd.executing_unit().name} of {hwd.name} declares no writable "
                      "memory space for the group's elements")
    return spaces[0]


def _constant_text(kernel: KernelAtLevel, vec: str, width: int) -> str:
    return (f"// Elements per unit: one vector access per array (codegen.vector_width of "
            f"{kernel.level}).\nconst int {vec} = {width};\n\n")


def _renamed_element(kernel: KernelAtLevel, element: ast.Decl, group: str) -> TextEdit:
    """`int i = ...;` -> `int iGroup = ...;`: the unit's number now counts groups."""
    assert element.span is not None
    row = line_of(kernel.text, element.span.line)
    found = re.compile(rf"int\s+({re.escape(element.name)})\b").match(
        row, element.span.column - 1)
    if found is None or element.span.line != element.span.end_line:
        raise Refused(f"the declaration of {element.name} does not stand on one line")
    return TextEdit(element.span.line, found.start(1) + 1, element.span.line,
                    found.end(1) + 1, group)


@dataclass(frozen=True)
class _Names:
    vec: str
    group: str
    lane: str
    registers: Mapping[str, str]
    private: str
    bound: str

    def element(self) -> str:
        return f"{self.group} * {self.vec} + {self.lane}"


def _new_guard(kernel: KernelAtLevel, shape: Elementwise, names: _Names) -> str:
    """The registers, the group's loads, its elements computed by the body as written
    (its accesses reading the registers), and the group's stores."""
    guard, text = shape.guard, kernel.text
    assert guard.span is not None and guard.then.span is not None
    body_lines(text, guard.span, guard.then.span, "the `if`")
    ind = indentation(text, guard.span.line)
    inner = indentation(text, guard.then.span.line + 1)
    step = inner[len(ind):] if inner.startswith(ind) and len(inner) > len(ind) else "    "
    row, vec, lane, bound = shape.element.name, names.vec, names.lane, names.bound
    at = names.element()
    whole = f"{names.group} * {vec} + {vec} <= {bound}"
    out = [f"{ind}// unit {names.group} takes elements {names.group} * {vec} .. + {vec} - 1: "
           "each array's are one vector",
           f"{ind}// access (a copy loop of {vec} elements), all loads before the first "
           "element is computed"]
    out += [f"{ind}{names.private} {shape.types[a]}[{vec}] {r};"
            for a, r in names.registers.items()]

    def copies(arrays: tuple[str, ...], load: bool) -> list[str]:
        def copy(a: str) -> str:
            r = names.registers[a]
            return f"{r}[{lane}] = {a}[{at}];" if load else f"{a}[{at}] = {r}[{lane}];"
        if not arrays:
            return []
        head = f"for (int {lane} = 0; {lane} < {vec}; {lane}++) {{"
        lines = [f"{ind}if ({whole}) {{"]
        for a in arrays:
            lines += [f"{ind}{step}{head}", f"{ind}{step * 2}{copy(a)}", f"{ind}{step}}}"]
        lines += [f"{ind}}} else {{", f"{ind}{step}{head}",
                  f"{ind}{step * 2}if ({at} < {bound}) {{"]
        lines += [f"{ind}{step * 3}{copy(a)}" for a in arrays]
        lines += [f"{ind}{step * 2}}}", f"{ind}{step}}}", f"{ind}}}"]
        return lines

    out += copies(shape.read, load=True)
    out += [f"{ind}for (int {lane} = 0; {lane} < {vec}; {lane}++) {{",
            f"{ind}{step}int {row} = {at};",
            f"{ind}{step}if ({row} < {bound}) {{"]
    out += [(step + line) if line.strip() else line for line in _body(kernel, shape, names)]
    out += [f"{ind}{step}}}", f"{ind}}}"]
    out += copies(shape.stored, load=False)
    return "\n".join(out) + "\n"


def _body(kernel: KernelAtLevel, shape: Elementwise, names: _Names) -> list[str]:
    """The lines of the guard's block as written, each access `a[i]` reading the
    element's register `aVec[c]`, indented one level deeper."""
    then = shape.guard.then
    assert then.span is not None
    edits = []
    for access in whole_accesses(then):
        root = ast.root_name(access)
        if access.span is not None and root is not None and root in names.registers:
            edits.append(TextEdit.replacing(access.span,
                                            f"{names.registers[root]}[{names.lane}]"))
    block = edited_span_text(kernel.text, then.span, edits)
    return block.split("\n")[1:-1]
