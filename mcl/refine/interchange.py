"""interchange: swap two perfectly nested for-loops, so that the inner loop walks the
fastest dimension of the arrays and consecutive iterations use the same cache line: the
cache analysis's advice "make loop j the innermost loop around a" (a `cache-may-benefit`
or `cache-no-benefit` verdict over the outer loop, paper 6.4).

Unlike the units of a foreach, the iterations of two for-loops run in an order, and the
interchange changes it. It keeps the kernel's meaning where no element (or variable) is
used by two iterations whose order the interchange reverses: every array the loops write
is accessed at one index that names each loop variable it reads on its own (`c[i, j]`,
`b[t, j + 1]`: iterations that share an element share those variables, and keep their
order), or is only summed into (`s += ...`, `c[t] += ...`: the same sum in another
order, floats within the reference's bound, which the verification checks)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mcl.feedback.findings import Finding, LoopLineFetches
from mcl.identity import Ref
from mcl.mcpl import ast
from mcl.mcpl.printer import print_expr
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.nesting import (
    access_texts,
    only_statement,
    places,
    require_fewer_strides,
    swapped_headers,
    whole_accesses,
)
from mcl.refine.places import names_in, written
from mcl.refine.refinement import (
    Parameter,
    Proposal,
    Refinement,
    Refused,
    for_loop_at,
    integer,
)

# The cache verdicts whose advice is to make the loop the innermost.
VERDICTS = ("cache-may-benefit", "cache-no-benefit")


@dataclass(frozen=True)
class ForPair:
    """Two perfectly nested for-loops: `outer`'s body is `inner` alone."""

    outer: ast.For
    inner: ast.For


class Interchange(Refinement):
    name = "interchange"
    summary = ("interchange two perfectly nested for-loops so that the inner one walks "
               "the arrays' fastest dimension")
    parameters = (
        Parameter("line", "the line of the outer for-loop of the two"),
    )
    preconditions = (
        "the two for-loops are perfectly nested: the outer one's body is the inner one "
        "alone",
        "the inner loop's header does not read the outer loop's variable, and neither body "
        "writes a loop variable: the iterations form a rectangle either way",
        "every variable the body assigns is declared in it, or only summed into (`+=`)",
        "every array the body writes is accessed at one index, which names each loop "
        "variable it reads on its own (`v` or `v` plus or minus what reads neither loop "
        "variable), or is only summed into; no call is passed an array; no barrier",
        "the swap lets more accesses walk their last index (the fastest dimension) along "
        "the inner loop than it makes stride: of the accesses whose last index reads one "
        "of the two variables alone, more read the outer one",
        "each loop's header `for (...)` stands on one line of the kernel's file",
    )

    def proposals(self, kernel: KernelAtLevel) -> list[Proposal | Refused]:
        made: dict[str, Proposal | Refused] = {}
        for finding in kernel.findings:
            outer = _asked_for(kernel, finding)
            if outer is None:
                continue
            try:
                item: Proposal | Refused = self._proposal(kernel, outer, finding)
            except Refused as refused:
                item = Refused(refused.reason, outer.span.line if outer.span else None)
            made.setdefault(item.invocation if isinstance(item, Proposal) else item.reason,
                            item)
        return list(made.values())

    def propose(self, kernel: KernelAtLevel, args: Mapping[str, str]) -> Proposal:
        line = integer(args, "line")
        return self._proposal(kernel, for_loop_at(kernel, line), None)

    def _proposal(self, kernel: KernelAtLevel, outer: ast.For,
                  finding: Finding | None) -> Proposal:
        pair = _perfect_pair(outer)
        _require_rectangle(pair)
        _require_no_reversed_use(pair)
        gained = require_fewer_strides(
            pair.inner.body, outer.var, pair.inner.var,
            f"interchanging for-loops {outer.var} and {pair.inner.var}")
        helped = places(gained)
        if finding is None or _place(finding) not in helped:
            # the verdict it answers is one about an access the interchange helps
            finding = next((f for f in kernel.findings if _asked_for(kernel, f) is outer
                            and _place(f) in helped), None)
        edits = swapped_headers(kernel, outer, pair.inner)
        line = edits[0].line
        return Proposal(
            self.name, (("line", str(line)),), line,
            f"interchange for-loop {outer.var} (line {line}) and for-loop "
            f"{pair.inner.var} (line {edits[1].line}): the inner loop then walks "
            f"{access_texts(gained)} along its last index", edits, finding)

    def still_there(self, proposal: Proposal, findings: Sequence[Finding]) -> Finding | None:
        answered = proposal.answers
        if not isinstance(answered, LoopLineFetches) or answered.span is None \
                or answered.loop is None:
            return None
        where = (answered.span.line, answered.span.column)
        return next((f for f in findings if isinstance(f, LoopLineFetches)
                     and f.code in VERDICTS and f.span is not None
                     and (f.span.line, f.span.column) == where and f.loop is not None
                     and f.loop.name == answered.loop.name), None)


def _asked_for(kernel: KernelAtLevel, finding: Finding) -> ast.For | None:
    """The for-loop of the kernel's file that a cache verdict over it advises to make the
    innermost: a verdict over a for-loop whose body is another for-loop alone."""
    if not (isinstance(finding, LoopLineFetches) and finding.code in VERDICTS
            and finding.function == kernel.function and finding.loop is not None
            and finding.loop.kind == "for" and finding.loop.span is not None):
        return None
    where = finding.loop.span
    loop = next((n for n in ast.walk(kernel.source_function.body) if isinstance(n, ast.For)
                 and n.span is not None and kernel.in_file(n.span)
                 and (n.span.line, n.span.column) == (where.line, where.column)), None)
    if loop is None or not isinstance(only_statement(loop.body), ast.For):
        return None
    return loop


