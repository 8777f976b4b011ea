"""vector-loads: interleave the runs of consecutive elements that the lanes of a vector
unit each work through, so that the lanes' loads and stores of one iteration touch
consecutive elements, one vector load or store, instead of elements a run apart.

In MCPL a vector load is the lanes of a `vectors` foreach reading neighbouring elements
together (the par_group whose units execute one instruction, the description's
simd_group: paper 5.2, "mic"). A kernel that gives each lane a run of ELEMS consecutive
elements, `i = (t * LANES + v) * ELEMS + e` in iteration e, makes one vector load
gather 16 elements 4 * ELEMS bytes apart; `i = (t * ELEMS + e) * LANES + v` gives each
lane as many elements and lets the lanes of iteration e read LANES consecutive ones. It
is the paper's Black-Scholes step from mic to xeon_phi ("bad cache behavior for the
vector instructions", paper 7, Table III). The same rewrite lets the threads of a warp
read consecutive elements where each thread works through a run (GPU levels have no
vector types in MCPL: a warp's threads are its lanes). The new index is a permutation
of the old one within each block of LANES * ELEMS elements, so every element is still
worked on once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mcl.feedback.findings import Finding, LoopLineFetches, UncoalescedAccess
from mcl.identity import Ref
from mcl.mcpl import ast
from mcl.mcpl.printer import print_expr
from mcl.refine.edits import TextEdit, line_of, span_text
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.loops import loop_shape
from mcl.refine.nesting import whole_accesses
from mcl.refine.places import constant_env, constant_int, names_in, path_to, written
from mcl.refine.refinement import Parameter, Proposal, Refinement, Refused, integer


@dataclass(frozen=True)
class RunIndex:
    """`int index = (base * lanes + lane) * run + step;` in the for-loop `loop` over
    `step`, inside the foreach `lanes_loop` over `lane`."""

    decl: ast.Decl
    base: ast.Expr
    lanes: ast.Expr
    run: ast.Expr
    lanes_loop: ast.Foreach
    loop: ast.For


class VectorLoads(Refinement):
    name = "vector-loads"
    summary = ("interleave the lanes' runs of consecutive elements so that each vector "
               "load or store reads consecutive elements")
    parameters = (
        Parameter("line", "the line of the index `int i = (t * LANES + v) * ELEMS + e;`"),
    )
    preconditions = (
        "the index is a local `int i = (A * LANES + v) * ELEMS + e;` of the kernel's own "
        "file, in a for-loop `for (int e = 0; e < ELEMS; e++)` inside a `foreach (int v "
        "in LANES G)`, LANES and ELEMS constants of the file",
        "the units of G execute one load together at the level (the lanes of the "
        "description's simd_group: a vector unit, or a warp)",
        "A reads neither v nor e, nor anything the for-loop writes",
        "v and e are read nowhere else in the foreach body: the body names its element "
        "through i alone",
        "the for-loop carries nothing from one iteration to the next: every variable its "
        "body assigns is declared in its body, i included, every array it writes is "
        "accessed in it at `[..., i]` alone (the other indices unchanged by the loop), and "
        "it holds no barrier",
    )

    def proposals(self, kernel: KernelAtLevel) -> list[Proposal | Refused]:
        # Listed where a finding about an access of the loop asks for it: an index of
        # another shape, or one nothing asks about, is passed over in silence.
        out: list[Proposal | Refused] = []
        for decl in _index_candidates(kernel):
            try:
                index = _run_index(kernel, decl)
            except Refused:
                continue
            if _asking(kernel, index) is None:
                continue
            try:
                out.append(self._propose(kernel, decl))
            except Refused as refused:
                out.append(Refused(refused.reason, decl.span.line if decl.span else None))
        return out

    def propose(self, kernel: KernelAtLevel, args: Mapping[str, str]) -> Proposal:
        line = integer(args, "line")
        found = [d for d in ast.walk(kernel.source_function.body) if isinstance(d, ast.Decl)
                 and d.init is not None and d.span is not None and d.span.line == line
                 and kernel.in_file(d.span)]
        if len(found) != 1:
            raise Refused(f"line {line} declares no single local with a value")
        return self._propose(kernel, found[0])

    def _propose(self, kernel: KernelAtLevel, decl: ast.Decl) -> Proposal:
        index = _run_index(kernel, decl)
        _require_lockstep(kernel, index.lanes_loop)
        _require_independent_iterations(index)
        assert decl.span is not None
        text = (f"({_text(kernel, index.base, tight=True)} * {_text(kernel, index.run)} + "
                f"{index.loop.var}) * {_text(kernel, index.lanes)} + {index.lanes_loop.var}")
        return Proposal(
            self.name, (("line", str(decl.span.line)),), decl.span.line,
            f"{decl.name} = {text}: in iteration {index.loop.var} the lanes of "
            f"{index.lanes_loop.var} work on consecutive elements, one vector access",
            (_replacing_value(kernel, decl, text),), _asking(kernel, index))

    def still_there(self, proposal: Proposal, findings: Sequence[Finding]) -> Finding | None:
        answered = proposal.answers
        if answered is None or answered.span is None:
            return None
        where = (answered.span.line, answered.span.column)
        for f in findings:
            if f.span is None or (f.span.line, f.span.column) != where:
                continue
            if isinstance(answered, UncoalescedAccess) and isinstance(f, UncoalescedAccess):
                return f
            if (isinstance(answered, LoopLineFetches) and isinstance(f, LoopLineFetches)
                    and f.code == answered.code and f.loop is not None
                    and answered.loop is not None and f.loop.name == answered.loop.name):
                return f
        return None


def _index_candidates(kernel: KernelAtLevel) -> list[ast.Decl]:
    """Local int declarations of the shape `(A * L + v) * E + e`."""
    return [d for d in ast.walk(kernel.source_function.body)
            if isinstance(d, ast.Decl) and d.span is not None and kernel.in_file(d.span)
            and _shape(d.init) is not None]


def _shape(e: ast.Expr | None) -> tuple[ast.Expr, ast.Expr, str, ast.Expr, str] | None:
    """(A, L, v, E, e) of `(A * L + v) * E + e`; None for another shape."""
    match e:
        case ast.Binary(op="+", left=ast.Binary(op="*", left=ast.Binary(
                op="+", left=ast.Binary(op="*", left=base, right=lanes),
                right=ast.Name(name=lane)), right=run), right=ast.Name(name=step)):
            return base, lanes, lane, run, step
        case _:
            return None


def _run_index(kernel: KernelAtLevel, decl: ast.Decl) -> RunIndex:
    shape = _shape(decl.init)
    if shape is None or not (isinstance(decl.type, ast.Prim) and decl.type.name == "int"):
        raise Refused(f"{decl.name} is not `int {decl.name} = (A * LANES + v) * ELEMS + e`")
    base, lanes, lane, run, step = shape
    path = path_to(kernel.source_function.body, decl)
    lanes_loop = next((n for n in reversed(path) if isinstance(n, ast.Foreach)
                       and n.var == lane), None)
    loop = next((n for n in reversed(path) if isinstance(n, ast.For) and n.var == step), None)
    if lanes_loop is None or loop is None or path.index(lanes_loop) > path.index(loop):
        raise Refused(f"{decl.name} is not in a for-loop over {step} inside a foreach "
                      f"over {lane}")
    env = constant_env(kernel.source.program.main)
    shape_of = loop_shape(loop, env)
    count, width = constant_int(lanes_loop.count, env), constant_int(lanes, env)
    trips = shape_of.trips(env) if shape_of is not None else None
    if count is None or count != width:
        raise Refused(f"the foreach over {lane} does not run {print_expr(lanes)} units, a "
                      "constant")
    if shape_of is None or shape_of.start != 0 or shape_of.step != 1 \
            or trips is None or trips != constant_int(run, env):
        raise Refused(f"the for-loop over {step} does not run from 0 to {print_expr(run)} "
                      "by 1, a constant")
    if names_in(base) & ({lane, step} | written(loop)):
        raise Refused(f"the base of {decl.name} reads {lane}, {step} or what the for-loop "
                      "writes")
    return RunIndex(decl, base, lanes, run, lanes_loop, loop)


def _require_lockstep(kernel: KernelAtLevel, lanes_loop: ast.Foreach) -> None:
    hwd = kernel.library.get(kernel.level)
    group = hwd.par_group(lanes_loop.group)
    unit = group.unit if group is not None else None
    if unit is None or hwd.lockstep(unit.name) is not group:
        raise Refused(f"the units of {lanes_loop.group} do not execute one load together "
                      f"at {kernel.level}: no vector access to make")


def _require_independent_iterations(index: RunIndex) -> None:
    lane, step, name = index.lanes_loop.var, index.loop.var, index.decl.name
    header = {Ref(n) for part in (index.loop.init, index.loop.cond, index.loop.step)
              for n in ast.walk(part)}
    others = [n for n in ast.walk(index.lanes_loop.body) if isinstance(n, ast.Name)
              and n.name in (lane, step) and Ref(n) not in header]
    in_index = [n for n in ast.walk(index.decl.init) if isinstance(n, ast.Name)
                and n.name in (lane, step)]
    if len(others) != len(in_index):
        raise Refused(f"{lane} or {step} is read outside the index {name}: the body "
                      "does not name its element through the index alone")
    declared = {n.name for n in ast.walk(index.loop.body) if isinstance(n, ast.Decl)}
    carried = (written(index.loop.body) - declared - {step}) - _stored_arrays(index.loop)
    if carried:
        raise Refused(f"the for-loop over {step} writes {', '.join(sorted(carried))}, "
                      "declared outside it: an iteration's value reaches the next")
    if _assigns(index.loop.body, name):
        raise Refused(f"the for-loop writes {name}")
    changed = written(index.loop.body)
    for array in sorted(_stored_arrays(index.loop)):
        for access in whole_accesses(index.loop.body):
            if ast.root_name(access) != array:
                continue
            *rest, last = access.indices
            if not (isinstance(last, ast.Name) and last.name == name) \
                    or any(names_in(e) & changed for e in rest):
                raise Refused(f"the for-loop writes {array} and accesses "
                              f"{print_expr(access)}: each iteration must use its own "
                              f"element, {array}[..., {name}], alone")
    if any(isinstance(n, ast.Barrier) for n in ast.walk(index.loop.body)):
        raise Refused(f"the for-loop over {step} holds a barrier")


def _stored_arrays(loop: ast.For) -> set[str]:
    """Arrays the loop stores elements of (a store by element carries nothing)."""
    out: set[str] = set()
    for n in ast.walk(loop.body):
        if isinstance(n, (ast.Assign, ast.IncDec)) and isinstance(n.target, ast.Index):
            root = ast.root_name(n.target)
            if root is not None:
                out.add(root)
    return out


def _assigns(node: object, name: str) -> bool:
    return any(isinstance(n, (ast.Assign, ast.IncDec)) and ast.root_name(n.target) == name
               for n in ast.walk(node))


def _asking(kernel: KernelAtLevel, index: RunIndex) -> Finding | None:
    """The finding about an access of the loop's body that the lanes make a run apart:
    a `cache-no-benefit` over the lanes' loop, or an `uncoalesced` access."""
    span = index.loop.span
    if span is None:
        return None
    lane = index.lanes_loop.var
    for f in kernel.findings:
        if f.function != kernel.function or f.span is None or not kernel.in_file(f.span):
            continue
        if not (span.line <= f.span.line <= span.end_line):
            continue
        if isinstance(f, UncoalescedAccess):
            return f
        if (isinstance(f, LoopLineFetches) and f.code == "cache-no-benefit"
                and f.loop is not None and f.loop.name == lane):
            return f
    return None


def _replacing_value(kernel: KernelAtLevel, decl: ast.Decl, text: str) -> TextEdit:
    """The edit that gives `decl` the value `text`: what stands between its `=` and its
    `;`, which must share its line."""
    assert decl.span is not None
    row = line_of(kernel.text, decl.span.line)
    equals = row.find("=", decl.span.column - 1)
    end = row.find(";", equals)
    if equals < 0 or end < 0:
        raise Refused(f"the declaration of {decl.name} (line {decl.span.line}) does not "
                      "stand on one line")
    return TextEdit(decl.span.line, equals + 2, decl.span.line, end + 1, f" {text}")


# Operators that bind at least as tight as `*`: `E * x` needs no parentheses around E.
_TIGHT = frozenset({"*", "/", "%", "^"})


def _text(kernel: KernelAtLevel, e: ast.Expr, tight: bool = False) -> str:
    """`e` as written; in parentheses where it is a sum and `tight` (a factor)."""
    if e.span is None:
        raise Refused("an index part has no place in the source")
    text = span_text(kernel.text, e.span)
    if tight and isinstance(e, ast.Binary) and e.op not in _TIGHT:
        return f"({text})"
    return text
