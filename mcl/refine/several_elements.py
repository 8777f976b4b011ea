"""several-elements: let each unit of a foreach compute `factor` elements instead of one
(coarsening; the paper's "more than one element of c per thread", section 5.1, gpu (v2),
and Table II's gpu row), the `elements-several-per-unit` finding's
`ComputeSeveralElements`.

The foreach over `count` units becomes one over `(count + F - 1) / F` units, and the
body of the innermost foreach around the work runs in a for-loop of F iterations, each
declaring the old loop variable with its element: iteration e of unit u takes element
`e * units + u`, so in every iteration consecutive units still take consecutive elements
(an access the units coalesced stays coalesced, paper 6.4). Elements past `count` (a
count that F does not divide) are skipped by a guard. The body is copied as written,
comments and all, one level deeper."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from mcl.diagnostics import Span
from mcl.feedback.findings import (
    ComputeSeveralElements,
    Finding,
    SeveralElementsProposal,
)
from mcl.mcpl import ast
from mcl.refine.answers import ANSWERS
from mcl.refine.edits import TextEdit, body_lines, indentation, span_text
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
from mcl.refine.refinement import Parameter, Proposal, Refinement, Refused, integer, node_at

# The factors a finding's proposals try; `mcl apply --list` keeps the one the time model
# estimates fastest (fewer units than the description keeps resident are not tried).
FACTORS = (2, 4, 8)


class SeveralElements(Refinement):
    name = "several-elements"
    summary = "let each unit of a foreach compute several elements, launching fewer units"
    parameters = (
        Parameter("line", "the line of the foreach whose units are merged"),
        Parameter("factor", "the elements per unit, 2 or more"),
    )
    preconditions = (
        "the foreach is in the kernel's own file and encloses a foreach-only path to the "
        "innermost foreach around its body's statements (executing statements stand only "
        "in the innermost foreach, paper 4.3): the for-loop goes into that one's body",
        "the foreach's variable is read nowhere but in the innermost foreach's body, "
        "which does not declare it again",
        "nothing inside the foreach writes a name its count reads: the count is "
        "computed again inside",
        "the innermost foreach's body holds no return (it would end the unit, not its "
        "element); where it holds a barrier, the foreach's units do not meet at it (its "
        "par_group is outside the space the barrier names: its variable, and so the "
        "guard, is the same for all the units that do), and each element's iteration "
        "ends at a barrier of each space the body's barriers name",
        "the innermost foreach and the foreach start their lines, the innermost's body "
        "is a block `{` at the end of its first line, `}` alone on the last",
    )
    answers = ANSWERS["several-elements"]

    def proposals(self, kernel: KernelAtLevel) -> list[Proposal | Refused]:
        out: list[Proposal | Refused] = []
        seen: set[int] = set()
        for finding in kernel.findings:
            if not isinstance(finding, SeveralElementsProposal) \
                    or finding.function != kernel.function:
                continue
            change = finding.change
            assert isinstance(change, ComputeSeveralElements)
            line = change.loop.span.line if change.loop.span is not None else None
            if line is None or line in seen:
                continue
            seen.add(line)
            for factor in _factors(change, kernel.values):
                try:
                    proposal = self._propose(kernel, {"line": str(line),
                                                      "factor": str(factor)}, finding)
                except Refused as refused:
                    out.append(Refused(refused.reason, line))
                    break
                # The factors are alternatives: the model's fastest is offered where
                # it is faster (fewer units may cost as much as they save: paper 5.1,
                # gpu (v2)); where the model states no time, none is.
                out.append(replace(proposal, group=f"{self.name}:line={line}"))
        return out

    def answer(self, kernel: KernelAtLevel, finding: Finding) -> Proposal:
        if not isinstance(finding, SeveralElementsProposal):
            raise Refused(f"{self.name} answers elements-several-per-unit findings, not "
                          f"{finding.code}")
        change = finding.change
        assert isinstance(change, ComputeSeveralElements)
        if change.loop.span is None:
            raise Refused("the finding names no foreach in the source")
        factors = _factors(change, kernel.values)
        factor = 4 if 4 in factors else factors[-1]
        return self._propose(kernel, {"line": str(change.loop.span.line),
                                      "factor": str(factor)}, finding)

    def propose(self, kernel: KernelAtLevel, args: Mapping[str, str]) -> Proposal:
        line = integer(args, "line")
        finding = next((f for f in kernel.findings
                        if isinstance(f, SeveralElementsProposal)
                        and f.function == kernel.function
                        and isinstance(f.change, ComputeSeveralElements)
                        and f.change.loop.span is not None
                        and f.change.loop.span.line == line), None)
        return self._propose(kernel, args, finding)

    def _propose(self, kernel: KernelAtLevel, args: Mapping[str, str],
                 finding: Finding | None) -> Proposal:
        line = integer(args, "line")
        factor = integer(args, "factor")
        if factor < 2:
            raise Refused(f"factor={factor}: at least 2 elements per unit")
        merged, inner, lines, barriers = merged_loop(kernel, line)
        edits = [new_header(kernel, merged, _units(kernel, merged.count, factor)[0])]
        edits.append(_new_body(kernel, merged, inner, lines, factor, barriers))
        return Proposal(self.name, (("line", str(line)), ("factor", str(factor))), line,
                        f"each unit of foreach {merged.var} computes {factor} elements in a "
                        f"for-loop; {factor} times fewer units", tuple(edits), finding)

    def still_there(self, proposal: Proposal, findings: Sequence[Finding]) -> Finding | None:
        answered = proposal.answers
        if not isinstance(answered, SeveralElementsProposal):
            return None
        array = answered.change.array if isinstance(answered.change,
                                                    ComputeSeveralElements) else None
        return next((f for f in findings if isinstance(f, SeveralElementsProposal)
                     and isinstance(f.change, ComputeSeveralElements)
                     and f.change.array == array), None)


def _factors(change: ComputeSeveralElements, values: Mapping[str, object]) -> list[int]:
    """The factors worth trying: those that leave at least the resident units, where
    the figures are numbers (the smallest factor otherwise)."""
    units, resident = change.units.numeric, change.resident.numeric
    if units is None or resident is None:
        return list(FACTORS)
    kept = [f for f in FACTORS if units / f >= resident]
    return kept or [FACTORS[0]]


def merged_loop(kernel: KernelAtLevel, line: int
                ) -> tuple[ast.Foreach, ast.Foreach, list[str], list[str]]:
    """The foreach at `line` whose units would take several elements, where the
    preconditions hold (`Refused` otherwise): it, the innermost foreach whose body the
    elements' loop goes into, that body's lines and the spaces of its barriers."""
    function = kernel.source_function
    merged = node_at(kernel, line, ast.Foreach)
    if merged is None or merged.span is None:
        raise Refused(f"no foreach starts at line {line} of {kernel.path.name}")
    var = merged.var
    inner = _innermost(merged)
    body = inner.body
    if not isinstance(body, ast.Block) or body.span is None or inner.span is None:
        raise Refused(f"the body of foreach {inner.var} is not a block")
    outside = [n for n in ast.walk(function) if isinstance(n, ast.Name)
               and n.name == var and not _below(body, n)]
    if outside:
        raise Refused(f"{var} is read outside the body of foreach {inner.var} (in a "
                      "count or between the foreach statements): the for-loop over "
                      "its elements can stand only in the innermost foreach")
    if var in written(body):
        raise Refused(f"the body of foreach {inner.var} declares or writes {var}")
    count = merged.count
    if count.span is None:
        raise Refused(f"the count of foreach {var} has no place in the source")
    if names_in(count) & written(merged.body):
        raise Refused(f"the body of foreach {var} writes "
                      f"{', '.join(sorted(names_in(count) & written(merged.body)))}, "
                      "which its count reads")
    barriers = list(dict.fromkeys(n.space for n in ast.walk(body)
                                  if isinstance(n, ast.Barrier)))
    hwd = kernel.library.get(function.hwd)
    if any(merged.group in {g.name for g in hwd.shared_by(space)} for space in barriers):
        raise Refused(f"the body of foreach {inner.var} holds a barrier, and the units "
                      f"of foreach {var} meet at it: the guard of the elements past "
                      f"the count would keep some of them from it")
    if any(isinstance(n, ast.Return) for n in ast.walk(body)):
        raise Refused(f"the body of foreach {inner.var} holds a return, which would "
                      "end the unit instead of one of its elements")
    lines = body_lines(kernel.text, inner.span, body.span, f"foreach {inner.var}")
    return merged, inner, lines, barriers


def _innermost(foreach: ast.Foreach) -> ast.Foreach:
    """The innermost foreach of the chain that starts at `foreach`: each one's body holds
    (besides declarations) exactly one foreach."""
    current = foreach
    while True:
        stmts = current.body.stmts if isinstance(current.body, ast.Block) else [current.body]
        nested = [s for s in stmts if isinstance(s, ast.Foreach)]
        if len(nested) != 1 or any(not isinstance(s, ast.Foreach | ast.Decl)
                                   for s in stmts):
            return current
        current = nested[0]


def _below(root: object, node: object) -> bool:
    return bool(path_to(root, node))


def count_text(kernel: KernelAtLevel, count: ast.Expr) -> str:
    """The count as written, in brackets unless it is a name or a number."""
    assert count.span is not None
    text = span_text(kernel.text, count.span)
    return text if re.fullmatch(r"\w+", text) else f"({text})"


def _units(kernel: KernelAtLevel, count: ast.Expr, factor: int) -> tuple[str, bool]:
    """The new count of units, and whether it covers exactly the old count (the count
    is a constant that `factor` divides: no guard needed)."""
    value = constant_int(count, constant_env(kernel.source.program.main))
    text = count_text(kernel, count)
    if value is not None and value % factor == 0:
        return f"{text} / {factor}", True
    return f"({text} + {factor - 1}) / {factor}", False


def new_header(kernel: KernelAtLevel, merged: ast.Foreach, units: str) -> TextEdit:
    """`foreach (int i in COUNT units)` -> `foreach (int i0 in UNITS units)`."""
    assert merged.span is not None and merged.count.span is not None
    head = TextEdit(merged.span.line, merged.span.column, merged.count.span.end_line,
                    merged.count.span.end_column, "")
    text = span_text(kernel.text, _span_of(head, merged.span.file))
    unit = unit_name(kernel, merged)
    new = re.sub(rf"(\bint\s+){re.escape(merged.var)}(\s+in\s+).*\Z",
                 lambda m: f"{m.group(1)}{unit}{m.group(2)}{units}", text, flags=re.S)
    return TextEdit(head.line, head.column, head.end_line, head.end_column, new)


def _span_of(edit: TextEdit, file: str) -> Span:
    return Span(file, edit.line, edit.column, edit.end_line, edit.end_column)


def unit_name(kernel: KernelAtLevel, merged: ast.Foreach) -> str:
    return fresh_name(f"{merged.var}0", every_name(kernel.source_function))


def _new_body(kernel: KernelAtLevel, merged: ast.Foreach, inner: ast.Foreach,
              lines: list[str], factor: int, barriers: list[str]) -> TextEdit:
    """The innermost foreach's body in a for-loop over the unit's elements, each
    declaring the old loop variable, guarded where the count may not divide. Where the
    body has barriers, each iteration ends at one of each space too: the next element
    overwrites what the units share only after every unit is done with this one (paper
    5.1, gpu (v2))."""
    assert inner.body.span is not None and inner.span is not None
    taken = every_name(kernel.source_function)
    unit = unit_name(kernel, merged)
    element = fresh_name(f"e{merged.var}", taken | {unit})
    units, exact = _units(kernel, merged.count, factor)
    indent, step = body_indent(kernel, inner, lines)
    var = merged.var
    out = [f"{indent}for (int {element} = 0; {element} < {factor}; {element}++) {{",
           f"{indent}{step}int {var} = {element} * {_bracketed(units)} + {unit};"]
    extra = step
    if not exact:
        out.append(f"{indent}{step}if ({var} < {count_text(kernel, merged.count)}) {{")
        extra = step * 2
    out += [(extra + x) if x.strip() else x for x in lines]
    if not exact:
        out.append(f"{indent}{step}}}")
    if barriers:
        out.append(f"{indent}{step}// every unit is done with this element before the next")
    out += [f"{indent}{step}barrier({space});" for space in barriers]
    out.append(f"{indent}}}")
    span = inner.body.span
    # replace the lines between the braces: from the end of `{`'s line to the start of
    # `}`'s line
    return TextEdit(span.line + 1, 1, span.end_line, 1, "\n".join(out) + "\n")


def body_indent(kernel: KernelAtLevel, inner: ast.Foreach, lines: list[str]
                ) -> tuple[str, str]:
    """The indentation of the innermost foreach's statements and one level of the
    file's indentation (the body's against its foreach's; two spaces where it shows
    none)."""
    assert inner.span is not None
    own = indentation(kernel.text, inner.span.line)
    first = [row for row in lines if row.strip()][:1]
    deeper = first[0][:len(first[0]) - len(first[0].lstrip())] if first else ""
    step = deeper[len(own):] if deeper.startswith(own) and len(deeper) > len(own) else "  "
    return own + step, step


def _bracketed(text: str) -> str:
    return text if re.fullmatch(r"\w+", text) else f"({text})"