def _place(finding: Finding) -> tuple[int, int] | None:
    span = finding.span
    return (span.line, span.column) if span is not None else None


def _perfect_pair(outer: ast.For) -> ForPair:
    inner = only_statement(outer.body)
    if not isinstance(inner, ast.For):
        raise Refused(f"the body of for-loop {outer.var} is not one for-loop alone: the "
                      "loops are not perfectly nested")
    return ForPair(outer, inner)


def _require_rectangle(pair: ForPair) -> None:
    outer, inner = pair.outer, pair.inner
    header = (inner.init, inner.cond, inner.step)
    if any(outer.var in names_in(part) for part in header):
        raise Refused(f"the header of for-loop {inner.var} reads {outer.var}: its bounds "
                      "depend on the outer loop")
    changed = written(inner.body) & {outer.var, inner.var}
    if changed:
        raise Refused(f"the body writes the loop variable {', '.join(sorted(changed))}")


def _require_no_reversed_use(pair: ForPair) -> None:
    """Refused where two iterations whose order the interchange reverses may use one
    element or variable (see the module's docstring)."""
    body, loops = pair.inner.body, {pair.outer.var, pair.inner.var}
    if any(isinstance(n, ast.Barrier) for n in ast.walk(body)):
        raise Refused("the loops hold a barrier")
    called = {name for n in ast.walk(body) if isinstance(n, ast.Call)
              for name in written(n)}
    if called:
        raise Refused(f"a call in the loops is passed {', '.join(sorted(called))}")
    declared = {n.name for n in ast.walk(body) if isinstance(n, ast.Decl)}
    stores = _writes(body)
    for name in sorted(written(body) - declared - loops):
        if _only_summed_into(body, name, stores.get(name, [])):
            continue  # the same sum in another order
        accesses = [a for a in whole_accesses(body) if ast.root_name(a) == name]
        if not accesses:
            raise Refused(f"the loops assign {name}, declared outside them, other than by "
                          "summing into it: an iteration's value reaches another")
        indices = {_index_text(a) for a in accesses}
        if len(indices) > 1:
            raise Refused(f"the loops write {name} and access it at several indices "
                          f"({'; '.join(sorted(indices))})")
        if not names_in(accesses[0]) & loops:
            raise Refused(f"every iteration writes the same element of {name}, other "
                          "than by summing into it")
        if not _names_each_on_its_own(accesses[0], loops):
            raise Refused(f"the index of {name} does not name each loop variable it reads "
                          "on its own: two iterations may use one element")


def _only_summed_into(body: object, name: str, stores: list[tuple[str, ast.Stmt]]
                      ) -> bool:
    """Is `name` only summed into (`name += E`, `name[...] += E`) and read nowhere else
    in `body`, E included?"""
    if not stores or any(op != "+=" for op, _ in stores):
        return False
    targets = {Ref(n) for _, stmt in stores if isinstance(stmt, ast.Assign)
               for n in ast.walk(stmt.target) if isinstance(n, ast.Name)}
    return all(Ref(n) in targets for n in ast.walk(body)
               if isinstance(n, ast.Name) and n.name == name)


def _writes(body: object) -> dict[str, list[tuple[str, ast.Stmt]]]:
    """The assignments of `body` by the variable they write: (operator, statement)."""
    out: dict[str, list[tuple[str, ast.Stmt]]] = {}
    for n in ast.walk(body):
        if isinstance(n, ast.Assign):
            root = ast.root_name(n.target)
            if root is not None:
                out.setdefault(root, []).append((n.op, n))
        elif isinstance(n, ast.IncDec):
            root = ast.root_name(n.target)
            if root is not None:
                out.setdefault(root, []).append((n.op, n))
    return out


def _names_each_on_its_own(access: ast.Index, loops: set[str]) -> bool:
    """Does each index that reads a loop variable read exactly one, as `v`, `v + E`,
    `v - E` or `E + v` with E reading no loop variable, and no variable in two indices?"""
    seen: list[str] = []
    for index in _indices(access):
        used = names_in(index) & loops
        if not used:
            continue
        if len(used) > 1:
            return False
        var = next(iter(used))
        match index:
            case ast.Name(name=name) if name == var:
                pass
            case ast.Binary(op="+" | "-", left=ast.Name(name=name), right=other) \
                    if name == var and not names_in(other) & loops:
                pass
            case ast.Binary(op="+", left=other, right=ast.Name(name=name)) \
                    if name == var and not names_in(other) & loops:
                pass
            case _:
                return False
        seen.append(var)
    return len(seen) == len(set(seen))


def _indices(access: ast.Index) -> list[ast.Expr]:
    """Every index of `access`, outermost bracket first (`d[i][j]`: i, j)."""
    groups: list[tuple[ast.Expr, ...]] = []
    node: ast.Expr = access
    while isinstance(node, ast.Index):
        groups.insert(0, node.indices)
        node = node.base
    return [e for group in groups for e in group]


def _index_text(access: ast.Index) -> str:
    return ", ".join(print_expr(e) for e in _indices(access))
