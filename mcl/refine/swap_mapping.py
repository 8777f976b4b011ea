"""swap-mapping: swap two perfectly nested foreach loops of one par_group, so that the
units that run side by side (the lanes of a warp, the innermost foreach once the kernel
is translated to a level with warps) walk the fastest dimension of an array: the lock-step
analysis's `uncoalesced` suggestion, a `CoalesceAccess` (paper 6.5).

MCPL lets foreach loops of one par_group nest, and a foreach's count may not depend on
the index of an outer foreach (paper 4); translation makes the innermost of such a nest
the fastest thread index (paper 6, "Translating foreach statements"). Which unit runs
which pair of indices is all that the swap changes: the units of a foreach are unordered,
each with its own indices, so no order between them is there to break."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mcl.diagnostics import Span
from mcl.feedback.findings import Finding, UncoalescedAccess, every
from mcl.mcpl import ast
from mcl.mcpl.printer import print_expr
from mcl.refine.answers import ANSWERS
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.nesting import (
    only_statement,
    places,
    require_fewer_strides,
    swapped_headers,
    whole_accesses,
)
from mcl.refine.places import names_in, path_to
from mcl.refine.refinement import (
    Parameter,
    Proposal,
    Refinement,
    Refused,
    integer,
    node_at,
    uncoalesced_still_there,
)


@dataclass(frozen=True)
class ForeachPair:
    """Two perfectly nested foreach loops: `outer`'s body is `inner` alone."""

    outer: ast.Foreach
    inner: ast.Foreach


class SwapMapping(Refinement):
    name = "swap-mapping"
    summary = ("swap two nested foreach loops so that neighbouring units access "
               "neighbouring elements")
    parameters = (
        Parameter("line", "the line of the outer foreach of the two"),
    )
    preconditions = (
        "the two foreach loops are perfectly nested: the outer one's body is the inner "
        "one alone (nothing before or after it, no declaration between them)",
        "both are over the same par_group (the units of other groups share memory and "
        "barriers, which a swap would change)",
        "neither count reads the other's index (MCPL forbids the inner count to read the "
        "outer index; the swapped inner count must not read it either)",
        "the body holds no barrier among the units of the two loops (one inside a foreach "
        "of another par_group waits for those units alone): which units wait for each "
        "other would change",
        "from a finding: the access's last index (its fastest dimension) reads the outer "
        "loop's index and not the inner one's, so that after the swap neighbouring units "
        "access neighbouring elements",
        "the swap makes fewer accesses of the body walk a dimension across the units side "
        "by side than it lets walk one along them: of the accesses whose last index reads "
        "one of the two indices alone, more read the outer one",
        "each foreach's header `foreach (...)` stands on one line of the kernel's file",
    )
    answers = ANSWERS["swap-mapping"]

    def proposals(self, kernel: KernelAtLevel) -> list[Proposal | Refused]:
        return self.answer_each_once(
            kernel, every(kernel.findings, UncoalescedAccess, kernel.function))

    def answer(self, kernel: KernelAtLevel, finding: Finding) -> Proposal:
        if not isinstance(finding, UncoalescedAccess):
            raise Refused(f"{self.name} answers uncoalesced findings, not {finding.code}")
        access = _source_access(kernel, finding.access.span)
        text = print_expr(access)
        loops = [n for n in path_to(kernel.source_function.body, access)
                 if isinstance(n, ast.Foreach)]
        if len(loops) < 2:
            raise Refused(f"{text} is inside one foreach only: there is no second foreach "
                          "to swap its mapping with")
        pair = _perfect_pair(loops[-2], loops[-1])
        fastest = names_in(access.indices[-1])
        if pair.outer.var not in fastest or pair.inner.var in fastest:
            raise Refused(f"the last index of {text} does not read {pair.outer.var} alone "
                          f"of {pair.outer.var}, {pair.inner.var}: swapping the loops would "
                          "not let neighbouring units access neighbouring elements")
        return self._proposal(kernel, pair, finding)

    def propose(self, kernel: KernelAtLevel, args: Mapping[str, str]) -> Proposal:
        line = integer(args, "line")
        outer = node_at(kernel, line, ast.Foreach)
        if outer is None:
            raise Refused(f"no foreach starts at line {line}")
        inner = only_statement(outer.body)
        if not isinstance(inner, ast.Foreach):
            raise Refused(f"the body of foreach {outer.var} (line {line}) is not one "
                          "foreach alone: the loops are not perfectly nested")
        return self._proposal(kernel, _perfect_pair(outer, inner), None)

    def _proposal(self, kernel: KernelAtLevel, pair: ForeachPair,
                  finding: Finding | None) -> Proposal:
        outer, inner = pair.outer, pair.inner
        helped = places(require_fewer_strides(inner.body, outer.var, inner.var,
                                              f"swapping foreach {outer.var} and {inner.var}"))
        if not isinstance(finding, UncoalescedAccess) or _place(finding) not in helped:
            # the finding it answers is one about an access the swap helps
            finding = next((f for f in kernel.findings if isinstance(f, UncoalescedAccess)
                            and f.function == kernel.function and _place(f) in helped),
                           None)
        edits = swapped_headers(kernel, outer, inner)
        line = edits[0].line
        return Proposal(
            self.name, (("line", str(line)),), line,
            f"swap foreach {outer.var} (line {line}) and foreach {inner.var} (line "
            f"{edits[1].line}): the units side by side then walk {outer.var}",
            edits, finding)

    def still_there(self, proposal: Proposal, findings: Sequence[Finding]) -> Finding | None:
        return uncoalesced_still_there(proposal, findings)


def _source_access(kernel: KernelAtLevel, span: Span | None) -> ast.Index:
    """The whole access (`a[j, i]`, not its part `a[j]` of `a[j][i]`) the finding
    names, in the kernel's own file."""
    if span is None or not kernel.in_file(span):
        raise Refused("the finding names no access of the kernel's own file")
    body = kernel.source_function.body
    whole = [n for n in whole_accesses(body) if n.span is not None
             and (n.span.line, n.span.column) == (span.line, span.column)]
    if len(whole) != 1:
        raise Refused(f"no single access at line {span.line}, column {span.column}")
    return whole[0]


def _perfect_pair(outer: ast.Foreach, inner: ast.Foreach) -> ForeachPair:
    """The two loops as a pair that may be swapped; `Refused` with the precondition that
    fails."""
    if only_statement(outer.body) is not inner:
        raise Refused(f"foreach {outer.var} holds more than foreach {inner.var}: the loops "
                      "are not perfectly nested")
    if outer.group != inner.group:
        raise Refused(f"foreach {outer.var} is over {outer.group} and foreach {inner.var} "
                      f"over {inner.group}: only loops of one par_group may be swapped")
    if outer.var in names_in(inner.count) or inner.var in names_in(outer.count):
        raise Refused(f"the counts of foreach {outer.var} and {inner.var} read each other's "
                      "index")
    if _waits_among(inner.body, inner.group):
        raise Refused(f"the body of foreach {inner.var} holds a barrier among its "
                      f"{inner.group}: the units that wait for each other would change")
    return ForeachPair(outer, inner)


def _waits_among(node: object, group: str) -> bool:
    """Does a barrier below `node` stand among units of `group`, with no foreach of
    another par_group between (a barrier inside a block's threads waits for those
    threads, whichever block runs them)?"""
    if isinstance(node, ast.Barrier):
        return True
    if isinstance(node, ast.Foreach) and node.group != group:
        return False
    return any(_waits_among(child, group) for child in ast.children(node))


def _place(finding: UncoalescedAccess) -> tuple[int, int] | None:
    span = finding.access.span
    return (span.line, span.column) if span is not None else None
